/**
 * The README walked as a new user would: its curl examples sent to a real `berth serve` (HTTPS,
 * its own CA, as `npm start` runs it), each answer checked against what the README says of it,
 * and `--help` of every command its table lists, naming the flags the table shows.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const run = promisify(execFile);

/** The shell commands of the README's fenced `sh` blocks, continuation lines joined. */
function shellCommands(readme: string): string[] {
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  return blocks.flatMap((block) =>
    block
      .replaceAll(/\\\n\s*/g, '')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== ''),
  );
}

type Patch = { op: string; path: string; value?: unknown }[];

describe('the README, walked', () => {
  let readme: string;
  let server: ChildProcess;
  let url: string;
  let dataDir: string;

  beforeAll(async () => {
    readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    dataDir = await mkdtemp(join(tmpdir(), 'berth-readme-'));
    server = spawn(
      process.execPath,
      [
        'bin/berth.mjs',
        'serve',
        '--port',
        '0',
        '--data-dir',
        dataDir,
        '--dynamodb-endpoint',
        inject('dynamodbEndpoint'),
        '--table',
        `readme-${Date.now()}`,
      ],
      { cwd: ROOT, env: { ...process.env, KUBECONFIG: '', HOME: dataDir }, stdio: 'pipe' },
    );
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      server.stdout?.on('data', (chunk) => {
        out += String(chunk);
        const found = /berth serving (https:\/\/\S+) /.exec(out);
        if (found?.[1]) resolve(found[1]);
      });
      server.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
    });
  });
  afterAll(() => {
    server.kill('SIGTERM');
  });

  /** Runs one of the README's curl commands against the test's server; its parsed output. */
  async function curl(file: string): Promise<{ allowed: boolean; patch: Patch }> {
    const command = shellCommands(readme).find(
      (line) => line.startsWith('curl') && line.includes(file),
    );
    if (!command) throw new Error(`README.md has no curl command for ${file}`);
    expect(command).toContain('https://127.0.0.1:8443/admission');
    const local = command
      .replace('https://127.0.0.1:8443', url)
      .replace('.berth/tls/ca.crt', join(dataDir, 'tls', 'ca.crt'));
    const { stdout } = await run('sh', ['-c', local], { cwd: ROOT });
    return JSON.parse(stdout);
  }

  it('admits examples/review-game-server.json with the ports, variables, annotations and label it names', async () => {
    const { allowed, patch } = await curl('examples/review-game-server.json');
    expect(allowed).toBe(true);
    const value = (path: string) => patch.find((op) => op.path === path)?.value;
    const ports = value('/spec/containers/0/ports') as {
      name: string;
      protocol: string;
      hostPort?: number;
    }[];
    const byName = Object.fromEntries(ports.map((port) => [port.name, port]));
    expect(byName.game?.protocol).toBe('UDP');
    expect(byName['query-tcp']?.hostPort).toBe(byName['query-udp']?.hostPort);
    expect(byName.rcon?.hostPort).toBeUndefined();
    const env = JSON.stringify(patch.filter((op) => op.path.includes('/env')));
    expect(env).toContain('BERTH_PORT_GAME');
    expect(env).toContain('BERTH_PORT_QUERY');
    // Keys in a JSON Patch path escape "/" as "~1".
    const metadata = JSON.stringify(
      patch.filter((op) => op.path.startsWith('/metadata')),
    ).replaceAll('~1', '/');
    for (const claim of [
      'berth.dev/host-ports',
      'berth.dev/allocation-id',
      'berth.dev/game-server',
      'karpenter.sh/do-not-disrupt',
      'cluster-autoscaler.kubernetes.io/safe-to-evict',
    ]) {
      expect(metadata).toContain(claim);
    }
    const annotation = patch.find(
      (op) => op.path === '/metadata/annotations/berth.dev~1host-ports',
    );
    const hostPorts = JSON.parse(String(annotation?.value ?? '{}'));
    expect(hostPorts).toEqual({
      game: byName.game?.hostPort,
      query: byName['query-tcp']?.hostPort,
    });
  });

  it('admits examples/review-game-service.json with a cluster IP from 10.100.0.0/16, a node port and an allocation id', async () => {
    const { allowed, patch } = await curl('examples/review-game-service.json');
    expect(allowed).toBe(true);
    const value = (path: string) => patch.find((op) => op.path === path)?.value;
    expect(value('/spec/clusterIP')).toMatch(/^10\.100\./);
    expect(value('/spec/ports/0/nodePort')).toBeGreaterThanOrEqual(30000);
    expect(JSON.stringify(value('/metadata/annotations'))).toContain('berth.dev/allocation-id');
  });

  it("answers --help for every command of the README's table, with the flags it shows", async () => {
    const table = readme.slice(readme.indexOf('## Commands'), readme.indexOf('## Deploying'));
    const rows = table.split('\n').filter((line) => line.startsWith('| `npx berth'));
    expect(rows.length).toBeGreaterThan(4);
    for (const row of rows) {
      const cell = row.split(' | ')[0] ?? '';
      // Each code span is a command line: `npx berth NAME …`, or `NAME …` after the first.
      const spans = [...cell.matchAll(/`([^`]+)`/g)].map((m) =>
        (m[1] ?? '').replace(/^npx berth ?/, ''),
      );
      for (const span of spans) {
        const command = /^[a-z-]+/.exec(span)?.[0] ?? '';
        const flags = [...span.matchAll(/--[a-z-]+/g)].map((m) => m[0]);
        const args = command === '' ? ['--help'] : [command, '--help'];
        const { stdout } = await run(process.execPath, ['bin/berth.mjs', ...args], { cwd: ROOT });
        for (const flag of flags) {
          if (flag !== '--help' && flag !== '--version')
            expect(stdout, `${command} ${flag}`).toContain(flag);
        }
      }
    }
    const { stdout } = await run(process.execPath, ['bin/berth.mjs', '--version'], { cwd: ROOT });
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('lists, under "When something goes wrong", a bypass the manifests command takes', async () => {
    const bypass = shellCommands(readme).filter((line) => line.includes('--fail-open'));
    expect(bypass.length).toBeGreaterThan(0);
    const { stdout } = await run(process.execPath, ['bin/berth.mjs', 'manifests', '--help'], {
      cwd: ROOT,
    });
    expect(stdout).toContain('--fail-open');
    expect(stdout).toContain('--delete');
  });
});

/** Errors that say what failed and the fix in one line, with the exit status the README gives. */
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { captureOutput } from '../support/capture.js';

afterEach(() => {
  vi.restoreAllMocks();
});

async function listening(): Promise<{ server: Server; port: number }> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return { server, port: address.port };
}

describe('berth, when the environment refuses', () => {
  it('sim on a port in use exits 3 saying who listens there by default and how to pick another', async () => {
    const { server, port } = await listening();
    try {
      const io = captureOutput();
      expect(await main(['sim', '--port', String(port), '--hours', '0.1'])).toBe(3);
      expect(io.err()).toContain(`127.0.0.1:${port} is in use`);
      expect(io.err()).toContain('pass --port N (--port 0 picks a free port');
      expect(io.err().trim().split('\n')).toHaveLength(1);
    } finally {
      server.close();
    }
  });

  it('manifests --url without a path adds /admission and says so; another path is kept with a warning', async () => {
    const bare = captureOutput();
    expect(await main(['manifests', '--url', 'https://berth.example.com', '--json'])).toBe(0);
    expect(bare.err()).toContain('using https://berth.example.com/admission');
    expect(bare.out()).toContain('"url": "https://berth.example.com/admission"');
    vi.restoreAllMocks();
    const odd = captureOutput();
    expect(await main(['manifests', '--url', 'https://berth.example.com/hook', '--json'])).toBe(0);
    expect(odd.err()).toContain(
      'warning: --url https://berth.example.com/hook does not end in /admission',
    );
  });

  it('manifests --fail-open services is refused (2): Services never fail open', async () => {
    const io = captureOutput();
    expect(
      await main(['manifests', '--url', 'https://b.example/admission', '--fail-open', 'services']),
    ).toBe(2);
    expect(io.err()).toContain('only pods can');
  });

  it('a DynamoDB endpoint that takes connections and never answers ends the command with 3, naming it', async () => {
    const { server, port } = await listening();
    try {
      const io = captureOutput();
      const endpoint = `http://127.0.0.1:${port}`;
      expect(await main(['status', '--dynamodb-endpoint', endpoint])).toBe(3);
      expect(io.err()).toContain(`DynamoDB at ${endpoint} did not answer (no answer in time)`);
    } finally {
      server.close();
    }
  }, 180_000);

  it('without Java, a command that needs DynamoDB Local exits 3 saying how to install it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'berth-nojava-'));
    const child = spawn(process.execPath, ['bin/berth.mjs', 'status', '--data-dir', dataDir], {
      env: { ...process.env, PATH: '/nonexistent' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr?.on('data', (chunk) => {
      err += String(chunk);
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(3);
    expect(err.trim()).toBe(
      'berth: cannot start DynamoDB Local: no `java` on PATH; install Java 17 (apt-get install openjdk-17-jre-headless, or brew install openjdk@17), or pass --dynamodb-endpoint URL',
    );
  });

  it('serve with a kubeconfig whose API server does not answer exits 3 at start, naming the server and context', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-noapi-'));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: games, cluster: { server: "https://127.0.0.1:1" } }]',
        'users: [{ name: admin, user: { token: t } }]',
        'contexts: [{ name: games-admin, context: { cluster: games, user: admin } }]',
        'current-context: games-admin',
        '',
      ].join('\n'),
    );
    const io = captureOutput();
    expect(
      await main(['serve', '--http', '--port', '0', '--kubeconfig', kubeconfig, '--data-dir', dir]),
    ).toBe(3);
    expect(io.err().trim().split('\n')).toEqual([
      'berth: kubernetes list nodes failed: no response: fetch failed (API server https://127.0.0.1:1, context games-admin): check that it answers (kubectl --context games-admin get --raw /readyz), or pass --kubeconfig / --context',
    ]);
  });

  it('serve --passes without an AWS Region exits 3 before starting, saying how to give one', async () => {
    const api = await startKubeApiServer({ token: 't' });
    try {
      const dir = await mkdtemp(join(tmpdir(), 'berth-noregion-'));
      const kubeconfig = join(dir, 'kubeconfig');
      await writeFile(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          `clusters: [{ name: games, cluster: { server: "${api.url}" } }]`,
          'users: [{ name: admin, user: { token: t } }]',
          'contexts: [{ name: games-admin, context: { cluster: games, user: admin } }]',
          'current-context: games-admin',
          '',
        ].join('\n'),
      );
      // No Region anywhere the SDK looks: the environment, the profile, ~/.aws.
      for (const name of ['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE']) {
        vi.stubEnv(name, undefined);
      }
      vi.stubEnv('HOME', dir);
      vi.stubEnv('AWS_CONFIG_FILE', join(dir, 'none'));
      const io = captureOutput();
      expect(
        await main(
          [
            'serve',
            '--http',
            '--port',
            '0',
            '--passes',
            '--kubeconfig',
            kubeconfig,
            '--data-dir',
            dir,
          ],
          {},
        ),
      ).toBe(3);
      expect(io.err().trim().split('\n')).toEqual([
        expect.stringMatching(
          /^berth: --passes: the ENI pass calls EC2, which needs an AWS Region, and none was found \(\w+\): set AWS_REGION, pass --region, or use an AWS profile that names a Region; or run without AWS \(eni\.intervalSeconds: 0\)$/,
        ),
      ]);
    } finally {
      vi.unstubAllEnvs();
      await api.stop();
    }
  });

  it('prints its version', async () => {
    const io = captureOutput();
    expect(await main(['--version'])).toBe(0);
    expect(io.out().trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});

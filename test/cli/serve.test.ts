import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type KubeApiServer, startKubeApiServer } from '../fakes/kube-api-server.js';

const TOKEN = 'serve-token';

/** Starts `berth serve` as a user would, and collects its output until `until` appears. */
async function serve(
  args: readonly string[],
  env: Record<string, string>,
  until: RegExp,
): Promise<{ child: ChildProcess; out: () => string; err: () => string }> {
  const child = spawn(process.execPath, ['bin/berth.mjs', 'serve', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk) => {
    err += String(chunk);
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      out += String(chunk);
      if (until.test(out)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { child, out: () => out, err: () => err };
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

describe('berth serve', () => {
  let fake: KubeApiServer;
  let kubeconfig: string;
  let home: string;
  const store = () => [
    '--dynamodb-endpoint',
    inject('dynamodbEndpoint'),
    '--table',
    `serve-${Date.now()}`,
  ];

  beforeAll(async () => {
    fake = await startKubeApiServer({ token: TOKEN });
    home = await mkdtemp(join(tmpdir(), 'berth-serve-'));
    kubeconfig = join(home, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: games, cluster: { server: "URL" } }]'.replace('URL', fake.url),
        `users: [{ name: admin, user: { token: ${TOKEN} } }]`,
        'contexts: [{ name: games-admin, context: { cluster: games, user: admin } }]',
        'current-context: games-admin',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await fake.stop();
  });

  it('reads the cluster KUBECONFIG names, says which, keeps the passes off unless asked, and stops on SIGTERM', async () => {
    const run = await serve(
      ['--http', '--port', '0', '--data-dir', join(home, 'data'), ...store()],
      { KUBECONFIG: kubeconfig, HOME: home },
      /settle: .*\n/,
    );
    expect(run.out()).toContain(`cluster:           context games-admin, server ${fake.url}`);
    expect(run.out()).toMatch(/passes:\s+off \(berth serve --passes/);
    expect(run.out()).toMatch(/settle:\s+values a Service gives back are freed once the cluster/);
    const exited = exitOf(run.child);
    run.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('runs the passes only with --passes, and refuses --passes without a cluster (exit 2)', async () => {
    const run = await serve(
      ['--http', '--port', '0', '--passes', '--data-dir', join(home, 'data2'), ...store()],
      { KUBECONFIG: kubeconfig, HOME: home },
      /settle: .*\n/,
    );
    expect(run.out()).toMatch(/passes:\s+repair, scale and ENI on timers/);
    const exited = exitOf(run.child);
    run.child.kill('SIGTERM');
    expect(await exited).toBe(0);

    const alone = spawn(
      process.execPath,
      ['bin/berth.mjs', 'serve', '--http', '--passes', ...store()],
      {
        env: { ...process.env, KUBECONFIG: '', HOME: home },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let err = '';
    alone.stderr?.on('data', (chunk) => {
      err += String(chunk);
    });
    expect(await exitOf(alone)).toBe(2);
    expect(err).toMatch(/--passes needs a cluster/);
  });
});

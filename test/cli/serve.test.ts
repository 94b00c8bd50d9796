import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { review } from '../../sim/reviews.js';
import { admittedGameServer } from '../hostports/support.js';
import { captureOutput } from '../support/capture.js';

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

  it('exits 3 on a port in use, saying how to fix it, and stops the DynamoDB Local it started', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    const dataDir = await mkdtemp(join(tmpdir(), 'berth-serve-busy-'));
    const child = spawn(
      process.execPath,
      ['bin/berth.mjs', 'serve', '--http', '--port', String(port), '--data-dir', dataDir],
      { env: { ...process.env, KUBECONFIG: '', HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let err = '';
    child.stderr?.on('data', (chunk) => {
      err += String(chunk);
    });
    try {
      // Exiting at all is the point: DynamoDB Local left running would keep the command alive.
      expect(await exitOf(child)).toBe(3);
      expect(err).toContain(
        `127.0.0.1:${port} is in use: stop what listens there, or pass --port N`,
      );
    } finally {
      child.kill();
      taken.close();
    }
  }, 60_000);

  it('runs the passes only with --passes, and refuses --passes without a cluster (exit 3, as the CLI passes)', async () => {
    const run = await serve(
      // The ENI pass needs a Region (serve --passes refuses to start without one).
      [
        '--http',
        '--port',
        '0',
        '--passes',
        '--region',
        'eu-west-1',
        '--data-dir',
        join(home, 'data2'),
        ...store(),
      ],
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
    expect(await exitOf(alone)).toBe(3);
    expect(err).toMatch(/--passes needs a cluster/);
  });
});

describe('berth serve without a cluster', () => {
  it('records who a Service is at its CREATE, so status --holder IP names it as NAMESPACE/NAME does', async () => {
    const home = await mkdtemp(join(tmpdir(), 'berth-serve-holder-'));
    const table = `serve-holder-${Date.now()}`;
    const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', table];
    const run = await serve(
      ['--http', '--port', '0', '--data-dir', join(home, 'data'), ...store],
      { KUBECONFIG: '', HOME: home },
      /DynamoDB: .*\n/,
    );
    try {
      const url = /berth serving (\S+)/.exec(run.out())?.[1] ?? '';
      const object = {
        metadata: { name: 'lobby', namespace: 'games' },
        spec: {
          type: 'NodePort',
          clusterIP: '10.100.0.60',
          ports: [{ port: 80, nodePort: 30060 }],
        },
      };
      const answer = await fetch(`${url}/admission`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          review({
            resource: 'services',
            operation: 'CREATE',
            namespace: 'games',
            name: 'lobby',
            object,
          }),
        ),
      });
      expect(((await answer.json()) as { response: { allowed: boolean } }).response.allowed).toBe(
        true,
      );
      for (const value of ['10.100.0.60', '30060']) {
        const io = captureOutput();
        expect(await main(['status', '--holder', value, ...store], {})).toBe(0);
        expect(io.out()).toMatch(
          new RegExp(`^${value.replaceAll('.', '\\.')} .* Service games/lobby `, 'm'),
        );
        vi.restoreAllMocks();
      }
      // The web view asks the server the same.
      const view = (await (await fetch(`${url}/ui/holders?value=10.100.0.60`)).json()) as {
        holders: { holder: unknown }[];
      };
      expect(view.holders.map((h) => h.holder)).toEqual([
        { kind: 'Service', namespace: 'games', name: 'lobby' },
      ]);
      // A value outside every range is the asker's mistake (400), naming the ranges.
      const outside = await fetch(`${url}/ui/holders?value=10.200.0.1`);
      expect(outside.status).toBe(400);
      expect(((await outside.json()) as { error: string }).error).toContain(
        '10.200.0.1 is outside every configured cluster IP range (serviceCIDRs: 10.100.0.0/16;',
      );
    } finally {
      const exited = exitOf(run.child);
      run.child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });
});

describe('berth serve --passes without AWS', () => {
  let fake: KubeApiServer;
  let home: string;
  let kubeconfig: string;
  // No Region anywhere the SDK looks: not in the environment, not in a profile.
  const noAws = () => ({
    KUBECONFIG: kubeconfig,
    HOME: home,
    AWS_REGION: '',
    AWS_DEFAULT_REGION: '',
    AWS_PROFILE: '',
    AWS_CONFIG_FILE: join(home, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(home, 'no-aws-credentials'),
  });
  const config = async (name: string, body: unknown) => {
    const file = join(home, name);
    await writeFile(file, JSON.stringify(body));
    return file;
  };
  const refused = async (file: string) => {
    const child = spawn(
      process.execPath,
      ['bin/berth.mjs', 'serve', '--http', '--port', '0', '--passes', '--config', file],
      { env: { ...process.env, ...noAws() }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    child.stderr?.on('data', (chunk) => {
      err += String(chunk);
    });
    return { code: await exitOf(child), err };
  };

  beforeAll(async () => {
    fake = await startKubeApiServer({ token: TOKEN });
    home = await mkdtemp(join(tmpdir(), 'berth-serve-noaws-'));
    kubeconfig = join(home, 'kubeconfig');
    await writeFile(kubeconfig, fake.kubeConfig(TOKEN).exportConfig());
  });
  afterAll(async () => {
    await fake.stop();
  });

  it('runs the repair and scale passes against a cluster that is not in AWS once the ENI pass is off, and says which pass is off', async () => {
    const file = await config('kind.json', { eni: { intervalSeconds: 0 } });
    const run = await serve(
      [
        '--http',
        '--port',
        '0',
        '--passes',
        '--config',
        file,
        '--data-dir',
        join(home, 'data'),
        '--dynamodb-endpoint',
        inject('dynamodbEndpoint'),
        '--table',
        `serve-noaws-${Date.now()}`,
      ],
      noAws(),
      /settle: .*\n/,
    );
    expect(run.out()).toMatch(
      /passes:\s+repair and scale on timers \(--passes\): they change this cluster; ENI off \(eni\.intervalSeconds is 0\)\n/,
    );
    const exited = exitOf(run.child);
    run.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses (exit 3) a pass that calls AWS without a Region, naming the pass and how to turn it off', async () => {
    const eni = await refused(await config('default.json', {}));
    expect(eni.code).toBe(3);
    expect(eni.err).toContain('--passes: the ENI pass calls EC2, which needs an AWS Region');
    expect(eni.err).toContain('or run without AWS (eni.intervalSeconds: 0)');
    expect(eni.err.trim().split('\n')).toHaveLength(1);
    const asg = await refused(
      await config('asg.json', {
        eni: { intervalSeconds: 0 },
        scale: { nodePool: { type: 'asg', name: 'games' } },
      }),
    );
    expect(asg.code).toBe(3);
    expect(asg.err).toContain('the scale pass calls Auto Scaling (node pool asg games)');
    expect(asg.err).not.toContain('ENI');
  });
});

describe('berth serve with a section per cluster', () => {
  const fakes: Record<string, KubeApiServer> = {};
  let home: string;
  let run: Awaited<ReturnType<typeof serve>>;
  let url: string;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'berth-serve-clusters-'));
    // Each cluster's apiserver knows node-1 by another address.
    for (const [cluster, address] of [
      ['games-a', '203.0.113.1'],
      ['games-b', '203.0.113.2'],
    ] as const) {
      const fake = await startKubeApiServer({ token: TOKEN });
      fake.addNode({
        metadata: { name: 'node-1' },
        status: { addresses: [{ type: 'ExternalIP', address }] },
      });
      fake.addPod(admittedGameServer('gs'));
      fakes[cluster] = fake;
    }
    const kubeconfig = join(home, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{ name: a, cluster: { server: "${fakes['games-a']?.url}" } }, { name: b, cluster: { server: "${fakes['games-b']?.url}" } }]`,
        `users: [{ name: admin, user: { token: ${TOKEN} } }]`,
        // games-a is read through a context named like it; games-b through --context.
        'contexts: [{ name: games-a, context: { cluster: a, user: admin } }, { name: kind-b, context: { cluster: b, user: admin } }]',
        '',
      ].join('\n'),
    );
    const config = join(home, 'berth.json');
    await writeFile(config, JSON.stringify({ clusters: { 'games-a': {}, 'games-b': {} } }));
    run = await serve(
      [
        '--http',
        '--port',
        '0',
        '--config',
        config,
        '--context',
        'games-b=kind-b',
        '--data-dir',
        join(home, 'data'),
        '--dynamodb-endpoint',
        inject('dynamodbEndpoint'),
        '--table',
        `serve-clusters-${Date.now()}`,
      ],
      { KUBECONFIG: kubeconfig, HOME: home },
      /DynamoDB: .*\n/,
    );
    url = /berth serving (\S+)/.exec(run.out())?.[1] ?? '';
  });

  afterAll(async () => {
    run.child.kill('SIGTERM');
    await exitOf(run.child);
    for (const fake of Object.values(fakes)) await fake.stop();
  });

  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as { response: { patch: string } },
    };
  };

  it('names every cluster with its own context and routes', () => {
    expect(run.out()).toContain('for clusters "games-a", "games-b"');
    expect(run.out()).toContain(`admission webhook: POST ${url}/clusters/games-a/admission`);
    expect(run.out()).toContain(`context games-a, server ${fakes['games-a']?.url}`);
    expect(run.out()).toContain(`context kind-b, server ${fakes['games-b']?.url}`);
  });

  it("reads each cluster's own apiserver for a binding", async () => {
    const binding = review({
      resource: 'pods',
      subResource: 'binding',
      operation: 'CREATE',
      name: 'gs',
      object: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'gs', namespace: 'default' },
        target: { apiVersion: 'v1', kind: 'Node', name: 'node-1' },
      },
    });
    for (const [cluster, address] of [
      ['games-a', '203.0.113.1'],
      ['games-b', '203.0.113.2'],
    ]) {
      const answer = await post(`/clusters/${cluster}/admission`, binding);
      expect(answer.status).toBe(200);
      const patch = Buffer.from(answer.body.response.patch, 'base64').toString();
      expect(patch).toContain(address);
    }
  });

  it('answers a path that names no cluster with the clusters it serves, and a plain status for all', async () => {
    const response = await post('/admission', {});
    expect(response.status).toBe(404);
    expect((response.body as unknown as { error: string }).error).toMatch(
      /names no cluster: prefix it with one of \/clusters\/games-a, \/clusters\/games-b/,
    );
    const one = (await (await fetch(`${url}/clusters/games-b/v1/status`)).json()) as {
      cluster: string;
    };
    expect(one.cluster).toBe('games-b');
    const all = (await (await fetch(`${url}/v1/status`)).json()) as {
      clusters: { cluster: string }[];
      ranges: { cluster: string; kind: string }[];
    };
    expect(all.clusters.map((report) => report.cluster)).toEqual(['games-a', 'games-b']);
    expect(new Set(all.ranges.map((range) => range.cluster))).toEqual(
      new Set(['games-a', 'games-b']),
    );
    expect(all.ranges.filter((range) => range.kind === 'hostPort')).toHaveLength(2);
  });
});

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPlugin } from '../../cni/build.js';
import { cniEnv, networkConfig, type PluginRun, runPlugin } from '../../sim/cni-runtime.js';
import { NODE, type NodeIpServer, startNodeIpServer } from '../../sim/node-ip-server.js';

let dir: string;
let plugin: string;
let server: NodeIpServer;
let lockFile: string;
let releasedDir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-cni-'));
  plugin = await installPlugin(join(dir, 'bin'));
  lockFile = join(dir, 'lock');
  releasedDir = join(dir, 'released');
  server = await startNodeIpServer();
}, 120_000);

afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

// The host's routing is the e2e script's (network namespaces); here the API paths are exercised.
const ipam = () => ({ endpoint: server.url, node: NODE, sourceRouting: false });
const run = (command: string, pod: Pod, stdin: string) =>
  runPlugin(plugin, cniEnv(command, pod, node()), stdin);
/** The node's files: its routing lock and its records of completed DELs. */
const node = () => ({ BERTH_CNI_LOCK: lockFile, BERTH_CNI_RELEASED: releasedDir });

interface Pod {
  namespace: string;
  name: string;
  containerId: string;
}
let serial = 0;
const newPod = (): Pod => ({
  namespace: 'games',
  name: `gs-${++serial}`,
  containerId: `sb-${serial}`,
});

/** The address an ADD's result gives the pod, without its prefix length. */
function addressOf(run: PluginRun): string {
  const ips = (run.json?.ips ?? []) as { address?: string }[];
  return ips[0]?.address?.split('/')[0] ?? '';
}

/** Who berth's store says holds `ip`. */
async function holderOf(ip: string): Promise<string | undefined> {
  const state = await server.world.store.loadNode(NODE);
  const record = state.ips.find((r) => r.ip === ip);
  return record?.state === 'assigned' ? `${record.pod} ${record.containerId}` : undefined;
}

describe('berth-cni, driven as the runtime drives it', () => {
  it('starts with no program but the runtime: its wrapper runs even with an empty PATH', async () => {
    const version = await runPlugin(plugin, { CNI_COMMAND: 'VERSION', PATH: '' }, '');
    expect(version).toMatchObject({ code: 0, stderr: '' });
    expect(version.json?.cniVersion).toBe('1.0.0');
  });

  it('reads a configuration the runtime writes in pieces, losing none of it', async () => {
    const child = spawn(plugin, [], {
      env: { PATH: process.env.PATH, CNI_COMMAND: 'VERSION' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stdin.write('{"cniVer');
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.stdin.end('sion":"0.4.0"}');
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ cniVersion: '0.4.0' });
  });

  it('answers VERSION with the versions it speaks, whatever configuration comes with it', async () => {
    for (const [stdin, answered] of [
      ['{"cniVersion":"0.4.0"}', '0.4.0'],
      ['', '1.0.0'],
      ['{"cniVersion":"0.2.0"}', '1.0.0'],
    ] as const) {
      const version = await runPlugin(plugin, { CNI_COMMAND: 'VERSION' }, stdin);
      expect(version.code).toBe(0);
      expect(version.json).toEqual({
        cniVersion: answered,
        supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'],
      });
    }
  });

  it('ADD gives the pod an address from the pool with its prefix, gateway and a default route; a repeated ADD the same one', async () => {
    const pod = newPod();
    const added = await run('ADD', pod, networkConfig(ipam()));
    expect(added.code, added.stdout).toBe(0);
    expect(added.json).toEqual({
      cniVersion: '1.0.0',
      ips: [{ address: expect.stringMatching(/^10\.0\.0\.\d+\/24$/), gateway: '10.0.0.3' }],
      routes: [{ dst: '0.0.0.0/0' }],
      dns: {},
    });
    const ip = addressOf(added);
    expect(await holderOf(ip)).toBe(`games/${pod.name} ${pod.containerId}`);
    const again = await run('ADD', pod, networkConfig(ipam()));
    expect(again.json).toEqual(added.json);
  });

  it('writes the result in the configuration’s CNI version (0.4.0 carries the IP family)', async () => {
    const added = await run('ADD', newPod(), networkConfig(ipam(), { cniVersion: '0.4.0' }));
    expect(added.code).toBe(0);
    expect(added.json).toMatchObject({
      cniVersion: '0.4.0',
      ips: [{ version: '4', gateway: '10.0.0.3' }],
    });
  });

  it('CHECK passes for the address berth holds for the container and fails for another', async () => {
    const pod = newPod();
    const added = await run('ADD', pod, networkConfig(ipam()));
    const prevResult = added.json;
    const check = await run('CHECK', pod, networkConfig(ipam(), { prevResult }));
    expect(check).toMatchObject({ code: 0, stdout: '' });
    const wrong = { ...prevResult, ips: [{ address: '10.0.0.250/24', gateway: '10.0.0.3' }] };
    const mismatch = await run('CHECK', pod, networkConfig(ipam(), { prevResult: wrong }));
    expect(mismatch.code).toBe(1);
    expect(mismatch.json).toMatchObject({ code: 102, msg: expect.stringContaining('10.0.0.250') });
    const stranger = await run('CHECK', newPod(), networkConfig(ipam(), { prevResult }));
    expect(stranger.json).toMatchObject({ code: 102, msg: expect.stringContaining('no address') });
  });

  it('DEL frees the address keyed by its holder, with or without the cached result, and a repeated DEL or one never added succeeds', async () => {
    const pod = newPod();
    const added = await run('ADD', pod, networkConfig(ipam()));
    const ip = addressOf(added);
    const del = await run('DEL', pod, networkConfig(ipam(), { prevResult: added.json }));
    expect(del).toMatchObject({ code: 0, stdout: '' });
    expect(await holderOf(ip)).toBeUndefined();
    expect((await run('DEL', pod, networkConfig(ipam(), { prevResult: added.json }))).code).toBe(0);
    expect((await run('DEL', newPod(), networkConfig(ipam()))).code).toBe(0);
    // Nothing was ever set up for a sandbox with no pod named, nor for a holder berth refuses.
    const anonymous = { ...cniEnv('DEL', newPod()), CNI_ARGS: '', ...node() };
    expect((await runPlugin(plugin, anonymous, networkConfig(ipam()))).code).toBe(0);
    const refused = { ...newPod(), name: 'Not_A_Pod', containerId: '-bad/id' };
    expect((await run('DEL', refused, networkConfig(ipam()))).code).toBe(0);

    // The runtime lost its cache: the plugin asks berth which address the holder has.
    const other = newPod();
    const second = await run('ADD', other, networkConfig(ipam()));
    const secondIp = addressOf(second);
    expect((await run('DEL', other, networkConfig(ipam()))).code).toBe(0);
    expect(await holderOf(secondIp)).toBeUndefined();
  });

  it("kubelet's teardowns after a completed DEL, which come with no cached result, never reach berth", async () => {
    const pod = newPod();
    const added = await run('ADD', pod, networkConfig(ipam()));
    expect((await run('DEL', pod, networkConfig(ipam(), { prevResult: added.json }))).code).toBe(0);
    const before = server.requests.length;
    for (let teardown = 0; teardown < 2; teardown++) {
      expect(await run('DEL', pod, networkConfig(ipam()))).toMatchObject({ code: 0, stdout: '' });
    }
    expect(server.requests.slice(before)).toEqual([]);
    // The same sandbox set up again is asked about again: its record went with the ADD.
    const again = await run('ADD', pod, networkConfig(ipam()));
    const ip = addressOf(again);
    expect((await run('DEL', pod, networkConfig(ipam()))).code).toBe(0);
    expect(server.requests.slice(before).filter((r) => r.startsWith('GET'))).toHaveLength(1);
    expect(await holderOf(ip)).toBeUndefined();
  });

  it('a DEL replayed after the address went to another pod succeeds and changes nothing', async () => {
    const first = newPod();
    const added = await run('ADD', first, networkConfig(ipam()));
    const ip = addressOf(added);
    expect((await run('DEL', first, networkConfig(ipam(), { prevResult: added.json }))).code).toBe(
      0,
    );
    // The pool hands out the most recently rested address first: the next pod gets the same one.
    const next = newPod();
    const taken = await run('ADD', next, networkConfig(ipam()));
    expect(addressOf(taken)).toBe(ip);
    const late = await run('DEL', first, networkConfig(ipam(), { prevResult: added.json }));
    expect(late).toMatchObject({ code: 0, stdout: '' });
    expect(await holderOf(ip)).toBe(`games/${next.name} ${next.containerId}`);
  });

  it('answers every mistake with a CNI error result naming it, never a stack trace', async () => {
    const pod = newPod();
    const cases: [Record<string, string>, string, number, RegExp][] = [
      [{ CNI_COMMAND: 'ADD' }, networkConfig(ipam()), 4, /CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME/],
      [{ CNI_COMMAND: 'BOOT' }, networkConfig(ipam()), 4, /CNI_COMMAND: "BOOT"/],
      [cniEnv('ADD', pod), '{not json', 6, /not JSON/],
      [cniEnv('ADD', pod), networkConfig(ipam(), { cniVersion: '9.9.9' }), 1, /cniVersion/],
      [cniEnv('ADD', pod), networkConfig({ node: NODE }), 7, /ipam\.endpoint: required/],
      [cniEnv('ADD', pod), networkConfig({ ...ipam(), auth: 'kerberos' }), 7, /ipam\.auth/],
      [
        { ...cniEnv('ADD', pod), CNI_ARGS: 'IgnoreUnknown=1' },
        networkConfig(ipam()),
        4,
        /K8S_POD_NAME/,
      ],
      [cniEnv('ADD', pod), networkConfig({ ...ipam(), node: 'ghost' }), 100, /HTTP 404.*ghost/],
      [
        cniEnv('ADD', { ...pod, containerId: '-bad/id' }),
        networkConfig(ipam()),
        4,
        /^CNI_CONTAINERID: "-bad\/id" must start with a letter or digit/,
      ],
    ];
    for (const [env, stdin, code, msg] of cases) {
      const failed = await runPlugin(plugin, { ...env, ...node() }, stdin);
      expect(failed.code, failed.stdout).toBe(1);
      expect(failed.json).toMatchObject({ code, msg: expect.stringMatching(msg) });
      expect(failed.stdout + failed.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('fails an ADD with "try again later" when berth is down or silent, within its timeout, holding nothing', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const down = await run(
        'ADD',
        newPod(),
        networkConfig({ ...ipam(), endpoint: 'http://127.0.0.1:9' }),
      );
      expect(down.json).toMatchObject({ code: 11, msg: expect.stringContaining('did not answer') });
      const pod = newPod();
      const hung = await run(
        'ADD',
        pod,
        networkConfig({ ...ipam(), endpoint: `http://127.0.0.1:${port}`, timeoutSeconds: 1 }),
      );
      expect(hung.json).toMatchObject({ code: 11, msg: expect.stringContaining('within 1 s') });
      const state = await server.world.store.loadNode(NODE);
      expect(state.ips.some((ip) => ip.pod === `games/${pod.name}`)).toBe(false);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
  it('refuses netconf numbers out of range and odd values as error 7, never a crash or [object Object]', async () => {
    const pod = newPod();
    for (const [ipamExtra, msg] of [
      [
        { timeoutSeconds: 5_000_000 },
        /ipam\.timeoutSeconds: must be a whole number from 1 to 110, was 5000000/,
      ],
      [{ timeoutSeconds: 1e308 }, /ipam\.timeoutSeconds/],
      [{ timeoutSeconds: -1 }, /ipam\.timeoutSeconds/],
      [{ timeoutSeconds: '10' }, /ipam\.timeoutSeconds/],
      [{ routeTableBase: 2 ** 53 }, /ipam\.routeTableBase/],
      [{ auth: { kind: 'sigv4' } }, /ipam\.auth: \{"kind":"sigv4"\} must be/],
      [{ podGateway: 'not-an-ip' }, /ipam\.podGateway: "not-an-ip" is not an IPv4 address/],
    ] as const) {
      const failed = await run('ADD', pod, networkConfig({ ...ipam(), ...ipamExtra }));
      expect(failed.code, failed.stdout + failed.stderr).toBe(1);
      expect(failed.json).toMatchObject({ code: 7, msg: expect.stringMatching(msg) });
      expect(failed.stdout + failed.stderr).not.toMatch(/\[object Object\]|TypeError|\n\s+at /);
    }
  });

  it('refuses an answer of the node IP API that is no usable address, configuring nothing and printing no [object Object]', async () => {
    let answer: { status: number; body: unknown } = { status: 200, body: {} };
    const liar = createServer((_request, response) => {
      response.writeHead(answer.status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    const address = liar.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const endpoint = `http://127.0.0.1:${port}`;
    const sound = {
      ip: '10.0.0.17',
      eniId: 'eni-1',
      subnetCidr: '10.0.0.0/24',
      gateway: '10.0.0.1',
    };
    try {
      for (const [given, code, msg] of [
        [{ status: 200, body: { ...sound, ip: 'not-an-ip' } }, 999, /not-an-ip/],
        [{ status: 200, body: { ...sound, ip: 'fd00::5' } }, 999, /not IPv4/],
        [{ status: 200, body: { ...sound, ip: '10.0.5.1' } }, 999, /outside the subnet/],
        [{ status: 200, body: { ...sound, subnetCidr: '10.0.0.17/32' } }, 999, /prefix length/],
        [{ status: 200, body: { ...sound, ip: { a: 1 }, subnetCidr: [1] } }, 999, /ip/],
        [{ status: 200, body: 'fine' }, 999, /not a JSON object/],
        [{ status: 422, body: { error: { reason: 'nope' } } }, 100, /\{"reason":"nope"\}/],
        [{ status: 500, body: { error: { reason: 'down' } } }, 11, /HTTP 500/],
      ] as const) {
        answer = given;
        const failed = await run('ADD', newPod(), networkConfig({ ...ipam(), endpoint }));
        expect(failed.code, failed.stdout + failed.stderr).toBe(1);
        expect(failed.json).toMatchObject({ code, msg: expect.stringMatching(msg) });
        expect(failed.stdout + failed.stderr).not.toMatch(/\[object Object\]|TypeError|\n\s+at /);
      }
    } finally {
      liar.closeAllConnections();
      liar.close();
    }
  });
});

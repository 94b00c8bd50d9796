/**
 * berth-cni killed with SIGKILL at every step of ADD, DEL, refill and release (contract section
 * 12: "A crash of the plugin or the agent at any step leaves no address held by two
 * containers"). The real bundle runs as the runtime runs it, with a preload that kills it just
 * before its Nth change to disk (`test/support/crash-at.mjs`); each sweep goes from the first
 * step to the first run that ends by itself. After each crash the runtime does what kubelet
 * does (a failed ADD is followed by the sandbox's DEL, a DEL is retried until it succeeds) and
 * the agent is started again; then the node's files must name every address exactly once, the
 * live containers' leases intact, every other address free again, and berth must take back
 * only what no container holds.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPlugin } from '../../cni/build.js';
import { agentPass } from '../../cni/handout/agent.js';
import { bootId } from '../../cni/handout/boot.js';
import { candidates } from '../../cni/handout/choice.js';
import { HandoutStore, type Lease } from '../../cni/handout/store.js';
import { parseNetworkConfig } from '../../cni/netconf.js';
import { NodeIpClient } from '../../cni/node-ip-client.js';
import { markWanted } from '../../shared/eni/handout/node-api.js';
import type { NodeSet } from '../../shared/eni/handout/wire.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { cniEnv, networkConfig, type PluginRun, runPlugin } from '../../sim/cni-runtime.js';
import { NODE, type NodeIpServer, startNodeIpServer } from '../../sim/node-ip-server.js';

const PRELOAD = fileURLToPath(new URL('../support/crash-at.mjs', import.meta.url));
/** More steps than any command here makes: a sweep that reaches it has lost its way. */
const MOST_STEPS = 200;

let work: string;
let plugin: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'berth-crash-'));
  plugin = await installPlugin(join(work, 'bin'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** One node: its data directory, lock, released records and network configuration. */
async function node(endpoint = 'http://127.0.0.1:9') {
  const dir = await mkdtemp(join(work, 'node-'));
  const dataDir = join(dir, 'data');
  const store = new HandoutStore(dataDir);
  const ipam = { endpoint, node: NODE, dataDir, timeoutSeconds: 5, sourceRouting: false };
  const env = {
    BERTH_CNI_LOCK: join(dir, 'lock'),
    BERTH_CNI_RELEASED: join(dir, 'released'),
    NODE_OPTIONS: `--import=${PRELOAD}`,
  };
  const stdin = (extra: Record<string, unknown> = {}) => networkConfig(ipam, extra);
  const conflist = join(dir, 'berth.conflist');
  await import('node:fs/promises').then((fs) =>
    fs.writeFile(
      conflist,
      JSON.stringify({ cniVersion: '1.0.0', name: 'berth', plugins: [JSON.parse(stdin())] }),
    ),
  );
  return {
    dir,
    store,
    env,
    stdin,
    conflist,
    client: () => new NodeIpClient(parseNetworkConfig(stdin()).ipam, AbortSignal.timeout(10_000)),
  };
}
type Node = Awaited<ReturnType<typeof node>>;

/** The step count a run that ended by itself printed; undefined when it was killed. */
function stepsOf(run: { stderr: string }): number | undefined {
  const found = /crash-at: steps=(\d+)/.exec(run.stderr);
  return found ? Number(found[1]) : undefined;
}

/** Runs `command` for sandbox `container`, killed before its `crashAt`th step (0: never). */
function invoke(
  n: Node,
  command: 'ADD' | 'DEL',
  container: string,
  crashAt = 0,
  extra: Record<string, unknown> = {},
): Promise<PluginRun> {
  const pod = { namespace: 'games', name: container, containerId: container };
  return runPlugin(
    plugin,
    cniEnv(command, pod, { ...n.env, BERTH_TEST_CRASH_AT: String(crashAt) }),
    n.stdin(extra),
  );
}

const ipOf = (run: PluginRun) =>
  ((run.json?.ips as { address: string }[] | undefined)?.[0]?.address ?? '').split('/')[0] ?? '';

/** An ADD that must succeed: the container's address. */
async function added(n: Node, container: string): Promise<string> {
  const run = await invoke(n, 'ADD', container);
  expect(run.code, run.stdout + run.stderr).toBe(0);
  return ipOf(run);
}

function set(ips: readonly string[]): NodeSet {
  return {
    node: NODE,
    asOf: 1,
    subnetCidr: '10.0.0.0/24',
    gateway: '10.0.0.1',
    cooldownSeconds: 0,
    stickySeconds: 0,
    addresses: ips.map((ip) => ({
      ip,
      eniId: 'eni-1',
      deviceIndex: 1,
      createdAt: 1,
      state: 'free',
    })),
  };
}

/**
 * The node's files after a crash and what the runtime did next: every lease file whole and
 * naming a live container at its address, and every address of the set no live container holds
 * free to hand out again (none lost).
 */
async function expectNode(n: Node, live: ReadonlyMap<string, string>): Promise<void> {
  const leaseDir = join(n.store.root, 'leases');
  const names = (await readdir(leaseDir).catch(() => [] as string[])).filter(
    (name) => !name.startsWith('.'),
  );
  const leases = await Promise.all(
    names.map(async (name) => JSON.parse(await readFile(join(leaseDir, name), 'utf8')) as Lease),
  );
  expect(new Map(leases.map((l) => [l.containerId, l.ip]))).toEqual(live);
  const current = await n.store.readSet();
  expect(current, 'the set on disk reads whole').toBeDefined();
  const open = candidates(
    current as NodeSet,
    (await n.store.snapshot()).use,
    'games/next',
    Date.now() + 1,
  );
  const held = new Set(live.values());
  expect(open.map((a) => a.ip).sort()).toEqual(
    (current as NodeSet).addresses
      .filter((a) => a.state === 'free' && !held.has(a.ip))
      .map((a) => a.ip)
      .sort(),
  );
}

/** Sweeps `attempt` over every step from the first; answers how many steps the whole run made. */
async function sweep(attempt: (step: number) => Promise<boolean>): Promise<number> {
  for (let step = 1; step <= MOST_STEPS; step++) {
    if (await attempt(step)) return step - 1;
  }
  throw new Error(`no run ended by itself within ${MOST_STEPS} steps`);
}

describe('berth-cni killed at every step', () => {
  it('of an ADD: the sandbox’s DEL frees what it took, and no lease is ever half-written', async () => {
    const n = await node();
    await n.store.writeSet(set(['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13']));
    const live = new Map([['resident', await added(n, 'resident')]]);
    const steps = await sweep(async (step) => {
      const container = `c${step}`;
      const run = await invoke(n, 'ADD', container, step);
      if (stepsOf(run) !== undefined) {
        expect(run.code).toBe(0);
        expect([...live.values()]).not.toContain(ipOf(run));
        live.set(container, ipOf(run));
        return true;
      }
      // kubelet tears down a sandbox whose ADD failed: DEL with no result cached.
      expect((await invoke(n, 'DEL', container)).code).toBe(0);
      await expectNode(n, live);
      return false;
    });
    expect(steps).toBeGreaterThanOrEqual(3);
    await expectNode(n, live);
  });

  it('of a DEL: retried, it frees the address once, rested for its cooldown', async () => {
    const n = await node();
    await n.store.writeSet(set(['10.0.0.10', '10.0.0.11']));
    const live = new Map([['resident', await added(n, 'resident')]]);
    const steps = await sweep(async (step) => {
      const container = `d${step}`;
      const ip = await added(n, container);
      const prevResult = { cniVersion: '1.0.0', ips: [{ address: `${ip}/24` }] };
      const run = await invoke(n, 'DEL', container, step, { prevResult });
      const done = stepsOf(run) !== undefined;
      // The runtime calls DEL again until one succeeds.
      if (!done) expect((await invoke(n, 'DEL', container, 0, { prevResult })).code).toBe(0);
      await expectNode(n, live);
      expect((await n.store.rested()).get(ip)?.pod, `the rest of ${ip}`).toBe(`games/${container}`);
      return done;
    });
    expect(steps).toBeGreaterThanOrEqual(3);
  });

  it('of a refill: the set on disk stays whole, and what was taken comes back', async () => {
    const steps = await sweep(async (step) => {
      const server = await startNodeIpServer({ idle: 2, instanceType: 'c5.4xlarge' });
      try {
        const n = await node(server.url);
        await agentPass(n.store, n.client(), undefined, Date.now());
        const live = await fillUp(n);
        const run = await invoke(n, 'ADD', 'c', step);
        const done = stepsOf(run) !== undefined;
        if (done) {
          expect(run.code, run.stdout).toBe(0);
          live.set('c', ipOf(run));
        } else {
          expect((await invoke(n, 'DEL', 'c')).code).toBe(0);
        }
        await expectNode(n, live);
        expect(new Set(live.values()).size).toBe(live.size);
        return done;
      } finally {
        await server.close();
      }
    });
    expect(steps).toBeGreaterThanOrEqual(3);
  });

  it('of the agent’s release: berth takes back only what no container holds, and all of it', async () => {
    const steps = await sweep(async (step) => {
      const server = await startNodeIpServer({ idle: 2, instanceType: 'c5.4xlarge' });
      try {
        const n = await node(server.url);
        await agentPass(n.store, n.client(), undefined, Date.now());
        const live = new Map([['a', await added(n, 'a')]]);
        await wantAll(server);
        // The agent learns the marks as it does on a report (at its next watermark or heartbeat).
        await n.store.writeSet(await n.client().nodeSet());
        const crashed = await runAgent(n, step);
        // Started again, the agent finishes what the killed one began (its pass, run here).
        if (!crashed.ended) await agentPass(n.store, n.client(), undefined, Date.now());
        await expectReturned(server, n, live);
        return crashed.ended;
      } finally {
        await server.close();
      }
    });
    // Each of the three wanted addresses free on the node is marked twice, each mark a few steps.
    expect(steps).toBeGreaterThanOrEqual(12);
  });
});

/** Leases every free address of the node's set to a container of its own, as ADDs do. */
async function fillUp(n: Node): Promise<Map<string, string>> {
  const current = (await n.store.readSet()) as NodeSet;
  const open = candidates(current, (await n.store.snapshot()).use, 'games/next', Date.now() + 1);
  const live = new Map<string, string>();
  for (const [i, address] of open.entries()) {
    const lease = { ip: address.ip, containerId: `r${i}`, ifName: 'eth0', pod: `games/r${i}` };
    expect(await n.store.tryLease({ ...lease, since: Date.now(), boot: await bootId() })).toBe(
      true,
    );
    live.set(lease.containerId, address.ip);
  }
  return live;
}

/** berth's pass wants back every address of the node's pool. */
async function wantAll(server: NodeIpServer): Promise<void> {
  const { deps, clock } = server.world;
  const state = await deps.store.loadNode(NODE);
  await markWanted(
    deps,
    NODE,
    state.ips
      .filter((ip) => ip.state === 'free')
      .map((ip) => ({ ...ip, wantedSince: clock.now, version: ip.version + 1 })),
  );
}

/**
 * The agent process, killed before its `crashAt`th step; it is stopped once its first pass has
 * reported, and answers whether it got that far.
 */
function runAgent(n: Node, crashAt: number): Promise<{ ended: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(plugin, ['agent'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...n.env,
        BERTH_CNI_CONFIG: n.conflist,
        BERTH_CNI_AGENT_PASS_MS: '60000',
        BERTH_TEST_CRASH_AT: String(crashAt),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let ended = false;
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout.on('data', (chunk: Buffer) => {
      if (!chunk.toString().includes('reported:')) return;
      ended = true;
      child.kill('SIGTERM');
    });
    child.once('error', reject);
    child.once('close', (_code, signal) => {
      if (!ended && signal !== 'SIGKILL') reject(new Error(`the agent stopped: ${stderr}`));
      else resolve({ ended });
    });
  });
}

/**
 * berth's view after the release: each address a container holds is still assigned and was
 * never taken as returned; every other wanted address was returned (what berth refilled
 * meanwhile is not wanted), and the pass unassigns exactly those.
 */
async function expectReturned(
  server: NodeIpServer,
  n: Node,
  live: ReadonlyMap<string, string>,
): Promise<void> {
  const { deps, clock, ec2 } = server.world;
  const held = new Set(live.values());
  const ips = (await deps.store.loadNode(NODE)).ips;
  const returned = ips.filter((ip) => ip.returnedAt !== undefined).map((ip) => ip.ip);
  expect(returned.filter((ip) => held.has(ip))).toEqual([]);
  expect(returned.sort()).toEqual(
    ips
      .filter((ip) => ip.wantedSince !== undefined && !held.has(ip.ip))
      .map((ip) => ip.ip)
      .sort(),
  );
  clock.now += ENI_TIMINGS.trimIdleAfterMs * 2;
  await runEniPass(deps);
  const assigned = new Set(ec2.allInterfaces().flatMap((eni) => eni.secondaryIps));
  for (const ip of held) expect(assigned.has(ip), `${ip} stays assigned`).toBe(true);
  for (const ip of returned) expect(assigned.has(ip), `${ip} went back`).toBe(false);
  await expectNode(n, live);
}

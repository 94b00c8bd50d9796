/**
 * berth-cni handing out the node's own addresses (contract sections 8 and 12): ADD and DEL call
 * no berth endpoint while an address is free, a DEL frees only its own container's address, the
 * agent returns only what no container holds, and pods start while berth is unreachable.
 */
import { mkdir, mkdtemp, readdir, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Invocation } from '../../cni/environment.js';
import { agentPass, reportDue, UNFINISHED_GRACE_MS } from '../../cni/handout/agent.js';
import { takeAddress } from '../../cni/handout/handout.js';
import { HandoutStore } from '../../cni/handout/store.js';
import type { HostNetwork } from '../../cni/host-network.js';
import { parseNetworkConfig } from '../../cni/netconf.js';
import { NodeIpClient } from '../../cni/node-ip-client.js';
import { runCommand } from '../../cni/plugin.js';
import type { IpCommand } from '../../cni/source-routing.js';
import type { NodeSet } from '../../shared/eni/handout/wire.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { startServer } from '../../shared/local/server.js';
import { networkConfig } from '../../sim/cni-runtime.js';
import { NODE, nodeIpApi, startNodeIpServer } from '../../sim/node-ip-server.js';
import { lockedOn } from './locked-on.js';
import { releasedInMemory } from './released-memory.js';

const host: HostNetwork = {
  // A link for every MAC address the EC2 fake hands out (0a:00:00:00:00:NN).
  view: async () => ({
    links: Array.from({ length: 256 }, (_, i) => ({
      ifname: `eth${i}`,
      address: `0a:00:00:00:00:${i.toString(16).padStart(2, '0')}`,
    })),
    rules: [],
  }),
  routes: async () => [],
  run: async () => undefined,
};

function invocation(command: Invocation['command'], containerId: string, pod = containerId) {
  return {
    command,
    containerId,
    netns: `/var/run/netns/${containerId}`,
    ifname: 'eth0',
    args: new Map([
      ['K8S_POD_NAMESPACE', 'games'],
      ['K8S_POD_NAME', pod],
    ]),
  };
}

function set(addresses: { ip: string; state?: 'free' | 'held' | 'wanted' }[], asOf = 1): NodeSet {
  return {
    node: 'node-a',
    asOf,
    subnetCidr: '10.0.0.0/24',
    gateway: '10.0.0.1',
    cooldownSeconds: 30,
    stickySeconds: 0,
    addresses: addresses.map((a) => ({
      ip: a.ip,
      eniId: 'eni-0',
      deviceIndex: 0,
      createdAt: 1,
      state: a.state ?? 'free',
    })),
  };
}

async function node(endpoint = 'http://127.0.0.1:9', network: HostNetwork = host) {
  const dataDir = await mkdtemp(join(tmpdir(), 'berth-cni-'));
  const store = new HandoutStore(dataDir);
  let clock = 1_000_000;
  const stdin = (extra: Record<string, unknown> = {}) =>
    networkConfig({ endpoint, node: NODE, dataDir, timeoutSeconds: 2 }, extra);
  const client = new NodeIpClient(parseNetworkConfig(stdin()).ipam, AbortSignal.timeout(10_000));
  const deps = {
    client: () => client,
    host: network,
    locked: lockedOn(network),
    released: releasedInMemory(),
    handout: () => store,
    boot: 'boot-1',
    now: () => clock,
  };
  const run = (command: Invocation['command'], container: string, extra = {}, pod?: string) =>
    runCommand(invocation(command, container, pod), stdin(extra), deps);
  const ipOf = (result: unknown) =>
    ((result as { ips: { address: string }[] }).ips[0]?.address ?? '').split('/')[0];
  return {
    store,
    client,
    run,
    ipOf,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

describe('berth-cni handing out the node’s addresses', () => {
  it('gives each container its own address with berth unreachable, and the same one again on a repeat', async () => {
    const n = await node();
    await n.store.writeSet(set([{ ip: '10.0.0.10' }, { ip: '10.0.0.11' }, { ip: '10.0.0.12' }]));
    const a = n.ipOf(await n.run('ADD', 'c1'));
    const b = n.ipOf(await n.run('ADD', 'c2'));
    expect(a).not.toBe(b);
    expect(n.ipOf(await n.run('ADD', 'c1'))).toBe(a);
    expect((await n.store.leases()).map((l) => l.ip).sort()).toEqual([a, b].sort());
  });

  it('reads the node’s files once for an ADD, and its returns again only once it took an address', async () => {
    const reads: string[] = [];
    class CountingStore extends HandoutStore {
      override async leases() {
        reads.push('leases');
        return super.leases();
      }
      override async returns() {
        reads.push('returns');
        return super.returns();
      }
      override async rested() {
        reads.push('rested');
        return super.rested();
      }
    }
    const store = new CountingStore(await mkdtemp(join(tmpdir(), 'berth-cni-')));
    const two = set([{ ip: '10.0.0.10' }, { ip: '10.0.0.11' }]);
    const taker = { pod: 'games/gs-1', containerId: 'c1', ifName: 'eth0' };
    const taken = await takeAddress(store, two, taker, 'boot-1', 1_000_000);
    expect(taken?.ip).toMatch(/^10\.0\.0\.1[01]$/);
    // The returns are read after the lease is made: an agent returning the address meanwhile
    // is seen (see handout.ts).
    expect(reads).toEqual(['leases', 'returns', 'rested', 'returns']);
  });

  it('never hands out an address that is held the earlier way or wanted back', async () => {
    const n = await node();
    await n.store.writeSet(
      set([
        { ip: '10.0.0.10', state: 'held' },
        { ip: '10.0.0.11', state: 'wanted' },
        { ip: '10.0.0.12' },
      ]),
    );
    expect(n.ipOf(await n.run('ADD', 'c1'))).toBe('10.0.0.12');
    // No address left and berth unreachable: try again later (error 11).
    await expect(n.run('ADD', 'c2')).rejects.toMatchObject({ code: 11 });
  });

  it('frees on DEL only the address its own container holds, and rests it before reuse', async () => {
    const n = await node();
    await n.store.writeSet(set([{ ip: '10.0.0.10' }, { ip: '10.0.0.11' }]));
    const a = n.ipOf(await n.run('ADD', 'c1'));
    const b = n.ipOf(await n.run('ADD', 'c2'));
    // A late DEL of another sandbox naming c2's address frees nothing.
    await n.run('DEL', 'c9', { prevResult: { ips: [{ address: `${b}/24` }] } });
    expect((await n.store.leases()).map((l) => l.ip).sort()).toEqual([a, b].sort());
    await n.run('DEL', 'c1', { prevResult: { ips: [{ address: `${a}/24` }] } });
    await n.run('DEL', 'c1');
    expect((await n.store.leases()).map((l) => l.ip)).toEqual([b]);
    // a rests its cooldown (30 s) first.
    await expect(n.run('ADD', 'c3')).rejects.toMatchObject({ code: 11 });
    n.advance(31_000);
    expect(n.ipOf(await n.run('ADD', 'c3'))).toBe(a);
  });

  it('gives up an address the agent is returning, whichever of the two wrote first', async () => {
    const n = await node();
    // The plugin's set is older: it still shows the address free.
    await n.store.writeSet(set([{ ip: '10.0.0.10' }, { ip: '10.0.0.11' }]));
    await n.store.markReturn({ ip: '10.0.0.10', createdAt: 1, stage: 'checking' });
    expect(n.ipOf(await n.run('ADD', 'c1'))).toBe('10.0.0.11');
  });

  it('returns only wanted addresses no container holds, and reports at watermarks', async () => {
    const n = await node();
    await n.store.writeSet(set([{ ip: '10.0.0.10' }, { ip: '10.0.0.11' }, { ip: '10.0.0.12' }]));
    await n.run('ADD', 'c1');
    const leased = (await n.store.leases())[0]?.ip ?? '';
    const wantedBoth = set(
      [
        { ip: leased, state: 'wanted' },
        ...['10.0.0.10', '10.0.0.11', '10.0.0.12']
          .filter((ip) => ip !== leased)
          .map((ip, i) => ({ ip, state: i === 0 ? ('wanted' as const) : ('free' as const) })),
      ],
      2,
    );
    await n.store.writeSet(wantedBoth);
    const reports: unknown[] = [];
    const client = {
      nodeSet: async () => wantedBoth,
      report: async (report: unknown) => {
        reports.push(report);
        return wantedBoth;
      },
    };
    const pass = await agentPass(n.store, client, undefined, 1_000);
    expect(pass.reported).toBe(true);
    const returned = (reports[0] as { returned: { ip: string }[] }).returned.map((r) => r.ip);
    expect(returned).toHaveLength(1);
    expect(returned).not.toContain(leased);
    // The use has not moved: no report, no call.
    expect((await agentPass(n.store, client, pass.last, 2_000)).reported).toBe(false);
    expect(reports).toHaveLength(1);
  });

  it('reports when the use moves by an eighth of the set, at the last two free, or every 5 minutes', () => {
    const last = { inUse: 10, at: 0 };
    expect(reportDue(undefined, { inUse: 0, free: 10, total: 10 }, 0)).toBe(true);
    expect(reportDue(last, { inUse: 11, free: 20, total: 32 }, 1)).toBe(false);
    expect(reportDue(last, { inUse: 14, free: 20, total: 32 }, 1)).toBe(true);
    expect(reportDue(last, { inUse: 11, free: 2, total: 32 }, 1)).toBe(true);
    expect(reportDue(last, { inUse: 10, free: 20, total: 32 }, 5 * 60_000)).toBe(true);
  });

  it('sweeps away the files of writes a crash cut short, once they are old', async () => {
    const n = await node();
    const current = set([{ ip: '10.0.0.10' }]);
    await n.store.writeSet(current);
    const leases = join(n.store.root, 'leases');
    await mkdir(leases, { recursive: true });
    const old = join(leases, '.1-1-a.tmp');
    const fresh = join(leases, '.1-2-b.tmp');
    await writeFile(old, '{"ip":"10.0.0.10"');
    await writeFile(fresh, '{"ip":"10.0.0.10"');
    const now = Date.now();
    await utimes(
      old,
      new Date(now - UNFINISHED_GRACE_MS - 1_000),
      new Date(now - UNFINISHED_GRACE_MS - 1_000),
    );
    const client = { nodeSet: async () => current, report: async () => current };
    await agentPass(n.store, client, undefined, now);
    expect((await readdir(leases)).sort()).toEqual(['.1-2-b.tmp']);
    // Neither ever held the address.
    expect(n.ipOf(await n.run('ADD', 'c1'))).toBe('10.0.0.10');
  });

  it('drops the leases of an earlier boot, and only those', async () => {
    const n = await node();
    await n.store.tryLease({
      ip: '10.0.0.10',
      containerId: 'old',
      ifName: 'eth0',
      pod: 'g/p',
      since: 0,
      boot: 'boot-0',
    });
    await n.store.tryLease({
      ip: '10.0.0.11',
      containerId: 'new',
      ifName: 'eth0',
      pod: 'g/q',
      since: 0,
      boot: 'boot-1',
    });
    expect(await n.store.dropLeasesNotOf('boot-1')).toBe(1);
    expect((await n.store.leases()).map((l) => l.ip)).toEqual(['10.0.0.11']);
  });
});

describe('a node through an outage of berth', () => {
  it('starts every pod through 10 minutes of berth unreachable, and then holds nothing twice', async () => {
    const server = await startNodeIpServer({ idle: 6, instanceType: 'c5.4xlarge' });
    const { world } = server;
    const n = await node(server.url);
    await agentPass(n.store, n.client, undefined, world.clock.now);
    const free = ((await n.store.readSet())?.addresses ?? []).filter((a) => a.state === 'free');
    expect(free.length).toBeGreaterThanOrEqual(6);
    const asked = server.requests.length;
    await server.close();
    // Ten minutes with berth unreachable: pods start and stop on the node's set alone.
    const ips: string[] = [];
    for (let i = 0; i < free.length; i++) ips.push(n.ipOf(await n.run('ADD', `c${i}`)) ?? '');
    expect(new Set(ips).size).toBe(free.length);
    await expect(n.run('ADD', 'one-too-many')).rejects.toMatchObject({ code: 11 });
    n.advance(5 * 60_000);
    await n.run('DEL', 'c0');
    n.advance(31_000);
    expect(n.ipOf(await n.run('ADD', 'after-c0'))).toBe(ips[0]);
    n.advance(5 * 60_000);
    world.clock.now += 10 * 60_000;
    expect(server.requests.length).toBe(asked);
    // berth is back where it was: the agent reports, and the passes trim what rested long enough.
    const back = await startServer({
      host: '127.0.0.1',
      port: Number(new URL(server.url).port),
      handle: nodeIpApi(world),
      onError: (error) => process.stderr.write(`node IP server: ${String(error)}\n`),
    });
    try {
      for (let pass = 0; pass < 3; pass++) {
        await agentPass(n.store, n.client, undefined, world.clock.now);
        world.clock.now += ENI_TIMINGS.trimIdleAfterMs;
        await runEniPass(world.deps);
      }
      const leases = await n.store.leases();
      expect(leases).toHaveLength(free.length);
      const assigned = new Set(world.ec2.allInterfaces().flatMap((eni) => eni.secondaryIps));
      const set = await n.store.readSet();
      for (const lease of leases) {
        expect(assigned.has(lease.ip), `${lease.ip} still the node's`).toBe(true);
        expect(set?.addresses.find((a) => a.ip === lease.ip)?.state).toBe('free');
      }
    } finally {
      await back.close();
    }
  });

  it("hands out the primary ENI's addresses named by its device and MAC, routed by the main table", async () => {
    const server = await startNodeIpServer({ idle: 2, instanceType: 'c5.4xlarge' });
    try {
      const ran: IpCommand[] = [];
      const n = await node(server.url, {
        ...host,
        run: async (commands) => void ran.push(...commands),
      });
      await agentPass(n.store, n.client, undefined, Date.now());
      const [primary] = server.enis();
      const addresses = (await n.store.readSet())?.addresses ?? [];
      expect(primary?.deviceIndex).toBe(0);
      expect(addresses.length).toBeGreaterThan(0);
      for (const address of addresses) {
        expect(address).toMatchObject({
          eniId: primary?.eniId,
          deviceIndex: 0,
          macAddress: primary?.macAddress,
        });
      }
      const added = await n.run('ADD', 'c0');
      expect(addresses.map((a) => a.ip)).toContain(n.ipOf(added));
      await n.run('DEL', 'c0', { prevResult: added });
      // No rule and no ENI table: the pod leaves by the node's own route, as the node does.
      expect(ran).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('asks for a refill once when the node has no free address, and takes from what comes', async () => {
    const server = await startNodeIpServer({ idle: 2, instanceType: 'c5.4xlarge' });
    try {
      const n = await node(server.url);
      await agentPass(n.store, n.client, undefined, Date.now());
      const first = ((await n.store.readSet())?.addresses ?? []).filter((a) => a.state === 'free');
      for (let i = 0; i < first.length; i++) await n.run('ADD', `c${i}`);
      const before = server.requests.length;
      const ip = n.ipOf(await n.run('ADD', 'c-next'));
      expect(first.map((a) => a.ip)).not.toContain(ip);
      expect(server.requests.slice(before)).toEqual([`POST /v1/nodes/${NODE}/addresses`]);
      // berth's pass now sizes the pool from the node's report, and trims nothing it holds.
      server.world.clock.now += ENI_TIMINGS.trimIdleAfterMs * 2;
      await runEniPass(server.world.deps);
      expect(server.world.ec2.counts.get('UnassignPrivateIpAddresses') ?? 0).toBe(0);
    } finally {
      await server.close();
    }
  });
});

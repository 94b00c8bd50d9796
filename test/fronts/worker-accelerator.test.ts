import { describe, expect, it } from 'vitest';
import { CustomRoutingFront } from '../../shared/fronts/accelerator-front.js';
import type { BindWork, ReleaseWork } from '../../shared/fronts/work.js';
import { type FrontsWorkerDeps, handleFrontWork } from '../../shared/fronts/worker.js';
import { LeaseLostError } from '../../shared/lease/errors.js';
import { FakeCustomRoutingAccelerator } from '../../sim/fakes/accelerator.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';
import { FakeLease } from '../../sim/fakes/lease.js';

const SUBNET = 'subnet-games';

/** `onSleep` runs each time a reconcile waits for another process's. */
function setup(onSleep: (lease: FakeLease) => void = () => {}) {
  const now = 1_000_000;
  const api = new FakeCustomRoutingAccelerator({ now: () => now });
  const accelerator = api.createAccelerator({ listenerPortRange: [10_000, 30_000] });
  const group = api.addEndpointGroup({
    acceleratorArn: accelerator.arn,
    fromPort: 8000,
    toPort: 8049,
    protocols: ['UDP', 'TCP'],
    subnets: [{ subnetId: SUBNET, cidr: '10.0.1.0/24' }],
  });
  const store = new MemoryFrontStore();
  const lease = new FakeLease(() => now);
  const front = new CustomRoutingFront({
    api,
    store,
    endpointGroupArn: group.arn,
    exclusion: { lease, holder: 'worker', sleep: async () => onSleep(lease) },
  });
  const queued: unknown[] = [];
  const deps: FrontsWorkerDeps = {
    cluster: 'prod',
    store,
    kube: { getPod: async () => undefined },
    accelerator: front,
    queue: { submit: async (work) => void queued.push(work) },
    recheckSeconds: 5,
    now: () => now,
  };
  return { api, accelerator, front, store, deps, lease, queued };
}

let seq = 0;
function bind(
  node: string,
  hostPort: number,
  id = `${'a'.repeat(16)}${String(seq++).padStart(4, '0')}`,
): BindWork {
  return {
    kind: 'bind',
    cluster: 'prod',
    namespace: 'games',
    pod: `gs-${hostPort}`,
    allocationId: id,
    node: 'node',
    nodeAddress: node,
    ports: [{ name: 'game', front: 'accelerator', protocol: 'UDP', hostPort }],
    boundAt: 0,
  };
}
const release = (work: BindWork): ReleaseWork => ({
  kind: 'release',
  cluster: 'prod',
  namespace: 'games',
  pod: work.pod,
  allocationId: work.allocationId,
  admittedAt: 0,
  attempt: 0,
});

describe('fronts worker, accelerator ports', () => {
  it('makes a burst on a few nodes reachable with one Allow, and tells each its public port', async () => {
    const t = setup();
    const burst = Array.from({ length: 40 }, (_, i) => bind(`10.0.1.${10 + (i % 4)}`, 8000 + i));
    const outcomes = await handleFrontWork(t.deps, burst);
    expect(outcomes.every((o) => o.kind === 'reachable')).toBe(true);
    expect(t.api.mutatingCalls()).toBe(1);
    for (const work of burst) {
      const { nodeAddress, ports } = work;
      const hostPort = ports[0]?.hostPort ?? 0;
      expect(t.api.reachable(SUBNET, nodeAddress, hostPort)).toBe(true);
      const located = await t.front.locate(nodeAddress, hostPort);
      expect(located?.publicAddress).toBe(
        `${t.accelerator.ipAddresses[0]}:${t.api.acceleratorPortOf(SUBNET, nodeAddress, hostPort)}`,
      );
    }
  });

  it('denies a node address once its last game server is released, and nothing while one lives', async () => {
    const t = setup();
    const first = bind('10.0.1.10', 8000);
    const second = bind('10.0.1.10', 8001);
    await handleFrontWork(t.deps, [first, second]);
    await handleFrontWork(t.deps, [release(first)]);
    expect(t.api.reachable(SUBNET, '10.0.1.10', 8001)).toBe(true);
    await handleFrontWork(t.deps, [release(second)]);
    expect(t.api.reachable(SUBNET, '10.0.1.10', 8000)).toBe(false);
    expect(t.api.reachable(SUBNET, '10.0.1.10', 8001)).toBe(false);
  });

  it('keeps a new game server on a host port reachable when the previous one’s release lands late', async () => {
    const t = setup();
    const old = bind('10.0.1.10', 8000);
    await handleFrontWork(t.deps, [old]);
    // The scheduler gives the port to a new pod once the old one is gone; its release comes after.
    const next = bind('10.0.1.10', 8000);
    await handleFrontWork(t.deps, [next]);
    await handleFrontWork(t.deps, [release(old)]);
    expect(t.api.reachable(SUBNET, '10.0.1.10', 8000)).toBe(true);
    const { wanted } = await t.store.listDestinations(SUBNET);
    expect(wanted.map((cell) => cell.owner.allocationId)).toEqual([next.allocationId]);
  });

  it('reconciles a subnet one process at a time: waits while another holds it, then plans afresh', async () => {
    let waits = 0;
    const t = setup((lease) => {
      // The other process finishes after the first wait.
      if (++waits === 1) void lease.releaseLease(`fronts-accelerator#${SUBNET}`, 'pass');
    });
    await t.lease.acquireLease(`fronts-accelerator#${SUBNET}`, 'pass', 45_000);
    const [outcome] = await handleFrontWork(t.deps, [bind('10.0.1.10', 8000)]);
    expect(outcome?.kind).toBe('reachable');
    expect(waits).toBe(1);
    expect(t.api.reachable(SUBNET, '10.0.1.10', 8000)).toBe(true);
  });

  it('takes no lease for a subnet already in step (the pass looks at every subnet every minute)', async () => {
    const t = setup();
    await handleFrontWork(t.deps, [bind('10.0.1.10', 8000)]);
    const acquired = t.lease.calls.filter((call) => call.startsWith('acquire')).length;
    expect(acquired).toBe(1);
    await t.front.reconcile([SUBNET], 'skip');
    expect(t.lease.calls.filter((call) => call.startsWith('acquire'))).toHaveLength(acquired);
  });

  it('queues the bind again, calling nothing, when another process keeps the subnet past the wait', async () => {
    const t = setup();
    await t.lease.acquireLease(`fronts-accelerator#${SUBNET}`, 'pass', 45_000);
    const [outcome] = await handleFrontWork(t.deps, [bind('10.0.1.10', 8000)]);
    expect(outcome).toMatchObject({ kind: 'deferred' });
    expect(t.queued).toHaveLength(1);
    expect(t.api.mutatingCalls()).toBe(0);
    // The pass leaves a subnet a worker holds to that worker.
    await t.front.reconcile([SUBNET], 'skip');
    expect(t.api.mutatingCalls()).toBe(0);
  });

  it('stops before its call when its lease passed to another process meanwhile', async () => {
    const t = setup();
    const work = bind('10.0.1.10', 8000);
    await t.store.want([
      {
        subnetId: SUBNET,
        address: work.nodeAddress,
        port: 8000,
        owner: { allocationId: work.allocationId, namespace: 'games', pod: work.pod },
        wantedAt: 0,
      },
    ]);
    // The lease is taken from under the reconcile between its acquisition and its renewal.
    const acquire = t.lease.acquireLease.bind(t.lease);
    t.lease.acquireLease = async (name, holder, ttl) => {
      const attempt = await acquire(name, holder, ttl);
      t.lease.held.set(name, { name, holder: 'pass', expiresAtMs: Number.MAX_SAFE_INTEGER });
      return attempt;
    };
    await expect(t.front.reconcile([SUBNET])).rejects.toThrow(LeaseLostError);
    expect(t.api.mutatingCalls()).toBe(0);
  });

  it('skips a node outside the endpoint subnets, calling nothing', async () => {
    const t = setup();
    const [outcome] = await handleFrontWork(t.deps, [bind('10.9.0.5', 8000)]);
    expect(outcome?.kind).toBe('skipped');
    expect(t.api.mutatingCalls()).toBe(0);
  });
});

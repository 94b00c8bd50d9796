import { describe, expect, it } from 'vitest';
import { BERTH_TAGS, tagValue } from '../../shared/ec2/network.js';
import {
  handleInstanceStateChange,
  parseInstanceStateChange,
  passedNoPool,
  runEniPass,
} from '../../shared/eni/pass.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { assignIp, releaseIp } from '../../shared/eni/service.js';
import { type EniWorld, eniWorld, SUBNET_ID } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';
import { crashAfter, SimulatedCrashError } from './crash.js';

const MINUTE = 60_000;

/** The in-memory store, counting whole-node reads. */
class ReadCountingStore extends InMemoryEniStore {
  reads = 0;
  leases = 0;
  override async loadNode(node: string) {
    this.reads++;
    return super.loadNode(node);
  }
  override async tryLease(node: string, holder: string, now: number, until: number) {
    this.leases++;
    return super.tryLease(node, holder, now, until);
  }
}

function berthEnis(world: EniWorld) {
  return world.ec2
    .allInterfaces()
    .filter((eni) => tagValue(eni.tags, BERTH_TAGS.cluster) === 'test');
}

/** The primary ENI of the instance the fake launched for a node. */
function primaryOf(world: EniWorld, instanceId: string) {
  return world.ec2
    .allInterfaces()
    .find((eni) => eni.attachment?.instanceId === instanceId && eni.attachment.deviceIndex === 0);
}

/**
 * A node whose primary ENI another owner has filled (what the VPC CNI left there), so the pool
 * grows on ENIs berth creates: for the tests of their life cycle.
 */
function nodeWithFullPrimary(world: EniWorld, name: string, instanceType?: string): string {
  const instanceId = world.addNode(name, instanceType);
  world.ec2.occupyPrimary(instanceId);
  return instanceId;
}

async function podIp(world: EniWorld, pod: string) {
  return (await world.store.loadNode('node-a')).ips.find(
    (ip) => ip.state === 'assigned' && ip.pod === pod,
  )?.ip;
}

async function passAfter(world: EniWorld, ms: number) {
  world.clock.now += ms;
  return runEniPass(world.deps);
}

describe('runEniPass', () => {
  it('fills a new node to maxIdle on its primary ENI in one call, creating no ENI', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    const instanceId = world.addNode('node-a', 'c5.4xlarge');
    const summary = await runEniPass(world.deps);
    expect(summary).toMatchObject({ poolsCreated: 1, enisCreated: 0, ipsAssigned: 8, idleIps: 8 });
    expect(world.ec2.counts.get('AssignPrivateIpAddresses')).toBe(1);
    expect(world.ec2.counts.get('CreateNetworkInterface') ?? 0).toBe(0);
    const primary = primaryOf(world, instanceId);
    const { enis, ips } = await world.store.loadNode('node-a');
    expect(enis).toEqual([
      expect.objectContaining({ eniId: primary?.eniId, deviceIndex: 0, primary: true }),
    ]);
    expect(ips.map((ip) => ip.ip).sort()).toEqual([...(primary?.secondaryIps ?? [])].sort());
    expect(ips.map((ip) => ip.ip)).not.toContain(primary?.primaryIp);
    expect(JSON.parse(JSON.stringify(summary))).toEqual(summary);
  });

  it('creates, attaches and tags an ENI with its addresses only once the primary ENI is full', async () => {
    // c5.large: 10 IPv4 per ENI, so 9 pod addresses on the primary, the rest on a new ENI.
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 12 } });
    const instanceId = world.addNode('node-a', 'c5.large');
    const summary = await runEniPass(world.deps);
    expect(summary).toMatchObject({ enisCreated: 1, ipsAssigned: 12, idleIps: 12 });
    expect(primaryOf(world, instanceId)?.secondaryIps).toHaveLength(9);
    const [created] = berthEnis(world);
    expect(created?.secondaryIps).toHaveLength(3);
    expect(created?.attachment).toMatchObject({ instanceId, deviceIndex: 1 });
  });

  it('takes nothing another owner left on the primary ENI, and grows around it', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    const instanceId = world.addNode('node-a', 'c5.large');
    const theirs = world.ec2.occupyPrimary(instanceId, 4);
    const first = await runEniPass(world.deps);
    // Five slots of the primary were left: five addresses there, three on a new ENI.
    expect(first).toMatchObject({ ipsAssigned: 8, enisCreated: 1 });
    const { enis, ips } = await world.store.loadNode('node-a');
    expect([...(enis.find((eni) => eni.primary)?.foreign ?? [])].sort()).toEqual(
      [...theirs].sort(),
    );
    expect(ips.filter((ip) => theirs.includes(ip.ip))).toEqual([]);
    // Past every grace, they are still theirs: never given back, never handed out.
    const later = await passAfter(world, ENI_TIMINGS.reconcileGraceMs + MINUTE);
    expect(later.reconcile.unknownIpsUnassigned).toBe(0);
    expect(later.poolsInStep).toBe(1);
    expect(primaryOf(world, instanceId)?.secondaryIps).toEqual(expect.arrayContaining(theirs));
  });

  it('reads a steady pool once a pass without its lease, and leases only a pool with work', async () => {
    const store = new ReadCountingStore();
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 }, store });
    world.addNode('node-a', 'c5.4xlarge');
    await runEniPass(world.deps);
    await passAfter(world, MINUTE);
    store.reads = 0;
    store.leases = 0;
    const steady = await passAfter(world, MINUTE);
    expect(steady).toMatchObject({ ipsAssigned: 0, ipsUnassigned: 0, idleIps: 8, poolsInStep: 1 });
    expect(store.reads).toBe(1);
    expect(store.leases).toBe(0);
    // Pods took addresses: the pass refills, and reads the node again for what it wrote.
    for (let i = 0; i < 7; i++) {
      world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` });
    }
    store.reads = 0;
    const refilled = await passAfter(world, MINUTE);
    expect(refilled).toMatchObject({ ipsAssigned: 7, idleIps: 8, poolsInStep: 0 });
    // The look, the read under the lease, and the read after its writes.
    expect(store.reads).toBe(3);
    expect(store.leases).toBe(1);
  });

  it('refills with one AssignPrivateIpAddresses for several addresses', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    world.addNode('node-a', 'c5.4xlarge');
    await runEniPass(world.deps);
    for (let i = 0; i < 7; i++) {
      world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` });
    }
    const assigns = world.ec2.counts.get('AssignPrivateIpAddresses') ?? 0;
    const summary = await passAfter(world, MINUTE);
    expect(world.ec2.counts.get('AssignPrivateIpAddresses')).toBe(assigns + 1);
    expect(summary.ipsAssigned).toBe(7);
    expect(summary.idleIps).toBe(8);
  });

  it("never makes an interface's primary address a pool address, even if an assign answer lists it", async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    world.addNode('node-a', 'c5.4xlarge');
    await runEniPass(world.deps);
    // An EC2-compatible API that answers AssignPrivateIpAddresses with the primary as well.
    const assign = world.deps.ec2.assignPrivateIpAddresses.bind(world.deps.ec2);
    world.deps.ec2.assignPrivateIpAddresses = async (input) => {
      const primary = world.ec2.allInterfaces().find((e) => e.eniId === input.eniId)?.primaryIp;
      return [...(await assign(input)), ...(primary ? [primary] : [])];
    };
    for (let i = 0; i < 7; i++) {
      world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` });
    }
    await passAfter(world, MINUTE);
    const primaries = new Set(world.ec2.allInterfaces().map((e) => e.primaryIp));
    const { ips } = await world.store.loadNode('node-a');
    expect(ips.length).toBeGreaterThan(8);
    expect(ips.filter((ip) => primaries.has(ip.ip))).toEqual([]);
  });

  it('trims idle addresses beyond maxIdle in one call per ENI once they have rested', async () => {
    const world = eniWorld({ eni: { minIdle: 1, maxIdle: 3, cooldownSeconds: 30 } });
    world.addNode('node-a', 'c5.4xlarge');
    await runEniPass(world.deps);
    const ips: string[] = [];
    for (let i = 0; i < 10; i++) {
      world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
      ips.push((await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` })).ip);
    }
    await passAfter(world, MINUTE);
    for (const [i, ip] of ips.entries()) {
      world.cluster.pods.delete(`g/p${i}`);
      await releaseIp(world.deps, 'node-a', ip, { namespace: 'g', pod: `p${i}` });
    }
    const early = await passAfter(world, MINUTE);
    expect(early.ipsUnassigned).toBe(0);
    const later = await passAfter(world, ENI_TIMINGS.trimIdleAfterMs);
    expect(later.idleIps).toBe(3);
    expect(world.ec2.counts.get('UnassignPrivateIpAddresses')).toBe(1);
  });

  it('drains the pool of a node that left the cluster: its ENIs go, the primary ENI only loses what berth put there', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 12 } });
    const instanceId = world.addNode('node-a', 'c5.large');
    const theirs = world.ec2.occupyPrimary(instanceId, 1);
    await runEniPass(world.deps);
    expect(berthEnis(world)).toHaveLength(1);
    world.cluster.nodes.delete('node-a');
    const summary = await passAfter(world, 2 * MINUTE);
    expect(summary).toMatchObject({ poolsDraining: 1, enisDeleted: 1, poolsRemoved: 1 });
    expect(berthEnis(world)).toHaveLength(0);
    expect(await world.store.getPool('node-a')).toBeUndefined();
    const primary = primaryOf(world, instanceId);
    expect(primary?.attachment?.instanceId).toBe(instanceId);
    expect(primary?.secondaryIps).toEqual(theirs);
  });

  it('releases addresses of pods no longer on the node after the grace period', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    world.cluster.withPods(boundPod('g', 'alive', 'node-a'));
    const alive = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'alive' });
    const gone = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'gone' });
    const early = await passAfter(world, 10_000);
    expect(early.reconcile.podsReleased).toBe(0);
    const late = await passAfter(world, ENI_TIMINGS.reconcileGraceMs);
    expect(late.reconcile.podsReleased).toBe(1);
    expect((await world.store.getIp('node-a', gone.ip))?.state).toBe('free');
    expect((await world.store.getIp('node-a', alive.ip))?.state).toBe('assigned');
  });

  it('drops records of addresses EC2 no longer has, once past the grace', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    const held = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p' });
    world.cluster.withPods(boundPod('g', 'p', 'node-a'));
    // Somebody else unassigns it behind berth's back.
    await world.ec2.unassignPrivateIpAddresses({ eniId: held.eniId, ips: [held.ip] });
    const summary = await passAfter(world, ENI_TIMINGS.reconcileGraceMs);
    expect(summary.reconcile.recordsDropped).toBe(1);
    expect(await world.store.getIp('node-a', held.ip)).toBeUndefined();
    // The pod still uses it: that is said on the pod, not dropped silently.
    expect(summary.reconcile.podIpsLost).toBe(1);
    expect(world.cluster.events).toEqual([
      expect.objectContaining({
        involvedObject: { kind: 'Pod', namespace: 'g', name: 'p' },
        type: 'Warning',
        reason: 'PodIPLost',
      }),
    ]);
  });

  it('trusts a lagging Describe for nothing within the grace period', async () => {
    const world = eniWorld({ fake: { describeLagMs: 30_000 } });
    world.addNode('node-a');
    await runEniPass(world.deps);
    const summary = await passAfter(world, 5_000);
    expect(summary.reconcile).toMatchObject({
      recordsDropped: 0,
      podIpsLost: 0,
      enisAdopted: 0,
      unknownIpsUnassigned: 0,
    });
    expect((await world.store.loadNode('node-a')).ips).toHaveLength(8);
    expect(berthEnis(world)).toHaveLength(0);
  });
});

describe('runEniPass after a crash', () => {
  it('reuses the persisted ClientToken when the creator died after CreateNetworkInterface', async () => {
    const world = eniWorld();
    nodeWithFullPrimary(world, 'node-a');
    const crashing = { ...world.deps, ec2: crashAfter(world.deps.ec2, 'createNetworkInterface') };
    await expect(runEniPass(crashing)).resolves.toMatchObject({
      failures: [expect.objectContaining({ code: 'SimulatedCrashError' })],
    });
    expect(berthEnis(world)).toHaveLength(1);
    expect(berthEnis(world)[0]?.status).toBe('available');
    const summary = await passAfter(world, ENI_TIMINGS.intentGraceMs);
    expect(summary.reconcile.intentsRecovered).toBe(1);
    const enis = berthEnis(world);
    expect(enis).toHaveLength(1);
    expect(enis[0]?.attachment?.deleteOnTermination).toBe(true);
    const state = await world.store.loadNode('node-a');
    expect(state.intents).toHaveLength(0);
    expect(state.enis.filter((e) => !e.primary).map((e) => e.eniId)).toEqual([enis[0]?.eniId]);
    expect(state.ips.map((ip) => ip.ip).sort()).toEqual([...(enis[0]?.secondaryIps ?? [])].sort());
  });

  it('finishes an ENI whose creator died after AttachNetworkInterface', async () => {
    const world = eniWorld();
    nodeWithFullPrimary(world, 'node-a');
    const crashing = { ...world.deps, ec2: crashAfter(world.deps.ec2, 'attachNetworkInterface') };
    await runEniPass(crashing);
    await passAfter(world, ENI_TIMINGS.intentGraceMs);
    const enis = berthEnis(world);
    expect(enis).toHaveLength(1);
    expect(enis[0]?.attachment?.deleteOnTermination).toBe(true);
    // The primary ENI and the one berth made.
    expect((await world.store.loadNode('node-a')).enis).toHaveLength(2);
  });

  it('adopts a berth ENI attached to the instance but missing from the store', async () => {
    const world = eniWorld();
    nodeWithFullPrimary(world, 'node-a');
    await runEniPass(world.deps);
    const [eni] = berthEnis(world);
    // The store loses the ENI (a crash after attach and after the intent was removed by hand).
    const state = await world.store.loadNode('node-a');
    await world.store.commit('node-a', [
      { delete: { kind: 'eni', id: eni?.eniId ?? '' } },
      ...state.ips.map((ip) => ({ delete: { kind: 'ip' as const, id: ip.ip } })),
    ]);
    const summary = await passAfter(world, ENI_TIMINGS.adoptAfterMs);
    expect(summary.reconcile.enisAdopted).toBe(1);
    expect(summary.enisCreated).toBe(0);
    expect((await world.store.loadNode('node-a')).ips).toHaveLength(8);
  });

  it('finishes an unassign whose records were left draining', async () => {
    const world = eniWorld({ eni: { minIdle: 0, maxIdle: 2 } });
    const instanceId = world.addNode('node-a', 'c5.4xlarge');
    await runEniPass(world.deps);
    for (let i = 0; i < 6; i++) {
      world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` });
    }
    for (const ip of (await world.store.loadNode('node-a')).ips) {
      const [namespace = '', pod = ''] = (ip.pod ?? '/').split('/');
      await releaseIp(world.deps, 'node-a', ip.ip, { namespace, pod });
    }
    for (let i = 0; i < 6; i++) world.cluster.pods.delete(`g/p${i}`);
    world.clock.now += ENI_TIMINGS.trimIdleAfterMs;
    const crashing = {
      ...world.deps,
      ec2: crashAfter(world.deps.ec2, 'unassignPrivateIpAddresses'),
    };
    await runEniPass(crashing);
    const draining = (await world.store.loadNode('node-a')).ips.filter(
      (ip) => ip.state === 'draining',
    );
    expect(draining.length).toBeGreaterThan(0);
    await passAfter(world, ENI_TIMINGS.reconcileGraceMs);
    const after = await world.store.loadNode('node-a');
    expect(after.ips.filter((ip) => ip.state === 'draining')).toHaveLength(0);
    const inEc2 = new Set(
      world.ec2
        .allInterfaces()
        .filter((eni) => eni.attachment?.instanceId === instanceId)
        .flatMap((eni) => eni.secondaryIps),
    );
    expect(after.ips.every((ip) => inEc2.has(ip.ip))).toBe(true);
    expect(inEc2.size).toBe(after.ips.length);
  });
});

describe.each([
  ['the primary ENI', false],
  ['an ENI berth created', true],
])('runEniPass after an assign on %s that landed unseen', (_, onBerthEni) => {
  /**
   * A pool whose last assign landed in EC2 (4 addresses) and died before it was recorded, and
   * the ENI it landed on.
   */
  async function crashedAssign() {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 4 } });
    const instanceId = onBerthEni
      ? nodeWithFullPrimary(world, 'node-a', 'c5.4xlarge')
      : world.addNode('node-a', 'c5.4xlarge');
    const theirs = new Set(primaryOf(world, instanceId)?.secondaryIps);
    /** The pod addresses EC2 shows on the ENI the assigns go to, another owner's left out. */
    const landedOn = () =>
      (onBerthEni ? berthEnis(world)[0] : primaryOf(world, instanceId))?.secondaryIps.filter(
        (ip) => onBerthEni || !theirs.has(ip),
      ) ?? [];
    await runEniPass(world.deps);
    for (let i = 0; i < 4; i++) {
      world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` });
    }
    const crashing = { ...world.deps, ec2: crashAfter(world.deps.ec2, 'assignPrivateIpAddresses') };
    world.clock.now += MINUTE;
    const crashed = await runEniPass(crashing);
    expect(crashed.failures.map((f) => f.code)).toContain('SimulatedCrashError');
    expect(landedOn()).toHaveLength(8);
    expect((await world.store.loadNode('node-a')).ips).toHaveLength(4);
    return { world, landedOn };
  }

  it('converges when an assign is retried after one that landed unseen: reads the ENI back and adopts, assigns no more', async () => {
    const { world, landedOn } = await crashedAssign();
    const assignsBefore = world.ec2.counts.get('AssignPrivateIpAddresses') ?? 0;
    const retried = await passAfter(world, 10_000);
    expect(retried).toMatchObject({ ipsAdopted: 4, ipsAssigned: 0 });
    expect(world.ec2.counts.get('AssignPrivateIpAddresses') ?? 0).toBe(assignsBefore);
    expect(retried.reconcile.unknownIpsUnassigned).toBe(0);
    const stored = (await world.store.loadNode('node-a')).ips.map((ip) => ip.ip).sort();
    expect([...landedOn()].sort()).toEqual(stored);
    expect(stored).toHaveLength(8);
    // The mark is cleared with the records: later passes neither read the ENI back nor unassign.
    expect((await world.store.loadNode('node-a')).enis.map((eni) => eni.mutatingAt)).toEqual(
      onBerthEni ? [0, 0] : [0],
    );
    const later = await passAfter(world, ENI_TIMINGS.reconcileGraceMs);
    expect(later.reconcile.unknownIpsUnassigned).toBe(0);
    expect(landedOn()).toHaveLength(8);
  });

  it('unassigns addresses an assign left in EC2 but not in the store once the grace is over, when nothing assigns there again', async () => {
    const { world, landedOn } = await crashedAssign();
    // The pods go: the pool has idle addresses again, so no assign follows on that ENI.
    for (let i = 0; i < 4; i++) {
      world.cluster.pods.delete(`g/p${i}`);
      await releaseIp(world.deps, 'node-a', (await podIp(world, `g/p${i}`)) ?? '', {
        namespace: 'g',
        pod: `p${i}`,
      });
    }
    // Past the released addresses' cooldown, inside the assign's grace.
    const early = await passAfter(world, 70_000);
    expect(early.ipsAssigned + early.ipsAdopted).toBe(0);
    expect(early.reconcile.unknownIpsUnassigned).toBe(0);
    const late = await passAfter(world, ENI_TIMINGS.reconcileGraceMs);
    expect(late.reconcile.unknownIpsUnassigned).toBe(4);
    const stored = (await world.store.loadNode('node-a')).ips.map((ip) => ip.ip).sort();
    expect([...landedOn()].sort()).toEqual(stored);
  });
});

describe('runEniPass under EC2 pressure', () => {
  it('converges when half of all EC2 calls are throttled', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 6 }, seed: 7 });
    for (let i = 0; i < 12; i++) {
      nodeWithFullPrimary(world, `node-${i}`, i % 2 ? 'c5.large' : 'm5.xlarge');
    }
    world.ec2.throttleRate = 0.5;
    let passes = 0;
    let settled = false;
    while (!settled && passes < 15) {
      const before = [...world.ec2.counts.values()].reduce((a, b) => a + b, 0);
      const summary = await passAfter(world, MINUTE);
      const calls = [...world.ec2.counts.values()].reduce((a, b) => a + b, 0) - before;
      // Bounded retries: every call is tried at most maxAttempts (4) times per pass.
      expect(calls).toBeLessThan(400);
      passes++;
      settled = summary.pools === 12 && summary.idleIps === 12 * 6 && summary.failures.length === 0;
    }
    expect(settled).toBe(true);
    expect(world.ec2.throttled).toBeGreaterThan(0);
    // No duplicate ENIs from retried creates: exactly one berth ENI per node.
    expect(berthEnis(world)).toHaveLength(12);
  });

  it('marks an exhausted subnet and stops asking it until the mark expires', async () => {
    // A /27 has 27 usable addresses; three primary ENIs take 3, two pools of 10 take 20.
    const world = eniWorld({ subnetCidr: '10.0.0.0/27', eni: { minIdle: 2, maxIdle: 10 } });
    for (let i = 0; i < 3; i++) world.addNode(`node-${i}`, 'c5.4xlarge');
    const first = await runEniPass(world.deps);
    expect(first.exhaustedSubnets).toEqual([SUBNET_ID]);
    expect(world.ec2.freeAddresses(SUBNET_ID)).toBeLessThan(9);
    const creates = world.ec2.counts.get('CreateNetworkInterface') ?? 0;
    const assigns = world.ec2.counts.get('AssignPrivateIpAddresses') ?? 0;
    await passAfter(world, 30_000);
    expect(world.ec2.counts.get('CreateNetworkInterface') ?? 0).toBe(creates);
    expect(world.ec2.counts.get('AssignPrivateIpAddresses') ?? 0).toBe(assigns);
    await expect(assignIp(world.deps, 'node-2', { namespace: 'g', pod: 'late' })).rejects.toThrow(
      /subnet subnet-0a .* has no free addresses/,
    );
  });
});

describe('handleInstanceStateChange', () => {
  it('removes the pool of a terminated instance, whose ENIs EC2 deletes with it', async () => {
    const world = eniWorld();
    const instanceId = nodeWithFullPrimary(world, 'node-a');
    nodeWithFullPrimary(world, 'node-b');
    await runEniPass(world.deps);
    expect(berthEnis(world)).toHaveLength(2);
    world.ec2.terminateInstance(instanceId);
    const summary = await handleInstanceStateChange(world.deps, {
      instanceId,
      state: 'terminated',
    });
    expect(summary.poolsRemoved).toBe(1);
    expect(await world.store.getPool('node-a')).toBeUndefined();
    expect(await world.store.getPool('node-b')).toBeDefined();
    expect(berthEnis(world)).toHaveLength(1);
  });

  it("makes no EC2 call for an instance that is none of this cluster's (another cluster's node)", async () => {
    const world = eniWorld();
    world.addNode('node-a');
    await runEniPass(world.deps);
    const before = [...world.ec2.counts.values()].reduce((a, b) => a + b, 0);
    const summary = await handleInstanceStateChange(world.deps, {
      instanceId: 'i-0ffffffffffffffff',
      state: 'running',
    });
    expect(summary.poolsCreated + summary.poolsRemoved).toBe(0);
    expect([...world.ec2.counts.values()].reduce((a, b) => a + b, 0)).toBe(before);
    expect(await world.store.getPool('node-a')).toBeDefined();
  });

  it("tells a pass over no pool (nothing of this cluster's to record) from one that removed a pool", async () => {
    const world = eniWorld();
    const instanceId = world.addNode('node-a');
    await runEniPass(world.deps);
    const elsewhere = await handleInstanceStateChange(world.deps, {
      instanceId: 'i-0ffffffffffffffff',
      state: 'terminated',
    });
    expect(passedNoPool(elsewhere)).toBe(true);
    world.ec2.terminateInstance(instanceId);
    const own = await handleInstanceStateChange(world.deps, { instanceId, state: 'terminated' });
    expect(passedNoPool(own)).toBe(false);
    // A new node of this cluster whose pool EC2 kept from being made: a failure, not "no pool".
    const newcomer = world.addNode('node-b');
    world.ec2.failNext('DescribeInstances', 'UnauthorizedOperation');
    const failed = await handleInstanceStateChange(world.deps, {
      instanceId: newcomer,
      state: 'running',
    });
    expect(failed.pools).toBe(0);
    expect(passedNoPool(failed)).toBe(false);
  });

  it('reads the EventBridge detail of a state-change notification', () => {
    expect(
      parseInstanceStateChange({ 'instance-id': 'i-0abc123', state: 'shutting-down' }),
    ).toEqual({ instanceId: 'i-0abc123', state: 'shutting-down' });
    expect(parseInstanceStateChange({ 'instance-id': 'x', state: 'running' })).toBeUndefined();
    expect(parseInstanceStateChange('nope')).toBeUndefined();
  });
});

describe('leaked ENI sweep', () => {
  it('deletes available berth ENIs older than the grace, tags untagged ones, spares young ones', async () => {
    const world = eniWorld();
    const now = world.clock.now;
    const make = async (createdAt: number | undefined, token: string) =>
      world.ec2.createNetworkInterface({
        subnetId: SUBNET_ID,
        securityGroupIds: ['sg-1'],
        secondaryIpCount: 2,
        description: 'leak',
        tags: [
          { key: BERTH_TAGS.cluster, value: 'test' },
          ...(createdAt === undefined
            ? []
            : [{ key: BERTH_TAGS.createdAt, value: new Date(createdAt).toISOString() }]),
        ],
        clientToken: token,
      });
    const old = await make(now - ENI_TIMINGS.leakedEniGraceMs - 1, 'old');
    const young = await make(now - 1_000, 'young');
    const untagged = await make(undefined, 'untagged');
    const foreign = await world.ec2.createNetworkInterface({
      subnetId: SUBNET_ID,
      securityGroupIds: ['sg-1'],
      secondaryIpCount: 0,
      description: 'not berth',
      tags: [{ key: BERTH_TAGS.cluster, value: 'another-cluster' }],
      clientToken: 'foreign',
    });
    const summary = await runEniPass(world.deps);
    expect(summary).toMatchObject({ leakedEnisDeleted: 1, enisTagged: 1 });
    expect(world.ec2.networkInterface(old.eniId)).toBeUndefined();
    expect(world.ec2.networkInterface(young.eniId)).toBeDefined();
    expect(world.ec2.networkInterface(foreign.eniId)).toBeDefined();
    expect(
      tagValue(world.ec2.networkInterface(untagged.eniId)?.tags ?? [], BERTH_TAGS.createdAt),
    ).toBeDefined();
  });

  it('deletes the ENI a crash left detached from a terminated instance', async () => {
    const world = eniWorld();
    const instanceId = nodeWithFullPrimary(world, 'node-a');
    // Crash before DeleteOnTermination: the ENI survives termination as `available`.
    const crashing = { ...world.deps, ec2: crashAfter(world.deps.ec2, 'attachNetworkInterface') };
    await runEniPass(crashing);
    world.ec2.terminateInstance(instanceId);
    world.cluster.nodes.delete('node-a');
    await passAfter(world, MINUTE);
    expect(berthEnis(world).map((eni) => eni.status)).toEqual(['available']);
    await passAfter(world, ENI_TIMINGS.leakedEniGraceMs);
    expect(berthEnis(world)).toHaveLength(0);
  });
});

describe('SimulatedCrashError', () => {
  it('is what the crash wrapper throws', () => {
    expect(new SimulatedCrashError('x').name).toBe('SimulatedCrashError');
  });
});

describe('runEniPass device indexes', () => {
  it('gives each ENI of one plan its own device index', async () => {
    // Describe lags: the second create cannot learn the first one's index from EC2.
    const world = eniWorld({ eni: { minIdle: 12, maxIdle: 18 }, fake: { describeLagMs: 30_000 } });
    nodeWithFullPrimary(world, 'node-a', 'c5.large');
    const summary = await runEniPass(world.deps);
    expect(summary.failures).toEqual([]);
    expect(summary.enisCreated).toBe(2);
    const indexes = berthEnis(world).map((eni) => eni.attachment?.deviceIndex);
    expect(indexes.sort()).toEqual([1, 2]);
  });
});

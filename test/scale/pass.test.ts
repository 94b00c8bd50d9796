import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../shared/lease/errors.js';
import { KarpenterNodePool } from '../../shared/node-pool/karpenter.js';
import type { NodePool } from '../../shared/node-pool/node-pool.js';
import { NoNodePool } from '../../shared/node-pool/none.js';
import { runScalePass, SCALE_LEASE_NAME } from '../../shared/scale/pass.js';
import { CORDONED_AT, REMOVAL_STARTED_AT } from '../../shared/vocabulary/labels.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { berthCordoned, gameServers, node, passConfig, pod, T0 } from './builders.js';

const MINUTE = 60_000;

function setup(
  nodes: V1Node[],
  pods: V1Pod[] = [],
  pool: NodePool = new FakeNodePool(nodes.length),
) {
  let now = T0;
  const cluster = new FakeClusterApi().withNodes(...nodes).withPods(...pods);
  const lease = new FakeLease(() => now);
  const memory = new InProcessScaleMemory();
  const deps = { cluster, pool, lease, now: () => now, holder: 'pass-1', memory };
  return {
    cluster,
    pool,
    lease,
    deps,
    memory,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** A pass that keeps no buffer: every drained node is the removals'. */
const drainPass = (deps: Parameters<typeof runScalePass>[0]) =>
  runScalePass(deps, passConfig({ bufferGameServers: 0 }), { dryRun: false });

/** Whether the node carries berth's removal mark. */
const marked = (cluster: FakeClusterApi, name: string): boolean =>
  cluster.nodes.get(name)?.metadata?.annotations?.[REMOVAL_STARTED_AT] !== undefined;

describe('runScalePass', () => {
  it('plans without changing anything in a dry run', async () => {
    const pool = new FakeNodePool(3);
    const { cluster, lease, deps } = setup(
      [node('a'), node('b'), berthCordoned('c', T0 - 10 * MINUTE)],
      [],
      pool,
    );
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 10 }), {
      dryRun: true,
    });
    expect(report.dryRun).toBe(true);
    expect(report.actions.map((a) => `${a.type} ${a.node}`)).toEqual(['cordon a', 'delete c']);
    expect(cluster.mutations()).toEqual([]);
    expect(pool.mutations()).toEqual([]);
    expect(lease.calls).toEqual([]);
  });

  it('cordons with a compare-and-swap patch, records cordoned-at and an Event', async () => {
    const { cluster, deps } = setup([node('a'), node('b')]);
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 10 }), {
      dryRun: false,
    });
    expect(report.actions).toEqual([expect.objectContaining({ type: 'cordon', node: 'a' })]);
    const a = cluster.nodes.get('a');
    expect(a?.spec?.unschedulable).toBe(true);
    expect(a?.metadata?.annotations?.[CORDONED_AT]).toBe('2026-01-01T00:00:00.000Z');
    const patch = cluster.calls.find((c) => c.method === 'patchNode');
    expect(patch?.args[1]).toEqual(
      expect.arrayContaining([{ op: 'test', path: '/metadata/resourceVersion', value: '1' }]),
    );
    expect(cluster.events).toEqual([
      expect.objectContaining({
        involvedObject: { kind: 'Node', name: 'a', uid: 'uid-a' },
        type: 'Normal',
        reason: 'BerthCordoned',
        component: 'berth-scale',
      }),
    ]);
  });

  it('leaves a node changed since the listing for the next pass, and still acts on the others', async () => {
    const nodes = ['a', 'b', 'c'].map((n) => node(n));
    const { cluster, deps } = setup(nodes);
    let touched = false;
    cluster.afterList = () => {
      if (!touched) cluster.touch('a');
      touched = true;
    };
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 10 }), {
      dryRun: false,
    });
    expect(report.failures.map((f) => f.action.node)).toEqual(['a']);
    expect(report.actions.map((a) => a.node)).toEqual(['b']);
    expect(cluster.nodes.get('a')?.spec?.unschedulable).toBeUndefined();
    expect(cluster.events.map((e) => [e.involvedObject.name, e.type])).toEqual([
      ['a', 'Warning'],
      ['b', 'Normal'],
    ]);
  });

  it('uncordons by removing the cordon and berth’s annotation', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 30_000)],
      gameServers('a', 40),
    );
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 5 }), {
      dryRun: false,
    });
    expect(report.actions.map((a) => `${a.type} ${a.node}`)).toEqual(['uncordon b']);
    const b = cluster.nodes.get('b');
    expect(b?.spec?.unschedulable).toBeUndefined();
    expect(b?.metadata?.annotations?.[CORDONED_AT]).toBeUndefined();
  });

  it('does not uncordon a node someone re-cordoned in the meantime', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 30_000)],
      gameServers('a', 40),
    );
    cluster.afterList = () => {
      const b = cluster.nodes.get('b');
      if (b?.metadata?.annotations) b.metadata.annotations[CORDONED_AT] = '2026-01-01T00:00:01Z';
    };
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 5 }), {
      dryRun: false,
    });
    expect(report.failures.map((f) => f.action.type)).toEqual(['uncordon']);
    expect(cluster.nodes.get('b')?.spec?.unschedulable).toBe(true);
  });

  it('grows the pool and says what the pool did', async () => {
    const pool = new FakeNodePool(1);
    const { deps } = setup([node('a')], gameServers('a', 40), pool);
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 10 }), {
      dryRun: false,
    });
    expect(report.actions).toEqual([
      expect.objectContaining({
        type: 'grow',
        from: 1,
        to: 2,
        reason: expect.stringContaining('desired 1 → 2'),
      }),
    ]);
    expect(pool.mutations()).toEqual([{ method: 'growTo', size: 2 }]);
  });

  it('removes a drained node in one pass: marks it, looks at its pods, releases its instance, then deletes the Node', async () => {
    const pool = new FakeNodePool(2);
    const { cluster, deps } = setup([node('a'), berthCordoned('b', T0 - 10 * MINUTE)], [], pool);
    const order: string[] = [];
    const listPods = cluster.listPods.bind(cluster);
    cluster.listPods = (options) => {
      if (options?.fieldSelector === 'spec.nodeName=b') {
        order.push(`look (marked: ${marked(cluster, 'b')})`);
      }
      return listPods(options);
    };
    const release = pool.releaseInstance.bind(pool);
    pool.releaseInstance = async (n) => {
      order.push(`release (marked: ${marked(cluster, 'b')})`);
      return release(n);
    };
    const deleteNode = cluster.deleteNode.bind(cluster);
    cluster.deleteNode = async (name) => {
      order.push(`delete ${name}`);
      return deleteNode(name);
    };
    const report = await drainPass(deps);
    expect(order).toEqual(['look (marked: true)', 'release (marked: true)', 'delete b']);
    expect(pool.calls).toContainEqual({
      method: 'releaseInstance',
      node: { name: 'b', providerId: 'aws:///us-east-1a/i-b0000000' },
    });
    expect(report.actions).toEqual([
      expect.objectContaining({
        type: 'delete',
        node: 'b',
        reason: expect.stringContaining('; Node deleted'),
      }),
    ]);
    expect(cluster.nodes.has('b')).toBe(false);
    expect(pool.desiredSize).toBe(1);
    expect(cluster.events.map((e) => e.reason)).toEqual(['BerthNodeRemoved']);
  });

  it('waits until the cordon is a commit window old, for game servers admitted before it', async () => {
    const pool = new FakeNodePool(2);
    const { cluster, deps, advance } = setup(
      [node('a'), berthCordoned('b', T0 - 10_000)],
      [],
      pool,
    );
    const config = passConfig({ bufferGameServers: 0, shutdownDelaySeconds: 0 });
    const early = await runScalePass(deps, config, { dryRun: false });
    expect(early.actions).toEqual([]);
    expect(early.notes).toContainEqual({
      node: 'b',
      reason: expect.stringContaining('waiting until the cordon is 30s old'),
    });
    advance(20_000);
    await runScalePass(deps, config, { dryRun: false });
    expect(cluster.nodes.has('b')).toBe(false);
  });

  it('finishes on the next pass a removal whose instance release failed', async () => {
    const pool = new FakeNodePool(2);
    const { cluster, deps, advance } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [],
      pool,
    );
    pool.failures.releaseInstance = [new Error('ScalingActivityInProgress')];
    const failed = await drainPass(deps);
    expect(failed.failures).toEqual([
      expect.objectContaining({ action: expect.objectContaining({ type: 'delete', node: 'b' }) }),
    ]);
    expect(marked(cluster, 'b')).toBe(true);
    advance(MINUTE);
    const next = await drainPass(deps);
    expect(next.actions).toEqual([
      expect.objectContaining({
        type: 'delete',
        node: 'b',
        reason: expect.stringContaining('finishing'),
      }),
    ]);
    expect(cluster.nodes.has('b')).toBe(false);
    expect(pool.desiredSize).toBe(1);
  });

  it('finishes on the next pass a removal whose Node delete failed, releasing again (idempotent)', async () => {
    const pool = new FakeNodePool(2);
    const { cluster, deps, advance } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [],
      pool,
    );
    cluster.failNext('deleteNode:b', new Error('connection reset'));
    const failed = await drainPass(deps);
    expect(failed.failures).toHaveLength(1);
    expect(pool.desiredSize).toBe(1);
    advance(MINUTE);
    await drainPass(deps);
    expect(cluster.nodes.has('b')).toBe(false);
    expect(pool.desiredSize).toBe(1);
    expect(pool.mutations().filter((c) => c.method === 'releaseInstance')).toHaveLength(2);
  });

  it('stops a removal when a game server came to the node before the look, and takes its mark back', async () => {
    const pool = new FakeNodePool(2);
    const { cluster, deps } = setup([node('a'), berthCordoned('b', T0 - 10 * MINUTE)], [], pool);
    // A game server admitted for the node before the pass listed the pods, stored only after the
    // listing: the look after the mark finds it.
    const listPods = cluster.listPods.bind(cluster);
    cluster.listPods = (options) => {
      if (options?.fieldSelector === 'spec.nodeName=b') {
        cluster.withPods(pod('late', { node: 'b' }));
        cluster.listPods = listPods;
      }
      return listPods(options);
    };
    const report = await drainPass(deps);
    expect(report.actions).toEqual([
      expect.objectContaining({
        type: 'delete',
        node: 'b',
        reason: expect.stringContaining('removal stopped: games/late bound to the node'),
      }),
    ]);
    expect(pool.mutations()).toEqual([]);
    expect(marked(cluster, 'b')).toBe(false);
    expect(cluster.nodes.get('b')?.spec?.unschedulable).toBe(true);
  });

  it('takes back the mark of a removal left half-done when a game server runs there now', async () => {
    const pool = new FakeNodePool(2);
    const { cluster, deps } = setup(
      [
        node('a'),
        berthCordoned('b', T0 - 10 * MINUTE, {
          annotations: { [REMOVAL_STARTED_AT]: new Date(T0 - MINUTE).toISOString() },
        }),
      ],
      [pod('late', { node: 'b' })],
      pool,
    );
    const report = await drainPass(deps);
    expect(report.actions).toEqual([
      expect.objectContaining({
        type: 'withdraw',
        node: 'b',
        reason: expect.stringContaining('but 1 game server(s) run there now: mark taken back'),
      }),
    ]);
    expect(pool.mutations()).toEqual([]);
    expect(marked(cluster, 'b')).toBe(false);
  });

  it('does nothing while another pass holds the lease', async () => {
    const { cluster, lease, deps } = setup([node('a'), node('b')]);
    await lease.acquireLease(SCALE_LEASE_NAME, 'pass-0', 120_000);
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 10 }), {
      dryRun: false,
    });
    expect(report.leaseHeldBy).toEqual({ holder: 'pass-0', expiresAtMs: T0 + 120_000 });
    expect(report.actions).toEqual([]);
    expect(cluster.calls).toEqual([]);
  });

  it('releases the lease after the pass, and when listing fails', async () => {
    const { cluster, lease, deps } = setup([node('a')]);
    await runScalePass(deps, passConfig(), { dryRun: false });
    expect(lease.held.size).toBe(0);
    cluster.listNodes = () => {
      throw new Error('apiserver unavailable');
    };
    await expect(runScalePass(deps, passConfig(), { dryRun: false })).rejects.toThrow(
      'apiserver unavailable',
    );
    expect(lease.held.size).toBe(0);
  });

  it('stops before acting when the lease was lost', async () => {
    const { cluster, lease, deps } = setup([node('a'), node('b')]);
    lease.renewLease = async (name, holder) => {
      throw new LeaseLostError(name, holder);
    };
    await expect(
      runScalePass(deps, passConfig({ bufferGameServers: 10 }), { dryRun: false }),
    ).rejects.toThrow(LeaseLostError);
    expect(cluster.mutations()).toEqual([]);
  });

  it('keeps an action whose Event could not be recorded', async () => {
    const { cluster, deps } = setup([node('a'), node('b')]);
    cluster.failNext('createEvent', new Error('events forbidden'));
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 10 }), {
      dryRun: false,
    });
    expect(report.actions.map((a) => a.type)).toEqual(['cordon']);
    expect(report.failures).toEqual([]);
    expect(report.notes).toContainEqual({
      node: 'a',
      reason: 'Event not recorded: events forbidden',
    });
  });

  it('with node pool none, cordons and uncordons only and reports the removal and instance change', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      gameServers('a', 40),
      new NoNodePool(),
    );
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 50, maxNodes: 5 }), {
      dryRun: false,
    });
    expect(report.actions.map((a) => [a.type, a.reason.split('; ').at(-1)])).toEqual([
      ['uncordon', expect.stringContaining('free slot')],
      ['grow', '40 slot(s) per new node'],
    ]);
    // Growth the pool only reports says so first: nothing grew.
    expect(report.actions[1]?.reason).toMatch(
      /^not grown: node pool none: would ask for 3 node\(s\); /,
    );
    const drained = setup([node('a'), berthCordoned('b', T0 - 10 * MINUTE)], [], new NoNodePool());
    const removal = await runScalePass(drained.deps, passConfig({ bufferGameServers: 0 }), {
      dryRun: false,
    });
    // The action keeps the contract's type, and its reason says first that nothing was deleted.
    expect(removal.actions[0]?.type).toBe('delete');
    expect(removal.actions[0]?.reason).toMatch(
      /^not deleted: node pool none deletes no Node and no instance \(node pool none: would terminate instance i-b0000000 and decrement the desired size, and would delete Node b\); the node stays cordoned; cordoned by berth at /,
    );
    expect(drained.cluster.nodes.get('b')?.spec?.unschedulable).toBe(true);
    expect(cluster.nodes.size).toBe(2);
  });

  it('with Karpenter, deletes the Node and leaves the instance to Karpenter', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [],
      new KarpenterNodePool('games'),
    );
    const report = await runScalePass(
      deps,
      passConfig({ bufferGameServers: 0, nodePool: { type: 'karpenter', name: 'games' } }),
      {
        dryRun: false,
      },
    );
    const removal = report.actions.find((a) => a.type === 'delete');
    expect(removal?.reason).toContain('Karpenter terminates the instance of b');
    // The pass also sets the buffer's placeholders (none here: the buffer is 0).
    expect(cluster.mutations().map((c) => c.method)).toEqual([
      'scaleDeployment',
      'patchNode',
      'deleteNode',
      'createEvent',
    ]);
    expect(cluster.replicas.get('berth-buffer/berth-buffer')).toBe(0);
  });
});

describe('a triggered scale pass', () => {
  it('only scales up, and leaves the scheduled passes their arrivals and surplus timing', async () => {
    // b is empty and a surplus (cordoned by a scheduled pass); c was cordoned by berth.
    const pool = new FakeNodePool(3);
    const { cluster, deps, memory } = setup(
      [node('a'), node('b'), berthCordoned('c', T0 - 10 * MINUTE)],
      gameServers('a', 30),
      pool,
    );
    const saved = {
      ...(await memory.load()),
      lastPassAtMs: T0 - 20_000,
      arrivals: [{ atMs: T0 - 20_000, count: 3 }],
      surplusSinceMs: T0 - 5 * MINUTE,
    };
    await memory.save(saved);
    const heard: number[] = [];
    const short = await runScalePass(deps, passConfig({ bufferGameServers: 60 }), {
      dryRun: false,
      triggered: true,
      onPlanned: (tally) => heard.push(tally.free + tally.coming - tally.pending),
    });
    // 10 + 40 free, short of 60: c uncordoned; nothing cordoned or removed.
    expect(short.actions.map((a) => `${a.type} ${a.node ?? ''}`.trim())).toEqual(['uncordon c']);
    expect(heard).toEqual([50]);
    expect(cluster.nodes.get('c')?.spec?.unschedulable).toBeFalsy();
    const after = await memory.load();
    expect(after.arrivals).toEqual(saved.arrivals);
    expect(after.lastPassAtMs).toBe(saved.lastPassAtMs);
    // It scaled up: the surplus is over.
    expect(after.surplusSinceMs).toBeUndefined();

    // With slots to spare, a triggered pass changes nothing, where a scheduled one cordons.
    const spare = await runScalePass(deps, passConfig({ bufferGameServers: 10 }), {
      dryRun: false,
      triggered: true,
    });
    expect(spare.actions).toEqual([]);
    expect(pool.mutations()).toEqual([]);
  });
});

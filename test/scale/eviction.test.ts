import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { AgonesGameServer } from '../../shared/k8s/cluster-api.js';
import { runScalePass } from '../../shared/scale/pass.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { agonesServer, berthCordoned, node, passConfig, statefulServer, T0 } from './builders.js';

const MINUTE = 60_000;

/** The pass config of these tests: a buffer of 5. */
const scaleConfig = (scale: Record<string, unknown> = {}) =>
  passConfig({ bufferGameServers: 5, ...scale });

function setup(nodes: V1Node[], pods: V1Pod[], gameServers: AgonesGameServer[] = []) {
  let now = T0;
  const cluster = new FakeClusterApi()
    .withNodes(...nodes)
    .withPods(...pods)
    .withGameServers(...gameServers);
  const pool = new FakeNodePool(nodes.length);
  const deps = {
    cluster,
    pool,
    lease: new FakeLease(() => now),
    now: () => now,
    holder: 'pass-1',
    memory: new InProcessScaleMemory(),
  };
  return {
    cluster,
    deps,
    advance(ms: number) {
      now += ms;
    },
  };
}

const moves = (cluster: FakeClusterApi) =>
  cluster.calls.flatMap((c) =>
    c.method === 'evictPod' || c.method === 'deleteGameServer'
      ? [`${c.method} ${c.args[0]}/${c.args[1]}`]
      : [],
  );

describe('the scale pass moves ready game servers off nodes berth cordoned', () => {
  it('evicts the ready ones through the Eviction API under their listed version, never an allocated one', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [
        statefulServer('r1', 'b', 'ready'),
        statefulServer('r2', 'b', 'ready'),
        statefulServer('p1', 'b', 'allocated'),
      ],
    );
    const report = await runScalePass(deps, scaleConfig(), { dryRun: false });
    expect(report.failures).toEqual([]);
    expect(report.actions.filter((a) => a.type === 'evict')).toEqual([
      expect.objectContaining({ type: 'evict', node: 'b', gameServer: 'games/r1' }),
      expect.objectContaining({ type: 'evict', node: 'b', gameServer: 'games/r2' }),
    ]);
    expect(cluster.calls).toContainEqual({
      method: 'evictPod',
      args: ['games', 'r1', { uid: 'uid-r1', resourceVersion: '7' }],
    });
    expect(moves(cluster)).toEqual(['evictPod games/r1', 'evictPod games/r2']);
    // The allocated one still holds the node.
    expect(cluster.nodes.has('b')).toBe(true);
    expect(report.actions.some((a) => a.type === 'delete')).toBe(false);
  });

  it('skips a game server a PodDisruptionBudget protects now, without failing', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [statefulServer('r1', 'b', 'ready')],
    );
    cluster.disruptionBudgetRefuses.add('games/r1');
    const report = await runScalePass(deps, scaleConfig(), { dryRun: false });
    expect(report.failures).toEqual([]);
    expect(report.actions.find((a) => a.type === 'evict')?.reason).toContain(
      'refused by a PodDisruptionBudget: not now',
    );
    expect([...cluster.pods.values()].map((p) => p.metadata?.name)).toEqual(['r1']);
  });

  it('deletes the GameServer of a ready Agones server instead of its pod, and removes the node once its last allocated server ends', async () => {
    const ready = agonesServer('gs-ready', 'b', 'Ready');
    const playing = agonesServer('gs-playing', 'b', 'Allocated');
    const reserved = agonesServer('gs-reserved', 'b', 'Reserved');
    const { cluster, deps, advance } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [ready.pod, playing.pod, reserved.pod],
      [ready.gameServer, playing.gameServer, reserved.gameServer],
    );
    const first = await runScalePass(deps, scaleConfig(), { dryRun: false });
    expect(first.failures).toEqual([]);
    expect(moves(cluster)).toEqual(['deleteGameServer games/gs-ready']);
    expect(cluster.calls).toContainEqual({
      method: 'deleteGameServer',
      args: ['games', 'gs-ready', { uid: 'gs-gs-ready', resourceVersion: '42' }],
    });
    expect(cluster.nodes.has('b')).toBe(true);

    // The match ends: Agones shuts the allocated and reserved servers down.
    for (const [key, p] of cluster.pods) if (p.spec?.nodeName === 'b') cluster.pods.delete(key);
    cluster.gameServers.clear();
    advance(MINUTE);
    const second = await runScalePass(deps, scaleConfig(), { dryRun: false });
    expect(second.actions.map((a) => `${a.type} ${a.node}`)).toContain('delete b');
    expect(cluster.nodes.has('b')).toBe(false);
  });

  it('leaves a GameServer allocated since the listing alone: the apiserver refuses the stale precondition', async () => {
    const ready = agonesServer('gs-ready', 'b', 'Ready');
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [ready.pod],
      [ready.gameServer],
    );
    let lists = 0;
    cluster.afterList = () => {
      // Once the pass has listed nodes, pods and GameServers, a match allocates the server.
      if (++lists === 3) {
        const [key, gs] = [...cluster.gameServers][0] ?? [];
        if (key && gs?.metadata) {
          cluster.gameServers.set(key, {
            ...gs,
            metadata: { ...gs.metadata, resourceVersion: '43' },
            status: { state: 'Allocated' },
          });
        }
      }
    };
    const report = await runScalePass(deps, scaleConfig(), { dryRun: false });
    expect(report.actions.find((a) => a.type === 'evict')?.reason).toContain(
      'changed since it was listed',
    );
    expect(cluster.gameServers.size).toBe(1);
  });

  it('moves at most scale.drain.evictionsPerPass a pass', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      ['r1', 'r2', 'r3'].map((name) => statefulServer(name, 'b', 'ready')),
    );
    const report = await runScalePass(deps, scaleConfig({ drain: { evictionsPerPass: 2 } }), {
      dryRun: false,
    });
    expect(moves(cluster)).toEqual(['evictPod games/r1', 'evictPod games/r2']);
    expect(report.notes.map((n) => n.reason)).toContainEqual(
      expect.stringContaining('at most 2 a pass'),
    );
  });

  it('evicts a ready pod no controller owns, saying nothing makes it again', async () => {
    const bare = statefulServer('r1', 'b', 'ready');
    bare.metadata = { ...bare.metadata, ownerReferences: [] };
    const { cluster, deps } = setup([node('a'), berthCordoned('b', T0 - 10 * MINUTE)], [bare]);
    const report = await runScalePass(deps, scaleConfig(), { dryRun: false });
    expect(moves(cluster)).toEqual(['evictPod games/r1']);
    expect(report.actions.find((a) => a.type === 'evict')?.reason).toContain(
      'nothing makes it again',
    );
  });

  it('moves none with evictionsPerPass 0', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [statefulServer('r1', 'b', 'ready')],
    );
    await runScalePass(deps, scaleConfig({ drain: { evictionsPerPass: 0 } }), { dryRun: false });
    expect(moves(cluster)).toEqual([]);
  });

  it('moves only while the capacity left keeps the buffer with the replacements placed', async () => {
    // Node a offers 7 slots of 100m; the buffer is 5: room for two replacements.
    const { cluster, deps } = setup(
      [node('a', { cpu: '0.7' }), berthCordoned('b', T0 - 10 * MINUTE)],
      ['r1', 'r2', 'r3'].map((name) => statefulServer(name, 'b', 'ready')),
    );
    const report = await runScalePass(deps, scaleConfig(), { dryRun: false });
    expect(moves(cluster)).toEqual(['evictPod games/r1', 'evictPod games/r2']);
    expect(report.notes.map((n) => n.reason)).toContainEqual(
      expect.stringContaining('above the buffer of 5'),
    );
  });

  it('counts the ready servers on schedulable nodes toward the buffer, and places replacements only in free slots', async () => {
    // Node a: 7 slots, 3 taken by ready servers: 4 free. With the 3 ready, a buffer of 5 leaves
    // room for two moves (4 free slots alone would leave none).
    const pods = [
      ...['a1', 'a2', 'a3'].map((name) => statefulServer(name, 'a', 'ready')),
      ...['r1', 'r2', 'r3', 'r4', 'r5'].map((name) => statefulServer(name, 'b', 'ready')),
    ];
    const nodes = () => [node('a', { cpu: '0.7' }), berthCordoned('b', T0 - 10 * MINUTE)];
    const buffered = setup(nodes(), pods);
    await runScalePass(buffered.deps, scaleConfig(), { dryRun: false });
    expect(moves(buffered.cluster)).toEqual(['evictPod games/r1', 'evictPod games/r2']);
    // No buffer: the 7 slots' worth of supply, but only 4 free slots for the replacements.
    const open = setup(nodes(), pods);
    await runScalePass(open.deps, scaleConfig({ bufferGameServers: 0 }), { dryRun: false });
    expect(moves(open.cluster)).toHaveLength(4);
  });

  it('never moves a ready game server off a node that is schedulable', async () => {
    const { cluster, deps } = setup(
      [node('a'), node('b')],
      [statefulServer('r1', 'a', 'ready'), statefulServer('r2', 'b', 'ready')],
    );
    await runScalePass(deps, scaleConfig({ bufferGameServers: 70 }), { dryRun: false });
    expect(moves(cluster)).toEqual([]);
  });

  it('plans the moves in a dry run without making them', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [statefulServer('r1', 'b', 'ready')],
    );
    const report = await runScalePass(deps, scaleConfig(), { dryRun: true });
    expect(report.actions).toEqual([
      {
        type: 'evict',
        node: 'b',
        gameServer: 'games/r1',
        reason: expect.stringContaining('evicted through the Eviction API'),
      },
    ]);
    expect(cluster.mutations()).toEqual([]);
  });
});

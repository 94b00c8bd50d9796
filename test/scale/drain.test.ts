import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { AgonesGameServer } from '../../shared/k8s/cluster-api.js';
import {
  costlyDrains,
  drainPolicy,
  expectedDrainMs,
  expiringNodes,
  nodePoolLifetimeMs,
  parseGoDuration,
  withPoolLifetime,
} from '../../shared/scale/drain.js';
import { indexAgones } from '../../shared/scale/game-state.js';
import { runScalePass, withSessionsSeen } from '../../shared/scale/pass.js';
import { protectionFor, protectionPatch } from '../../shared/scale/protection.js';
import {
  EMPTY_SESSIONS,
  expectedRemainingMs,
  SESSION_TRACKED,
  withSessions,
} from '../../shared/scale/sessions.js';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import { EMPTY_SCALE_MEMORY } from '../../shared/scale/store.js';
import {
  AGONES_LAST_ALLOCATED,
  DO_NOT_DISRUPT,
  SAFE_TO_EVICT,
} from '../../shared/vocabulary/labels.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import {
  agonesServer,
  berthCordoned,
  node,
  passConfig,
  pod,
  statefulServer,
  T0,
} from './builders.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function deps(nodes: V1Node[], pods: V1Pod[], gameServers: AgonesGameServer[] = []) {
  const cluster = new FakeClusterApi()
    .withNodes(...nodes)
    .withPods(...pods)
    .withGameServers(...gameServers);
  const memory = new InProcessScaleMemory();
  return {
    cluster,
    memory,
    deps: {
      cluster,
      pool: new FakeNodePool(nodes.length),
      lease: new FakeLease(() => T0),
      now: () => T0,
      holder: 'pass-1',
      memory,
    },
  };
}

describe('choosing what to drain by what it costs', () => {
  it('cordons the node with the fewest allocated game servers, though it holds more game servers', async () => {
    const { deps: d } = deps(
      [node('x'), node('y'), node('z')],
      [
        statefulServer('x1', 'x', 'allocated'),
        statefulServer('x2', 'x', 'allocated'),
        statefulServer('y1', 'y', 'ready'),
        statefulServer('y2', 'y', 'ready'),
        statefulServer('y3', 'y', 'ready'),
        statefulServer('z1', 'z', 'allocated'),
      ],
    );
    // 38 + 37 + 39 free slots, a buffer of 70: one node's worth (with its ready servers moved).
    const report = await runScalePass(d, passConfig({ bufferGameServers: 70 }), { dryRun: true });
    expect(report.actions.map((a) => `${a.type} ${a.node}`)).toEqual(['cordon y']);
  });

  it('counts the slots the ready servers of a node need elsewhere before cordoning it', async () => {
    const { deps: d } = deps(
      [node('x'), node('y')],
      [statefulServer('y1', 'y', 'ready'), statefulServer('y2', 'y', 'ready')],
    );
    // 40 + 38 free and 2 ready servers, buffer 41: y's 38 slots fit the excess of 39, but not
    // with its 2 ready servers, which leave the buffer with it.
    const report = await runScalePass(d, passConfig({ bufferGameServers: 41 }), { dryRun: true });
    expect(report.actions).toEqual([]);
  });

  it('counts ready game servers toward the buffer: a match takes one as it would a free slot', async () => {
    const ready = Array.from({ length: 5 }, (_, i) => statefulServer(`x${i}`, 'x', 'ready'));
    const { deps: d } = deps([node('x')], ready);
    // 35 free slots and 5 ready servers keep a buffer of 40: nothing to grow.
    const kept = await runScalePass(d, passConfig({ bufferGameServers: 40 }), { dryRun: true });
    expect(kept.actions.filter((a) => a.type === 'grow')).toEqual([]);
    // A buffer of 41 is one short.
    const short = await runScalePass(d, passConfig({ bufferGameServers: 41 }), { dryRun: true });
    expect(short.actions.map((a) => `${a.type} ${a.to}`)).toEqual(['grow 2']);
  });

  it('passes over a node whose allocated sessions are expected to run far longer than the others', () => {
    const policy = drainPolicy(passConfig());
    const old = (name: string, nodeName: string, ageMin: number) =>
      statefulServer(name, nodeName, 'allocated', T0 - ageMin * MINUTE);
    const snapshot = buildSnapshot(
      [node('a'), node('b'), node('c')],
      [old('a1', 'a', 5), old('b1', 'b', 6), old('c1', 'c', 1)],
      {},
      indexAgones([]),
    );
    // Sessions measured: most last 10 minutes, a few 3 hours.
    const sessions = {
      tracked: {},
      lengthsMs: [...Array(20).fill(10 * MINUTE), ...Array(2).fill(180 * MINUTE)],
    };
    const drain = expectedDrainMs(snapshot.gameServers, sessions, policy, T0);
    // A 1-minute-old session is expected to last as long as a fresh one; all three are close.
    expect(costlyDrains(snapshot.nodes, drain, policy).size).toBe(0);
    // A session 20 minutes old is one of the long ones: 160 minutes more expected.
    const long = buildSnapshot(
      [node('a'), node('b'), node('c')],
      [old('a1', 'a', 5), old('b1', 'b', 6), old('c1', 'c', 20)],
      {},
      indexAgones([]),
    );
    const costly = costlyDrains(
      long.nodes,
      expectedDrainMs(long.gameServers, sessions, policy, T0),
      policy,
    );
    expect([...costly.keys()]).toEqual(['c']);
    expect(costly.get('c')).toContain('160 min more');
    // Before any session is measured, no node is passed over on a guess.
    expect(expectedDrainMs(long.gameServers, EMPTY_SESSIONS, policy, T0).size).toBe(0);
  });

  it('counts an Agones session from its allocation, not from the hours its server waited Ready', () => {
    const policy = drainPolicy(passConfig());
    const sessions = { tracked: {}, lengthsMs: Array(20).fill(30 * MINUTE) };
    // Its pod is 3 hours old, but Agones allocated it 10 minutes ago: 20 minutes left.
    const { pod: p, gameServer } = agonesServer('gs-1', 'a', 'Allocated');
    const created = {
      ...p,
      metadata: { ...p.metadata, creationTimestamp: new Date(T0 - 180 * MINUTE) },
    };
    const allocated = {
      ...gameServer,
      metadata: {
        ...gameServer.metadata,
        annotations: { [AGONES_LAST_ALLOCATED]: new Date(T0 - 10 * MINUTE).toISOString() },
      },
    };
    const snapshot = buildSnapshot([node('a')], [created], {}, indexAgones([allocated]));
    expect(expectedDrainMs(snapshot.gameServers, sessions, policy, T0).get('a')).toBe(20 * MINUTE);
    // The measurement follows it from the allocation too.
    const seen = withSessionsSeen(EMPTY_SCALE_MEMORY, snapshot, T0);
    expect(Object.values(seen.sessions.tracked)).toEqual([
      { createdAtMs: T0 - 10 * MINUTE, lastSeenMs: T0 },
    ]);
    // Without the annotation, from the pod: older than every measured session.
    const bare = buildSnapshot([node('a')], [created], {}, indexAgones([gameServer]));
    expect(expectedDrainMs(bare.gameServers, sessions, policy, T0).get('a')).toBe(30 * MINUTE);
  });
});

describe('forced node lifetimes', () => {
  const lifetime = { drain: { nodeLifetimeSeconds: 21 * 86_400, longestSessionSeconds: 3600 } };

  it('cordons a node early enough that its longest session ends before its deadline, with no surplus', async () => {
    const { deps: d } = deps(
      [
        node('old', { createdAtMs: T0 - 21 * DAY + 50 * MINUTE }),
        node('new', { createdAtMs: T0 - DAY }),
      ],
      [statefulServer('g', 'old', 'allocated')],
    );
    const report = await runScalePass(
      d,
      passConfig({ bufferGameServers: 70, maxNodes: 5, ...lifetime }),
      { dryRun: true },
    );
    const cordon = report.actions.find((a) => a.type === 'cordon');
    expect(cordon).toMatchObject({ node: 'old' });
    expect(cordon?.reason).toContain('forced lifetime');
    // Its slots no longer count: the pool grows to replace them.
    expect(report.actions.some((a) => a.type === 'grow')).toBe(true);
  });

  it('leaves a node alone while its deadline is further than its longest session', () => {
    const policy = drainPolicy(passConfig(lifetime));
    const snapshot = buildSnapshot(
      [node('young', { createdAtMs: T0 - 20 * DAY })],
      [],
      {},
      indexAgones([]),
    );
    const margins = { shutdownDelayMs: 60_000, commitWindowMs: 30_000, passIntervalMs: 60_000 };
    expect(expiringNodes(snapshot.nodes, policy, EMPTY_SESSIONS, margins, T0).size).toBe(0);
    expect(
      expiringNodes(snapshot.nodes, policy, EMPTY_SESSIONS, margins, T0 + DAY - 61 * MINUTE).size,
    ).toBe(1);
  });

  it('never uncordons an expiring node to cover a shortfall', async () => {
    const { deps: d } = deps(
      [
        berthCordoned('old', T0 - 10 * MINUTE, { createdAtMs: T0 - 21 * DAY + 30 * MINUTE }),
        node('new', { cpu: '1' }),
      ],
      [statefulServer('g', 'old', 'allocated')],
    );
    const report = await runScalePass(
      d,
      passConfig({ bufferGameServers: 30, maxNodes: 5, ...lifetime }),
      { dryRun: true },
    );
    expect(report.actions.map((a) => a.type)).not.toContain('uncordon');
    expect(report.actions.map((a) => a.type)).toContain('grow');
  });
});

describe('forced lifetimes from a Karpenter NodePool', () => {
  it('reads expireAfter as Go writes durations, and Never as none', () => {
    expect(parseGoDuration('720h')).toBe(30 * DAY);
    expect(parseGoDuration('1h30m')).toBe(90 * MINUTE);
    expect(parseGoDuration('90s')).toBe(90_000);
    expect(parseGoDuration('1.5h')).toBe(90 * MINUTE);
    expect(parseGoDuration('Never')).toBeUndefined();
    expect(parseGoDuration('3d')).toBeUndefined();
    expect(nodePoolLifetimeMs({ spec: { template: { spec: { expireAfter: '336h' } } } })).toBe(
      14 * DAY,
    );
    expect(nodePoolLifetimeMs({ spec: { disruption: { expireAfter: '24h' } } })).toBe(DAY);
    expect(nodePoolLifetimeMs({ spec: {} })).toBeUndefined();
  });

  it('plans for the shorter of the configured lifetime and the pool one', () => {
    const policy = drainPolicy(passConfig({ drain: { nodeLifetimeSeconds: 86_400 } }));
    expect(withPoolLifetime(policy, 14 * DAY).nodeLifetimeMs).toBe(DAY);
    expect(withPoolLifetime(drainPolicy(passConfig()), 14 * DAY).nodeLifetimeMs).toBe(14 * DAY);
    expect(withPoolLifetime(policy, undefined).nodeLifetimeMs).toBe(DAY);
  });

  it('cordons a node of a Karpenter NodePool before its expireAfter', async () => {
    const { cluster, deps: d } = deps(
      [node('old', { createdAtMs: T0 - 14 * DAY + 30 * MINUTE }), node('new')],
      [statefulServer('g', 'old', 'allocated')],
    );
    cluster.nodePools.set('games', { spec: { template: { spec: { expireAfter: '336h' } } } });
    const report = await runScalePass(
      d,
      passConfig({ bufferGameServers: 70, nodePool: { type: 'karpenter', name: 'games' } }),
      { dryRun: true },
    );
    expect(report.actions.find((a) => a.type === 'cordon')).toMatchObject({ node: 'old' });
  });
});

describe('measured sessions', () => {
  it('measures a followed allocated server from its creation to the last pass that saw it', () => {
    const first = withSessions(EMPTY_SESSIONS, [{ id: 'a', createdAtMs: T0 - 5 * MINUTE }], T0);
    const second = withSessions(first, [{ id: 'a', createdAtMs: T0 - 5 * MINUTE }], T0 + MINUTE);
    const ended = withSessions(second, [], T0 + 2 * MINUTE);
    expect(ended).toEqual({ tracked: {}, lengthsMs: [6 * MINUTE] });
  });

  it('follows at most SESSION_TRACKED servers at once, oldest first', () => {
    const many = Array.from({ length: SESSION_TRACKED + 5 }, (_, i) => ({
      id: `s${i}`,
      createdAtMs: T0 - i * 1000,
    }));
    const sessions = withSessions(EMPTY_SESSIONS, many, T0);
    expect(Object.keys(sessions.tracked)).toHaveLength(SESSION_TRACKED);
    expect(sessions.tracked[`s${SESSION_TRACKED + 4}`]).toBeDefined();
    expect(sessions.tracked.s0).toBeUndefined();
  });

  it('expects the mean residual life of the measured sessions longer than the age', () => {
    const lengths = [10, 20, 60].map((m) => m * MINUTE);
    expect(expectedRemainingMs(15 * MINUTE, lengths, 0)).toBe(25 * MINUTE);
    expect(expectedRemainingMs(0, [], 30 * MINUTE)).toBe(30 * MINUTE);
    expect(expectedRemainingMs(40 * MINUTE, [], 30 * MINUTE)).toBe(0);
  });

  it('remembers the sessions across passes', async () => {
    const { memory, deps: d } = deps([node('a')], [statefulServer('g', 'a', 'allocated', T0)]);
    await runScalePass(d, passConfig(), { dryRun: false });
    expect(memory.memory.sessions?.tracked).toEqual({
      'uid-g': { createdAtMs: T0, lastSeenMs: T0 },
    });
    expect(EMPTY_SCALE_MEMORY.sessions).toBeUndefined();
  });
});

describe('protection follows state', () => {
  it('protects allocated servers in every mode but off, and ready ones by the mode', () => {
    const both = { [SAFE_TO_EVICT]: 'false', [DO_NOT_DISRUPT]: 'true' };
    for (const mode of ['Never', 'OnUpgrade', 'Always'] as const) {
      expect(protectionFor('allocated', mode)).toEqual(both);
    }
    expect(protectionFor('ready', 'Never')).toEqual(both);
    expect(protectionFor('ready', 'OnUpgrade')).toEqual({
      [SAFE_TO_EVICT]: 'false',
      [DO_NOT_DISRUPT]: undefined,
    });
    expect(protectionFor('ready', 'Always')).toEqual({
      [SAFE_TO_EVICT]: 'true',
      [DO_NOT_DISRUPT]: undefined,
    });
    expect(protectionFor('allocated', 'off')).toBeUndefined();
  });

  it('patches only what differs, guarded by the pod resourceVersion', () => {
    const snapshot = buildSnapshot(
      [node('a')],
      [statefulServer('g', 'a', 'ready')],
      {},
      indexAgones([]),
    );
    const [gs] = snapshot.gameServers;
    if (!gs) throw new Error('no game server');
    const wanted = protectionFor('ready', 'Always');
    if (!wanted) throw new Error('no protection');
    expect(protectionPatch(gs, wanted)).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      {
        op: 'add',
        path: '/metadata/annotations/cluster-autoscaler.kubernetes.io~1safe-to-evict',
        value: 'true',
      },
    ]);
    const done = { ...gs, annotations: { ...gs.annotations, [SAFE_TO_EVICT]: 'true' } };
    expect(protectionPatch(done, wanted)).toEqual([]);
  });

  it('sets protection on an allocated Agones server, takes do-not-disrupt off a ready one, and leaves servers of unknown state alone', async () => {
    const playing = agonesServer('gs-playing', 'a', 'Allocated');
    const ready = agonesServer('gs-ready', 'a', 'Ready');
    const readyPod = {
      ...ready.pod,
      metadata: { ...ready.pod.metadata, annotations: { [DO_NOT_DISRUPT]: 'true' } },
    };
    const { cluster, deps: d } = deps(
      [node('a')],
      [playing.pod, readyPod, pod('plain', { node: 'a' })],
      [playing.gameServer, ready.gameServer],
    );
    const report = await runScalePass(d, passConfig(), { dryRun: false });
    expect(report.failures).toEqual([]);
    const annotations = (name: string) =>
      [...cluster.pods.values()].find((p) => p.metadata?.name === name)?.metadata?.annotations;
    expect(annotations('gs-playing')).toEqual({
      [SAFE_TO_EVICT]: 'false',
      [DO_NOT_DISRUPT]: 'true',
    });
    expect(annotations('gs-ready')).toEqual({ [SAFE_TO_EVICT]: 'false' });
    expect(annotations('plain')).toBeUndefined();
    expect(report.actions).toEqual([]);
    expect(report.notes.map((n) => n.reason)).toContainEqual(
      expect.stringContaining('games/gs-playing: set allocated'),
    );
  });

  it('touches no pod with protection off', async () => {
    const playing = agonesServer('gs-playing', 'a', 'Allocated');
    const { cluster, deps: d } = deps([node('a')], [playing.pod], [playing.gameServer]);
    await runScalePass(d, passConfig({ protection: 'off' }), { dryRun: false });
    expect(cluster.calls.some((c) => c.method === 'patchPod')).toBe(false);
  });
});

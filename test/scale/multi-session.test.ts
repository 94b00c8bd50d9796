import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { AgonesGameServer } from '../../shared/k8s/cluster-api.js';
import { gameStateOf, indexAgones, sessionCountOf } from '../../shared/scale/game-state.js';
import { actOnPlan, planOnSnapshot, runScalePass } from '../../shared/scale/pass.js';
import { demandLevel, matchesPerSlot, planScale } from '../../shared/scale/plan.js';
import { scalePolicy } from '../../shared/scale/policy.js';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import { EMPTY_SCALE_MEMORY, type ScaleMemory } from '../../shared/scale/store.js';
import { slackOf } from '../../shared/scale/trigger.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { agonesServer, berthCordoned, node, passConfig, T0 } from './builders.js';

const MINUTE = 60_000;

/** An Agones server whose GameServer counts `count` of `capacity` sessions in `sessions`. */
function counted(
  name: string,
  nodeName: string,
  state: string,
  count: number,
  capacity = 4,
): { pod: V1Pod; gameServer: AgonesGameServer } {
  const server = agonesServer(name, nodeName, state);
  return {
    pod: server.pod,
    gameServer: {
      ...server.gameServer,
      status: { state, counters: { sessions: { count, capacity } } },
    },
  };
}

/** The server's game state with `counter` named (`scale.gameState.counter`), or none. */
const readAs = (server: { pod: V1Pod; gameServer: AgonesGameServer }, counter?: string) =>
  gameStateOf(server.pod, indexAgones([server.gameServer]), counter);
const read = (server: { pod: V1Pod; gameServer: AgonesGameServer }) => readAs(server, 'sessions');

describe('gameStateOf: multi-session servers (scale.gameState.counter)', () => {
  it('reads a Ready server with a session counted as allocated, never moved, with its room', () => {
    const reading = read(counted('gs-1', 'a', 'Ready', 1));
    expect(reading).toMatchObject({
      state: 'allocated',
      sessions: { count: 1, capacity: 4, from: 'Counter' },
      room: 3,
    });
    expect(reading.move).toBeUndefined();
    expect(reading.detail).toBe('Agones GameServer state Ready, Counter sessions 1/4');
  });

  it('leaves a server counting no session to its state: Ready is ready, with all its room', () => {
    const reading = read(counted('gs-1', 'a', 'Ready', 0));
    expect(reading).toMatchObject({ state: 'ready', room: 4 });
    expect(reading.move?.kind).toBe('gameserver');
    expect(read(counted('gs-2', 'a', 'Allocated', 0))).toMatchObject({
      state: 'allocated',
      room: 4,
    });
  });

  it('reads a full server as allocated with no room, and one that is going as offering none', () => {
    expect(read(counted('gs-1', 'a', 'Allocated', 4))).toMatchObject({ room: 0 });
    expect(read(counted('gs-2', 'a', 'Shutdown', 1))).toMatchObject({
      state: 'allocated',
      room: 0,
    });
    const going = counted('gs-3', 'a', 'Allocated', 1);
    const deleting = {
      ...going,
      gameServer: {
        ...going.gameServer,
        metadata: { ...going.gameServer.metadata, deletionTimestamp: new Date(T0) },
      },
    };
    expect(read(deleting)).toMatchObject({ state: 'allocated', room: 0 });
  });

  it('reads a List of the name when no Counter has it, and the Counter when both do', () => {
    const server = agonesServer('gs-1', 'a', 'Ready');
    const withList: AgonesGameServer = {
      ...server.gameServer,
      status: { state: 'Ready', lists: { sessions: { capacity: 3, values: ['m-1'] } } },
    };
    expect(sessionCountOf(withList, 'sessions')).toEqual({ count: 1, capacity: 3, from: 'List' });
    const both: AgonesGameServer = {
      ...withList,
      status: { ...withList.status, counters: { sessions: { count: 0, capacity: 8 } } },
    };
    expect(sessionCountOf(both, 'sessions')).toEqual({ count: 0, capacity: 8, from: 'Counter' });
  });

  it('ignores Counters when no counter is named, or a name the GameServer lacks', () => {
    const server = counted('gs-1', 'a', 'Ready', 2);
    expect(readAs(server)).toMatchObject({ state: 'ready' });
    expect(readAs(server).room).toBeUndefined();
    expect(readAs(server, 'rooms')).toMatchObject({ state: 'ready' });
    expect(readAs(server, 'constructor').sessions).toBeUndefined();
  });
});

/** Two nodes of 4 CPU, one DaemonSet-free; servers request 400m (one slot each). */
function snapshotOf(nodes: V1Node[], servers: ReturnType<typeof counted>[], counter?: string) {
  const pods = servers.map((s) => ({
    ...s.pod,
    spec: {
      ...s.pod.spec,
      containers: [{ name: 'main', resources: { requests: { cpu: '400m' } } }],
    },
  }));
  return buildSnapshot(
    nodes,
    pods,
    { desiredSize: nodes.length },
    indexAgones(servers.map((s) => s.gameServer)),
    counter,
  );
}

const policy = (scale: Record<string, unknown> = {}) =>
  scalePolicy(passConfig({ gameServerCpuMillis: 400, ...scale }));

describe('planScale with multi-session servers', () => {
  // Node a: 4000m, nine 400m servers (3600m): one free slot. Each server is 4 sessions.
  const busy = () =>
    Array.from({ length: 9 }, (_, i) => counted(`gs-${i}`, 'a', 'Allocated', i < 6 ? 4 : 1));

  it('counts in match slots: node slots times the capacity, room on servers as it is', () => {
    const snapshot = snapshotOf([node('a')], busy(), 'sessions');
    expect(snapshot.nodes[0]?.matchRoom).toBe(9);
    expect(matchesPerSlot(snapshot.gameServers, 400)).toBe(4);
    const tally = planScale(snapshot, policy({ bufferGameServers: 3 }), T0).tally;
    expect(tally).toMatchObject({ free: 4, ready: 9, matchesPerSlot: 4 });
    // 13 match slots: three whole servers' room is 12, so one is left over.
    expect(slackOf(tally)).toBe(0);
  });

  it("counts a server's room toward the buffer, where without the counter it would grow", () => {
    const withCounter = planScale(
      snapshotOf([node('a')], busy(), 'sessions'),
      policy({ bufferGameServers: 3 }),
      T0,
    );
    expect(withCounter.actions.filter((a) => a.type === 'grow')).toEqual([]);
    const without = planScale(
      snapshotOf([node('a')], busy()),
      policy({ bufferGameServers: 3 }),
      T0,
    );
    expect(without.actions.filter((a) => a.type === 'grow')).toHaveLength(1);
  });

  it('grows for the match slots missing, a new node bringing its slots times the capacity', () => {
    const full = Array.from({ length: 10 }, (_, i) => counted(`gs-${i}`, 'a', 'Allocated', 4));
    const grow = planScale(
      snapshotOf([node('a')], full, 'sessions'),
      policy({ bufferGameServers: 12, maxNodes: 10 }),
      T0,
    ).actions.find((a) => a.type === 'grow');
    // 48 match slots short, 40 per new node (10 slots x 4): two nodes.
    expect(grow).toMatchObject({ from: 1, to: 3 });
    expect(grow?.reason).toContain('48 short of the buffer of 48 (12 game servers');
  });
});

describe('demand of multi-session servers', () => {
  /** `ready` empty Ready servers and three hosting 1, 3 and 4 matches, each made at T0. */
  const fleet = (ready: number) =>
    [
      ...Array.from({ length: ready }, (_, i) => counted(`ready-${i}`, 'a', 'Ready', 0)),
      counted('one', 'a', 'Allocated', 1),
      counted('three', 'a', 'Allocated', 3),
      counted('full', 'a', 'Allocated', 4),
    ].map((s) => ({
      ...s,
      pod: { ...s.pod, metadata: { ...s.pod.metadata, creationTimestamp: new Date(T0 - MINUTE) } },
    }));

  it('reads the level as the matches hosted, in game-server slots, and nothing without a counter', () => {
    // 8 matches, 4 to a 400m slot; the Ready servers host none.
    expect(demandLevel(snapshotOf([node('a')], fleet(3), 'sessions').gameServers, 400)).toBe(2);
    expect(demandLevel(snapshotOf([node('a')], fleet(3)).gameServers, 400)).toBeUndefined();
    // 8 matches at 3 to a slot: 2.667, in thousandths.
    const threes = fleet(0).map((s) => ({
      ...s,
      gameServer: {
        ...s.gameServer,
        status: {
          ...s.gameServer.status,
          counters: {
            sessions: { count: s.gameServer.status?.counters?.sessions?.count ?? 0, capacity: 3 },
          },
        },
      },
    }));
    expect(demandLevel(snapshotOf([node('a')], threes, 'sessions').gameServers, 400)).toBe(2.667);
  });

  it("takes no rise from a Counter policy's churn of Ready servers, where counting servers would", () => {
    // Agones' Counter policy deletes three Ready servers below its buffer and makes them again
    // at the next sync (sim/fleet-controller.ts): the servers dip and rise by 3, the matches stay.
    const passes = (counter: string | undefined) => {
      let memory: ScaleMemory = EMPTY_SCALE_MEMORY;
      [5, 2, 5].forEach((ready, i) => {
        const snapshot = snapshotOf([node('a'), node('b')], fleet(ready), counter);
        memory = planOnSnapshot(snapshot, memory, policy(), T0 + i * MINUTE).memory;
      });
      return memory.risePeaks?.[0]?.count ?? 0;
    };
    expect(passes('sessions')).toBe(0);
    expect(passes(undefined)).toBe(3);
  });
});

describe('the scale pass with multi-session servers', () => {
  function setup(nodes: V1Node[], servers: ReturnType<typeof counted>[]) {
    const now = T0;
    const cluster = new FakeClusterApi()
      .withNodes(...nodes)
      .withPods(...servers.map((s) => s.pod))
      .withGameServers(...servers.map((s) => s.gameServer));
    return {
      cluster,
      deps: {
        cluster,
        pool: new FakeNodePool(nodes.length),
        lease: new FakeLease(() => now),
        now: () => now,
        holder: 'pass-1',
        memory: new InProcessScaleMemory(),
      },
    };
  }

  it('never moves a Ready server counting a session off a node it drains, nor removes the node', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [counted('gs-1', 'b', 'Ready', 1), counted('gs-2', 'b', 'Ready', 0)],
    );
    const config = passConfig({ bufferGameServers: 1, gameState: { counter: 'sessions' } });
    const report = await runScalePass(deps, config, { dryRun: false });
    expect(report.actions.map((a) => `${a.type} ${a.gameServer ?? a.node ?? ''}`)).toEqual([
      'evict games/gs-2',
    ]);
    expect(cluster.gameServers.has('games/gs-1')).toBe(true);
    expect(cluster.nodes.has('b')).toBe(true);
  });

  it('moves the same server when no counter is named: its state says Ready', async () => {
    const { deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [counted('gs-1', 'b', 'Ready', 1), counted('gs-2', 'b', 'Ready', 0)],
    );
    const report = await runScalePass(deps, passConfig({ bufferGameServers: 1 }), {
      dryRun: false,
    });
    expect(report.actions.filter((a) => a.type === 'evict').map((a) => a.gameServer)).toEqual([
      'games/gs-1',
      'games/gs-2',
    ]);
  });
});

describe('the session label on multi-session servers (scale.gameState.sessionLabel)', () => {
  const LABEL = 'agones.dev/sdk-gs-session-ready';
  const labelled = (server: ReturnType<typeof counted>, value: string) => ({
    pod: server.pod,
    gameServer: {
      ...server.gameServer,
      metadata: { ...server.gameServer.metadata, labels: { [LABEL]: value } },
    },
  });

  function setup(nodes: V1Node[], servers: ReturnType<typeof counted>[]) {
    const cluster = new FakeClusterApi()
      .withNodes(...nodes)
      .withPods(...servers.map((s) => s.pod))
      .withGameServers(...servers.map((s) => s.gameServer));
    const deps = {
      cluster,
      pool: new FakeNodePool(nodes.length),
      lease: new FakeLease(() => T0),
      now: () => T0,
      holder: 'pass-1',
      memory: new InProcessScaleMemory(),
    };
    return { cluster, deps };
  }
  const labelOf = (cluster: FakeClusterApi, name: string) =>
    cluster.gameServers.get(`games/${name}`)?.metadata?.labels?.[LABEL];

  it('opens the label on the counted servers of a node it uncordons, and on no other', async () => {
    const plain = agonesServer('gs-3', 'b', 'Allocated');
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [
        labelled(counted('gs-1', 'b', 'Allocated', 2), 'false'),
        counted('gs-2', 'b', 'Ready', 0),
        plain,
      ],
    );
    const config = passConfig({ minNodes: 2, gameState: { counter: 'sessions' } });
    const report = await runScalePass(deps, config, { dryRun: false });
    expect(report.actions.map((a) => `${a.type} ${a.node}`)).toContain('uncordon b');
    expect(labelOf(cluster, 'gs-1')).toBe('true');
    expect(labelOf(cluster, 'gs-2')).toBe('true');
    const patched = cluster.calls
      .filter((c) => c.method === 'patchGameServer')
      .map((c) => c.args[1]);
    expect(patched).toEqual(['gs-1', 'gs-2']);
  });

  it('patches no GameServer when no counter is named', async () => {
    const { cluster, deps } = setup(
      [node('a'), berthCordoned('b', T0 - 10 * MINUTE)],
      [labelled(counted('gs-1', 'b', 'Allocated', 2), 'false')],
    );
    await runScalePass(deps, passConfig({ minNodes: 2 }), { dryRun: false });
    expect(cluster.calls.some((c) => c.method === 'patchGameServer')).toBe(false);
    expect(labelOf(cluster, 'gs-1')).toBe('false');
  });

  it('closes the configured label on the counted servers of a node it cordons', async () => {
    const servers = [
      labelled(counted('gs-1', 'a', 'Allocated', 1), 'true'),
      counted('gs-2', 'a', 'Ready', 0),
    ];
    const { cluster, deps } = setup([node('a'), node('b')], servers);
    const config = passConfig({
      gameState: { counter: 'sessions', sessionLabel: 'example.com/open' },
    });
    const policy = scalePolicy(config);
    const snapshot = buildSnapshot(
      [node('a'), node('b')],
      servers.map((s) => s.pod),
      {},
      indexAgones(servers.map((s) => s.gameServer)),
      'sessions',
    );
    const target = snapshot.nodes.find((n) => n.name === 'a');
    if (!target) throw new Error('no node a');
    const sessionServers = snapshot.gameServers.flatMap((gs) =>
      gs.gameServer ? [gs.gameServer] : [],
    );
    const report = await actOnPlan({ cluster, pool: deps.pool, now: () => T0 }, policy, {
      actions: [{ type: 'cordon', node: 'a', target, reason: 'test', sessionServers }],
      notes: [],
      tally: planScale(snapshot, policy, T0).tally,
    });
    expect(report.failures).toEqual([]);
    expect(cluster.gameServers.get('games/gs-1')?.metadata?.labels).toEqual({
      [LABEL]: 'true',
      'example.com/open': 'false',
    });
    expect(cluster.gameServers.get('games/gs-2')?.metadata?.labels?.['example.com/open']).toBe(
      'false',
    );
    expect(report.actions[0]?.reason).toContain(
      'example.com/open="false" on its 2 multi-session GameServer(s)',
    );
  });
});

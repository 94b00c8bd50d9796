import { describe, expect, it } from 'vitest';
import {
  AGONES_NODE_HOURS_RATIO,
  agonesBaselines,
  agonesPolicy,
  clairvoyantFloorNodeHours,
  judgeAgonesDay,
  KARPENTER_GRACE_MS,
} from '../../bench/scale/agones.js';
import {
  AGONES_DAY,
  AgonesCluster,
  type AgonesScenario,
  agonesCluster,
  FLEET_SYNC_MS,
  fleetBufferFor,
  NODE_UPGRADE_DAY,
  withNodeGroupUpgrade,
} from '../../bench/scale/agones-day.js';
import { berthScaler } from '../../bench/scale/berth.js';
import {
  arrivals,
  type DayOutcome,
  everyMs,
  HOUR,
  MAIN_SCENARIO,
  MINUTE,
  type SimGame,
  type SimNode,
  simulateDay,
} from '../../bench/scale/day.js';
import { karpenterScaler } from '../../bench/scale/karpenter.js';
import { gameSlotsPerNode } from '../../bench/scale/pending.js';
import type { Arrival } from '../../sim/arrivals.js';

/**
 * A fleet of `buffer` Ready servers, its autoscaler synced every step (or never, so the test sets
 * the replicas), on `nodes` Ready nodes at 0.
 */
function fleet(buffer: number, nodes: number, sync: 'every step' | 'never' = 'every step') {
  const syncIntervalMs = sync === 'never' ? Number.MAX_SAFE_INTEGER : 10_000;
  const sc: AgonesScenario = {
    ...AGONES_DAY,
    fleet: { bufferSize: buffer, minReplicas: buffer, maxReplicas: 1000, syncIntervalMs },
  };
  const cluster = new AgonesCluster(sc, 0);
  cluster.growTo(nodes);
  cluster.now = sc.bootDelayMs;
  cluster.schedule();
  return { sc, cluster, nodes: [...cluster.nodes] };
}

/** Moves game servers to `node` by hand, as if placed there. */
function moveTo(node: SimNode, games: SimGame[]): void {
  for (const g of games) {
    g.node?.games.delete(g);
    node.games.add(g);
    g.node = node;
  }
}

const match = (atMs: number, sessionMs = 10 * MINUTE): Arrival => ({ atMs, sessionMs });
const readyOn = (c: AgonesCluster, n: SimNode) =>
  [...n.games].filter((g) => !c.holdsPlayers(g)).length;
const allocatedOn = (c: AgonesCluster, n: SimNode) =>
  [...n.games].filter((g) => c.holdsPlayers(g)).length;

/** Steps the cluster `steps` times by 10 s, ending sessions and running the fleet each time. */
function step(c: AgonesCluster, steps = 1): void {
  for (let i = 0; i < steps; i++) {
    c.now += c.sc.stepMs;
    c.endSessions();
    c.schedule();
  }
}

describe('the Agones fleet of the Agones-style days', () => {
  it('keeps the buffer Ready, allocates a match at once, and makes the allocated one again at the next sync', () => {
    const { cluster } = fleet(5, 1);
    expect(cluster.fleet.replicas).toBe(5);
    expect(cluster.allocated).toBe(0);
    cluster.arrive(match(cluster.now));
    cluster.schedule();
    expect(cluster.allocated).toBe(1);
    expect(cluster.waited).toBe(0);
    step(cluster);
    // Synced: replicas = allocated + buffer, so 5 Ready again beside the Allocated one.
    expect(cluster.fleet.replicas).toBe(6);
    const [node] = cluster.nodes as [SimNode];
    expect(readyOn(cluster, node)).toBe(5);
  });

  it('replaces a server whose session ended, then scales the extra Ready one down at the next sync', () => {
    const { cluster } = fleet(3, 1);
    cluster.arrive(match(cluster.now, 20_000));
    step(cluster, 2); // allocated, synced: 4 replicas
    expect(cluster.fleet.replicas).toBe(4);
    step(cluster, 1); // the session ended: replicas 3 at this sync (0 allocated + 3)
    const [node] = cluster.nodes as [SimNode];
    expect(cluster.allocated).toBe(0);
    expect(node.games.size).toBe(3);
  });

  it('makes a match wait when no server is Ready, and counts it once served', () => {
    const { cluster } = fleet(1, 1);
    cluster.arrive(match(cluster.now));
    cluster.arrive(match(cluster.now));
    cluster.schedule();
    expect(cluster.allocated).toBe(1);
    expect(cluster.waited).toBe(0);
    step(cluster, 1); // the sync makes a Ready server, the second match takes it a step late
    expect(cluster.allocated).toBe(2);
    expect(cluster.waited).toBe(1);
  });

  it('allocates on the node with the most Allocated (Packed), and scales down Ready servers from the emptiest node', () => {
    const { cluster, nodes } = fleet(6, 2, 'never');
    const [a, b] = nodes as [SimNode, SimNode];
    // Packed placement put all 6 on a; move two to b by hand to set up the choices.
    moveTo(b, [...a.games].slice(0, 2));
    cluster.arrive(match(cluster.now));
    cluster.schedule();
    // Neither has an Allocated server: the most Ready, a (4 against 2).
    expect([allocatedOn(cluster, a), allocatedOn(cluster, b)]).toEqual([1, 0]);
    moveTo(b, [...a.games].filter((g) => !cluster.holdsPlayers(g)).slice(0, 2));
    cluster.arrive(match(cluster.now));
    cluster.schedule();
    // a: 1 Allocated and 1 Ready, b: 4 Ready: the most Allocated first, a.
    expect([allocatedOn(cluster, a), allocatedOn(cluster, b)]).toEqual([2, 0]);
    // Two replicas fewer: Ready servers go from the node with the fewest game servers first.
    moveTo(a, [...b.games].slice(0, 2)); // a: 2 Allocated, 2 Ready; b: 2 Ready
    cluster.fleet.replicas = 4;
    cluster.schedule();
    expect(b.games.size).toBe(0);
    expect([allocatedOn(cluster, a), readyOn(cluster, a)]).toEqual([2, 2]);
  });

  it('interrupts only the Allocated servers of a removed node; its Ready ones are made again', () => {
    const { cluster, nodes } = fleet(3, 2);
    cluster.arrive(match(cluster.now));
    cluster.schedule();
    const [full] = nodes as [SimNode];
    expect(full.games.size).toBe(3);
    cluster.remove(full);
    expect(cluster.interrupted).toBe(1);
    cluster.schedule();
    const total = cluster.nodes.reduce((s, n) => s + n.games.size, 0) + cluster.queue.length;
    expect(total).toBe(cluster.fleet.replicas);
  });

  it('refuses to evict an Allocated server and evicts a Ready one', () => {
    const { cluster } = fleet(2, 1);
    cluster.arrive(match(cluster.now));
    cluster.schedule();
    const [node] = cluster.nodes as [SimNode];
    const [first, second] = [...node.games];
    if (!first || !second) throw new Error('two game servers expected');
    const [allocated, ready] = cluster.holdsPlayers(first) ? [first, second] : [second, first];
    expect(cluster.evict(allocated)).toBe(false);
    expect(cluster.evict(ready)).toBe(true);
    expect(node.games.has(ready)).toBe(false);
  });

  it('sizes the Ready buffer for the peak rate over a sync and a node boot', () => {
    // Main's peak: 1 + 8 matches a minute, over 30 s + 180 s: 31.5, rounded up.
    expect(fleetBufferFor(AGONES_DAY)).toBe(32);
    expect(AGONES_DAY.fleet.bufferSize).toBe(32);
    expect(FLEET_SYNC_MS).toBe(30_000);
    expect(NODE_UPGRADE_DAY.nodeLifetimeMs).toBe(24 * HOUR);
    expect(NODE_UPGRADE_DAY.warmUpMs).toBe(24 * HOUR);
    // Seeded: the same matches every time, other than main's.
    expect(arrivals(AGONES_DAY)).toEqual(arrivals(AGONES_DAY));
    expect(arrivals(AGONES_DAY)).not.toEqual(arrivals(MAIN_SCENARIO));
  });

  it('records the nodes that outlive their lifetime and when the nodes of 00:00 were all gone', async () => {
    const sc: AgonesScenario = {
      ...NODE_UPGRADE_DAY,
      warmUpMs: HOUR,
      durationMs: 3 * HOUR,
      nodeLifetimeMs: 2 * HOUR,
    };
    // A scaler that removes every node still there at 01:30, and grows one.
    let done = false;
    const scaler = everyMs(sc.stepMs, (c) => {
      if (c.nodes.length < 2) c.growTo(2);
      if (!done && c.now >= 1.5 * HOUR) {
        done = true;
        for (const n of [...c.nodes]) if (n.launchedAtMs < 0) c.remove(n);
      }
    });
    const o = await simulateDay(sc, [], scaler, agonesCluster);
    expect(o.replacement?.replacedAllMs).toBe(1.5 * HOUR);
    expect(o.replacement?.nodesAtStart).toBe(2);
    // The first node launched before the warm-up: past its 2 h well before 01:30.
    expect(o.replacement?.lateNodes).toBeGreaterThanOrEqual(1);
    expect(o.replacement?.maxOverrunMs).toBeGreaterThan(0);
  });
});

describe('the baselines of the Agones-style days', () => {
  it('upgrades a node group by cordoning every node and terminating each once no game server is left', () => {
    const { cluster, nodes } = fleet(2, 2);
    const [a, b] = nodes as [SimNode, SimNode];
    a.placeholders = 3;
    cluster.arrive(match(cluster.now, 30 * MINUTE));
    cluster.schedule();
    const upgrade = withNodeGroupUpgrade(
      everyMs(10_000, () => {}),
      cluster.now,
    );
    upgrade(cluster);
    expect(a.unschedulable && b.unschedulable).toBe(true);
    expect(a.placeholders).toBe(0);
    expect(cluster.pendingPlaceholders).toBe(3);
    // b held nothing: gone; a keeps its Ready and Allocated servers (Agones' PDB refuses them).
    expect(cluster.nodes).toEqual([a]);
    expect(a.games.size).toBe(2);
  });

  it('consolidates a node that holds only Ready servers with do-not-disrupt on Allocated ones, never one with an Allocated server', () => {
    const { cluster, nodes } = fleet(3, 3, 'never');
    const [a, b, c] = nodes as [SimNode, SimNode, SimNode];
    // a: one Ready; b: one Allocated and one Ready (the match takes the node with the most Ready).
    moveTo(b, [...a.games].slice(0, 2));
    cluster.arrive(match(cluster.now, 5 * HOUR));
    cluster.schedule();
    expect([allocatedOn(cluster, a), allocatedOn(cluster, b), c.games.size]).toEqual([0, 1, 0]);
    cluster.now += HOUR;
    for (const n of nodes) n.lastPodEventAtMs = cluster.now - HOUR;
    const karpenter = karpenterScaler({
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfterMs: 30_000,
      gameServersDoNotDisrupt: true,
      readyMovable: true,
      budgetNodesPercent: 100,
    });
    karpenter(cluster);
    expect(cluster.nodes.includes(c)).toBe(false); // empty first
    karpenter(cluster);
    expect(cluster.nodes).toEqual([b]); // a held only a Ready server: gone with it
    cluster.schedule(); // the fleet makes it again, on b
    expect(b.games.size).toBe(3);
    karpenter(cluster);
    expect(cluster.nodes).toEqual([b]); // do-not-disrupt: the Allocated server keeps it
    expect(cluster.interrupted).toBe(0);
  });

  it('drains an expired node at once, evicting Ready servers, and deletes it at the grace period with what still runs', () => {
    const { cluster, nodes } = fleet(2, 1);
    const [a] = nodes as [SimNode];
    cluster.arrive(match(cluster.now, 5 * HOUR));
    cluster.schedule();
    const karpenter = karpenterScaler({
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfterMs: 30_000,
      gameServersDoNotDisrupt: true,
      readyMovable: true,
      expireAfterMs: HOUR,
      terminationGracePeriodMs: KARPENTER_GRACE_MS,
    });
    cluster.now = HOUR;
    karpenter(cluster);
    expect(a.unschedulable).toBe(true);
    expect(readyOn(cluster, a)).toBe(0); // evicted: the fleet makes them elsewhere
    expect(allocatedOn(cluster, a)).toBe(1); // do-not-disrupt: waited for
    cluster.now = HOUR + KARPENTER_GRACE_MS - 10_000;
    karpenter(cluster);
    expect(cluster.nodes.includes(a)).toBe(true);
    cluster.now = HOUR + KARPENTER_GRACE_MS;
    karpenter(cluster);
    expect(cluster.nodes.includes(a)).toBe(false);
    expect(cluster.interrupted).toBe(1); // the session outlived the grace period
  });

  it('names every run after its peer, Karpenter with the node lifetime less its grace period on the upgrade day', () => {
    const counts = { '': () => 0, '+ph-buffer': () => 10 };
    const day = agonesBaselines(AGONES_DAY, counts);
    expect(Object.keys(day)).toContain('ca+ph-buffer');
    expect(Object.keys(day)).toContain('karpenter-underutilized-dnd-allocated-5m+ph-buffer');
    expect(Object.values(day).map((b) => b.peer)).not.toContain('paddle-soccer');
    expect(agonesPolicy(NODE_UPGRADE_DAY, true).drain.nodeLifetimeMs).toBe(24 * HOUR);
    expect(agonesPolicy(AGONES_DAY, true).drain.nodeLifetimeMs).toBe(0);
  });
});

describe('berth on an Agones fleet', () => {
  it('moves Ready servers off the nodes it cordons and interrupts no Allocated one over a short day', async () => {
    const sc: AgonesScenario = { ...AGONES_DAY, warmUpMs: HOUR, durationMs: 3 * HOUR };
    const o = await simulateDay(
      sc,
      arrivals(sc),
      berthScaler(sc, agonesPolicy(sc, true), { triggered: true, agones: true }),
      agonesCluster,
    );
    expect(o.interruptedGames).toBe(0);
    expect(o.cordons).toBeGreaterThan(0);
    expect(o.deletes).toBeGreaterThan(0);
  });

  it('puts the clairvoyant schedule below what any scaler that places every server used', async () => {
    const sc: AgonesScenario = { ...AGONES_DAY, warmUpMs: HOUR, durationMs: 3 * HOUR };
    const day = arrivals(sc);
    const floor = await clairvoyantFloorNodeHours(sc, day);
    const slots = gameSlotsPerNode(sc);
    expect(floor).toBeGreaterThanOrEqual((3 * sc.fleet.bufferSize) / slots);
    const o = await simulateDay(
      sc,
      day,
      berthScaler(sc, agonesPolicy(sc, true), { triggered: true, agones: true }),
      agonesCluster,
    );
    expect(o.nodeHours).toBeGreaterThanOrEqual(floor);
  });
});

describe('the targets of the Agones-style days', () => {
  const run = (nodeHours: number, extra: Partial<DayOutcome> = {}): DayOutcome =>
    ({
      nodeHours,
      waitingPods: 0,
      interruptedGames: 0,
      lostGames: 0,
      ...extra,
    }) as DayOutcome;
  const replaced = (late: number, ms?: number) => ({
    replacement: {
      nodesAtStart: 4,
      lateNodes: late,
      maxOverrunMs: late * MINUTE,
      ...(ms === undefined ? {} : { replacedAllMs: ms }),
    },
  });

  it('judges node-hours at 0.85 of the cheapest run as few waiting, with the floor as information', () => {
    const v = judgeAgonesDay(run(85), { ca: run(100) }, false, 80);
    const hours = v.find((t) => t.name === 'nodeHoursAtMost85PercentOfComparable');
    expect(AGONES_NODE_HOURS_RATIO).toBe(0.85);
    expect(hours?.pass).toBe(true);
    expect(hours?.line).toContain('clairvoyant schedule 80');
    expect(judgeAgonesDay(run(86), { ca: run(100) }, false, 80)[2]?.pass).toBe(false);
    expect(v.map((t) => t.name)).not.toContain('everyNodeReplacedBeforeItsDeadline');
  });

  it('on the upgrade day, passes only with every node replaced in time and none interrupted, printing each run', () => {
    const peers = { ca: run(100, replaced(1, 2 * HOUR)), karpenter: run(100, replaced(0)) };
    const good = judgeAgonesDay(run(80, replaced(0, 20 * HOUR)), peers, true, 70).at(-1);
    expect(good?.name).toBe('everyNodeReplacedBeforeItsDeadline');
    expect(good?.pass).toBe(true);
    expect(good?.line).toContain('ca 2 h (1 late');
    expect(good?.line).toContain('karpenter not within the day');
    expect(judgeAgonesDay(run(80, replaced(1, 20 * HOUR)), peers, true, 70).at(-1)?.pass).toBe(
      false,
    );
    expect(judgeAgonesDay(run(80, replaced(0)), peers, true, 70).at(-1)?.pass).toBe(false);
    const interrupted = run(80, { ...replaced(0, HOUR), interruptedGames: 1 });
    expect(judgeAgonesDay(interrupted, peers, true, 70).at(-1)?.pass).toBe(false);
  });
});

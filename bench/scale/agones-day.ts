/**
 * The Agones-style days of the node scale benchmark: the game servers are an Agones Fleet's, so
 * a node holds **Ready** game servers (no players: movable) beside **Allocated** ones (players:
 * never interrupted), and a match allocates a Ready server instead of creating a pod. The day's
 * arrivals (`./day.ts`: diurnal, bursts, sessions of 5-40 minutes, seeded) are the matches.
 *
 * The fleet, as its users run it (`AgonesCluster`):
 * - the Fleet, its FleetAutoscaler (Buffer policy, synced every 30 s), its GameServerSet and its
 *   Packed allocations follow the one fleet controller (`sim/fleet-controller.ts`); a server that
 *   shuts down after its session, or that a scaler deleted, is made again (Pending until placed);
 *   the pods pack as on every day (the shared scheduler). The allocator looks at GameServer
 *   states only, so a Ready server on a cordoned node is still allocated;
 * - the buffer sized as a careful operator sizes it (`fleetBufferFor`): the matches that arrive at
 *   the day's peak rate while a replacement waits for the autoscaler's sync and a new node;
 * - a match that finds no Ready server waits (the allocation answers UnAllocated and the
 *   matchmaker retries every step): a waiting allocation, the waits these days count;
 * - Agones' default `eviction.safe: Never` (agones.dev docs, "Controlling Disruption": "By
 *   default, Agones assumes your game server should never be disrupted voluntarily") puts
 *   `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` and the label
 *   `agones.dev/safe-to-evict: "false"` on every game server pod, Ready ones included; the label
 *   matches the `agones-gameserver-safe-to-evict-false` PodDisruptionBudget, which refuses every
 *   eviction (googleforgames/agones v1.38.0 `pkg/cloudproduct/eviction/eviction.go`).
 *
 * The node-upgrade day forces a node lifetime: every node must be gone 24 h after it launched
 * (EKS Auto Mode's 21-day limit, Karpenter's `expireAfter`, compressed to a day). Its warm-up is
 * a whole lifetime, so the nodes at 00:00 are of every age and each one's deadline falls within
 * the day. The cluster records when the last node present at 00:00 is gone and every node that
 * ran past its deadline (`ReplacementOutcome`).
 */
import type { Arrival } from '../../sim/arrivals.js';
import {
  type BufferPolicy,
  FleetController,
  type Reconciliation,
} from '../../sim/fleet-controller.js';
import {
  type DayOutcome,
  HOUR,
  MAIN_SCENARIO,
  MINUTE,
  type ReplacementOutcome,
  round,
  type Scaler,
  type Scenario,
  SECOND,
  SimCluster,
  type SimGame,
  type SimNode,
} from './day.js';

/** A day of an Agones Fleet; `nodeLifetimeMs` forces node replacement. */
export type AgonesScenario = Scenario & {
  readonly fleet: BufferPolicy;
  readonly nodeLifetimeMs?: number;
};

/** The FleetAutoscaler's default sync period (`sync.fixedInterval.seconds: 30`). */
export const FLEET_SYNC_MS = 30 * SECOND;

/**
 * The Ready buffer a careful operator keeps: the matches that arrive at the day's peak rate
 * (`basePerMinute + peakPerMinute`) while a replacement waits for the next sync and for a new
 * node to boot, rounded up.
 */
export function fleetBufferFor(sc: Scenario): number {
  const { basePerMinute, peakPerMinute } = sc.arrivals;
  return Math.ceil(((basePerMinute + peakPerMinute) * (FLEET_SYNC_MS + sc.bootDelayMs)) / MINUTE);
}

const fleetFor = (sc: Scenario): BufferPolicy => {
  const bufferSize = fleetBufferFor(sc);
  return {
    bufferSize,
    minReplicas: bufferSize,
    // Never the limit: the node pool's maximum size is.
    maxReplicas: 10_000,
    syncIntervalMs: FLEET_SYNC_MS,
  };
};

/** The Agones-style day: main's matches on a Fleet with a Ready buffer. */
export const AGONES_DAY: AgonesScenario = {
  ...MAIN_SCENARIO,
  name: 'agones-day',
  description: `an Agones Fleet (Packed) with a FleetAutoscaler buffer of ${fleetBufferFor(MAIN_SCENARIO)} Ready servers synced every 30 s; main's matches allocate Ready servers, sessions of 5-40 minutes, then the server shuts down and the fleet replaces it; waits are allocations that found no Ready server`,
  seed: 20261127,
  fleet: fleetFor(MAIN_SCENARIO),
};

/** The node-upgrade day: the Agones-style day with every node to be gone 24 h after launch. */
export const NODE_UPGRADE_DAY: AgonesScenario = {
  ...AGONES_DAY,
  name: 'agones-node-upgrade',
  description:
    'the Agones-style day with a forced node lifetime of 24 h (Auto Mode 21 days, compressed): after a 24 h warm-up the nodes at 00:00 are of every age, each to be replaced before its deadline',
  warmUpMs: 24 * HOUR,
  nodeLifetimeMs: 24 * HOUR,
};

/** The Agones-style days, both carrying targets. */
export const AGONES_SCENARIOS: readonly AgonesScenario[] = [AGONES_DAY, NODE_UPGRADE_DAY];

/** The cluster with an Agones Fleet on it (see the header). */
export class AgonesCluster extends SimCluster {
  readonly fleet: FleetController<SimGame>;
  readonly lifetimeMs: number | undefined;
  /** Allocated GameServers, with when their session ends. */
  readonly #ends = new Map<SimGame, number>();
  /** Allocated GameServers, with when they were allocated. */
  readonly #allocatedAt = new Map<SimGame, number>();
  /** Matches waiting for a Ready server, oldest first. */
  readonly #matches: Arrival[] = [];
  #nextId = 0;
  #atStart: Set<SimNode> | undefined;
  #atStartCount = 0;
  #replacedAllAt: number | undefined;
  readonly #late = new Set<SimNode>();
  #maxOverrunMs = 0;
  /** Match time played within the day, summed over matches. */
  #matchMs = 0;

  constructor(sc: AgonesScenario, now: number) {
    super(sc, now);
    this.fleet = new FleetController(sc.fleet, (game) => this.#ends.has(game));
    this.lifetimeMs = sc.nodeLifetimeMs;
  }

  /** Allocated game servers hold players; Ready ones do not. */
  override holdsPlayers(game: SimGame): boolean {
    return this.#ends.has(game);
  }

  override allocatedAtMs(game: SimGame): number | undefined {
    return this.#allocatedAt.get(game);
  }

  /** Allocated game servers now. */
  get allocated(): number {
    return this.#ends.size;
  }

  /** A match: it allocates a Ready server (no pod is created for it). */
  override arrive(arrival: Arrival): void {
    this.#matches.push(arrival);
  }

  /** A Ready server's pod that waited for a node is no player's wait. */
  protected override placed(_game: SimGame): void {}

  override endSessions(): void {
    for (const [game, endsAt] of this.#ends) {
      if (endsAt > this.now) continue;
      // The session is over: the GameServer shuts down and its pod goes.
      this.#ends.delete(game);
      this.#allocatedAt.delete(game);
      game.node?.games.delete(game);
      if (game.node) game.node.lastPodEventAtMs = this.now;
    }
    // Each match in play for this step (those allocated within it start at the next).
    if (this.now >= 0) this.#matchMs += this.#ends.size * this.sc.stepMs;
    this.#checkDeadlines();
  }

  /** The FleetAutoscaler, the GameServerSet, the scheduler, then the allocator. */
  override schedule(): void {
    this.fleet.autoscale(this.now, this.allocated);
    this.#reconcileSet();
    super.schedule();
    this.#allocate();
  }

  /** A node a scaler removed: its Allocated servers are interrupted, its Ready ones made again. */
  override remove(node: SimNode): void {
    super.remove(node);
    for (const game of node.games) {
      this.#allocatedAt.delete(game);
      this.#ends.delete(game);
    }
    node.games.clear();
    if (this.#atStart?.delete(node) && this.#atStart.size === 0) this.#replacedAllAt = this.now;
  }

  override resetCounters(): void {
    super.resetCounters();
    this.#atStart = new Set(this.nodes);
    this.#atStartCount = this.nodes.length;
    this.#late.clear();
    this.#maxOverrunMs = 0;
    this.#matchMs = 0;
  }

  override extraOutcome(): Partial<DayOutcome> {
    const matchHours = round(this.#matchMs / HOUR, 2);
    if (this.lifetimeMs === undefined) return { matchHours };
    const replacement: ReplacementOutcome = {
      nodesAtStart: this.#atStartCount,
      ...(this.#replacedAllAt !== undefined ? { replacedAllMs: this.#replacedAllAt } : {}),
      lateNodes: this.#late.size,
      maxOverrunMs: this.#maxOverrunMs,
    };
    return { replacement, matchHours };
  }

  /** Carries out the GameServerSet's step. */
  #reconcileSet(): void {
    applyReconciliation(
      this,
      this.fleet.reconcile(this.nodes, this.queue.length),
      () => this.#nextId++,
    );
  }

  /** Serves the waiting matches, oldest first, each with a Ready server as Packed picks it. */
  #allocate(): void {
    while (this.#matches.length > 0) {
      const server = this.fleet.allocate(this.nodes);
      const match = this.#matches[0];
      if (!server || !match) return;
      this.#matches.shift();
      this.#ends.set(server, this.now + match.sessionMs);
      this.#allocatedAt.set(server, this.now);
      this.recordWait(match.atMs);
    }
  }

  #checkDeadlines(): void {
    if (this.lifetimeMs === undefined || this.now < 0) return;
    for (const node of this.nodes) {
      const overrun = this.now - (node.launchedAtMs + this.lifetimeMs);
      if (overrun <= 0) continue;
      this.#late.add(node);
      this.#maxOverrunMs = Math.max(this.#maxOverrunMs, overrun);
    }
  }
}

/**
 * Carries out a GameServerSet's step on `cluster`: new servers Pending (ids from `nextId`),
 * surplus ones deleted, those not yet placed first.
 */
export function applyReconciliation(
  cluster: SimCluster,
  step: Reconciliation<SimGame>,
  nextId: () => number,
): void {
  for (let i = 0; i < step.create; i++) {
    cluster.queue.push({ id: nextId(), arrivedAtMs: cluster.now, sessionMs: 0 });
    cluster.arrivedCount += 1;
  }
  cluster.queue.splice(cluster.queue.length - step.unplaced, step.unplaced);
  for (const game of step.placed) {
    game.node?.games.delete(game);
    if (game.node) game.node.lastPodEventAtMs = cluster.now;
  }
}

/** The cluster of an Agones-style day, for `simulateDay`. */
export function agonesCluster(sc: Scenario, now: number): SimCluster {
  if (!('fleet' in sc)) throw new Error(`scenario ${sc.name} has no fleet`);
  return new AgonesCluster(sc as AgonesScenario, now);
}

/**
 * The operator's node upgrade beside Cluster Autoscaler, which has no node lifetime: at `atMs`
 * every node then present is cordoned and drained, as `kubectl drain` does it (kubernetes.io
 * docs, "Safely Drain a Node": evictions honour PodDisruptionBudgets and are retried), all at once
 * (the fastest a node group is replaced; one node at a time would wait on each in turn). The
 * placeholders are evicted at once and go Pending; the game servers are refused by Agones'
 * PodDisruptionBudget (`eviction.safe: Never`), so a node is terminated (the node group shrinks
 * by it) only once its last game server is gone: Ready ones used up by matches or scaled down
 * by the fleet, Allocated ones at their session's end.
 */
export function withNodeGroupUpgrade(inner: Scaler, atMs: number): Scaler {
  let outdated: Set<SimNode> | undefined;
  const loop = (cluster: SimCluster): void => {
    if (!outdated && cluster.now >= atMs) {
      outdated = new Set(cluster.nodes);
      for (const node of outdated) {
        node.unschedulable = true;
        cluster.cordons++;
      }
    }
    for (const node of outdated ?? []) {
      if (!cluster.nodes.includes(node)) {
        outdated?.delete(node);
        continue;
      }
      if (node.placeholders > 0) {
        cluster.pendingPlaceholders += node.placeholders;
        node.placeholders = 0;
        node.lastPodEventAtMs = cluster.now;
      }
      if (node.games.size === 0) {
        cluster.remove(node);
        outdated?.delete(node);
      }
    }
    inner(cluster);
  };
  return Object.assign(
    loop,
    inner.intervalMs !== undefined ? { intervalMs: inner.intervalMs } : {},
  );
}

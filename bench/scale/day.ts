/**
 * The simulated day of the node scale benchmark, the same for every scaler: the scenarios, the
 * arrivals, the cluster a scaler drives (nodes that register and boot after fixed delays, one
 * kube-scheduler, sessions that end, a node that may fail), and the loop that runs a day under one
 * scaler, each at its own loop interval, and measures it. See `bench/scale.ts` for the rules.
 *
 * The scheduler, the same for every scaler (`SimCluster.schedule`):
 * - game servers pack, as Agones' `Packed` scheduling strategy runs them (agones.dev docs,
 *   "Scheduling and Autoscaling", section "Packed": the game server pods carry a
 *   `preferredDuringSchedulingIgnoredDuringExecution` pod affinity to other game servers on the
 *   node's hostname; berth's webhook adds the same term): each goes, first come first served, to
 *   the Ready schedulable node with the most game servers that fits its CPU request;
 * - placeholder pods (the overprovisioning Deployment of cluster-autoscaler/FAQ.md, "How can I
 *   configure overprovisioning with Cluster Autoscaler?", kubernetes/autoscaler at
 *   cluster-autoscaler-1.32.0: pause pods at priority -10, every workload at 0 or above) carry no
 *   affinity, so kube-scheduler's default `NodeResourcesFit` scoring (`LeastAllocated`) spreads
 *   them: each goes to the Ready schedulable node with the most free CPU; the scheduling queue
 *   pops higher priority first, so game servers are placed before them;
 * - a game server that fits nowhere preempts placeholders (kube-scheduler `DefaultPreemption`,
 *   kubernetes.io docs, "Pod Priority and Preemption"): on the node with the most game servers
 *   where evicting placeholders makes room, as few as make room; the placeholders have
 *   `terminationGracePeriodSeconds: 0`, so the game server binds in the same step and has not
 *   waited. The Deployment recreates each evicted placeholder, Pending, and it is placed again
 *   where it fits or waits for a node: what makes Cluster Autoscaler and Karpenter scale up.
 */
import { type Arrival, burstArrivals, poissonArrivals, uniformLength } from '../../sim/arrivals.js';
import { seededRandom } from '../../sim/random.js';

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/** The simulated day, cluster and config; every scenario is this with some fields replaced. */
export const MAIN_SCENARIO = {
  name: 'main',
  description:
    'default config (buffer 10, 60 s passes); up to 8 sessions/min, bursts of 10-30; game servers request 100m with a 150m limit, one DaemonSet pod per node requests 200m with a 400m limit',
  seed: 20260101,
  durationMs: 24 * HOUR,
  /** Simulated before the measured day (same arrival curve), so neither scaler starts cold. */
  warmUpMs: 3 * HOUR,
  stepMs: 10 * SECOND,
  passIntervalMs: MINUTE,
  registerDelayMs: 90 * SECOND,
  bootDelayMs: 180 * SECOND,
  node: { capacityMillis: 4000, allocatableMillis: 3920 },
  daemon: { requestMillis: 200, limitMillis: 400 },
  game: {
    requestMillis: 100,
    limitMillis: 150,
    minSessionMs: 5 * MINUTE,
    maxSessionMs: 40 * MINUTE,
  },
  /** Arrivals per minute: `base + peak * (1 - cos(2π (t - trough) / 24h)) / 2`. */
  arrivals: { basePerMinute: 1, peakPerMinute: 8, troughAtMs: 5 * HOUR },
  /** Bursts: a tournament round or a streamer's raid, `size` sessions within one minute. */
  bursts: { count: 8, minSize: 10, maxSize: 30 },
  scale: {
    nodeSelector: 'role=game-server',
    gameServerCpuMillis: 100,
    bufferGameServers: 10,
    minNodes: 1,
    maxNodes: 60,
    shutdownDelaySeconds: 60,
    nodePool: { type: 'asg', name: 'games' },
  },
};

/** At `atMs` the node with the most game servers fails: its games are lost and it disappears. */
export interface NodeFailure {
  readonly atMs: number;
}

/**
 * From `atMs`, for `durationMs`, extra sessions arrive at `multiplier` times the day's peak rate
 * (`basePerMinute + peakPerMinute`), on top of the diurnal arrivals.
 */
export interface ArrivalWave {
  readonly atMs: number;
  readonly durationMs: number;
  readonly multiplier: number;
}

/**
 * An EC2 Auto Scaling warm pool beside the node group (Amazon EKS User Guide, "Decrease latency
 * for applications with long boot times using warm pools with managed node groups"): `size`
 * instances launched ahead, initialized and kept Stopped; a scale-out takes them first, and the
 * pool launches replacements, which run through a whole boot before they stop. A warm start's
 * instance serves in as little as 30 s (AWS at the feature's launch: InfoQ, "AWS Launches EC2
 * Auto Scaling Warm Pools", May 2021), so it registers after `registerDelayMs` and is Ready a
 * kubelet's start later. A Stopped instance is billed for its volumes only
 * (`stoppedNodeHourShare` of a running node-hour, the node-hours counted include it).
 */
export interface WarmPool {
  readonly size: number;
  readonly registerDelayMs: number;
  readonly bootDelayMs: number;
  readonly stoppedNodeHourShare: number;
}

/** One simulated setting. */
export type Scenario = typeof MAIN_SCENARIO & {
  readonly failure?: NodeFailure;
  readonly wave?: ArrivalWave;
  readonly warmPool?: WarmPool;
};

/**
 * Every scenario carries the targets. Besides main, they show where berth's advantage comes from
 * and where it ends (limits, fleet size against buffer), and how each scaler recovers from a node
 * failure and from a sudden wave, so the main result cannot be read as more than it is.
 */
export const SCENARIOS: readonly Scenario[] = [
  MAIN_SCENARIO,
  {
    ...MAIN_SCENARIO,
    name: 'limits-equal-requests',
    description:
      'main, but every limit equals its request: paddle-soccer (which counts limits) loses its over-provisioning',
    daemon: { requestMillis: 200, limitMillis: 200 },
    game: { ...MAIN_SCENARIO.game, limitMillis: 100 },
  },
  {
    ...MAIN_SCENARIO,
    name: 'large-fleet-buffer-10',
    description:
      'up to 28 sessions/min, bursts of 30-80, buffer still 10: too small for the arrival rate',
    arrivals: { ...MAIN_SCENARIO.arrivals, basePerMinute: 2, peakPerMinute: 28 },
    bursts: { count: 8, minSize: 30, maxSize: 80 },
  },
  {
    ...MAIN_SCENARIO,
    name: 'large-fleet-buffer-80',
    description: 'large fleet with the buffer sized for its bursts',
    arrivals: { ...MAIN_SCENARIO.arrivals, basePerMinute: 2, peakPerMinute: 28 },
    bursts: { count: 8, minSize: 30, maxSize: 80 },
    scale: { ...MAIN_SCENARIO.scale, bufferGameServers: 80 },
  },
  {
    ...MAIN_SCENARIO,
    name: 'node-failure',
    description:
      'main, but at 13:00 the node with the most game servers fails: its games are lost (not interrupted by a scaler) and it is gone',
    failure: { atMs: 13 * HOUR },
  },
  {
    ...MAIN_SCENARIO,
    name: 'warm-pool',
    description:
      'main, with a warm pool of 4 Stopped instances beside the node group (a warm start registers in 30 s, Ready 90 s later); Karpenter launches with CreateFleet and has none',
    warmPool: {
      size: 4,
      registerDelayMs: 30 * SECOND,
      bootDelayMs: 120 * SECOND,
      // A Stopped instance pays for its 20 GiB root volume (a managed node group's default disk,
      // Amazon EKS API CreateNodegroup `diskSize`) at gp3's $0.08 per GB-month
      // (aws.amazon.com/ebs/pricing), $0.0022 an hour: 1.3% of the 4-vCPU node's hour as a
      // c5.xlarge on demand in us-east-1, $0.17 (aws.amazon.com/ec2/pricing/on-demand).
      stoppedNodeHourShare: (20 * 0.08) / 730 / 0.17,
    },
  },
  {
    ...MAIN_SCENARIO,
    name: 'wave-10x',
    description:
      'main, plus one sudden wave at 16:00: 5 minutes of arrivals at 10x the peak rate (90 sessions/min)',
    wave: { atMs: 16 * HOUR, durationMs: 5 * MINUTE, multiplier: 10 },
  },
];

/** The day's sessions, in arrival order: the diurnal curve, the bursts, then the wave, if any. */
export function arrivals(sc: Scenario): Arrival[] {
  const rand = seededRandom(sc.seed);
  const { basePerMinute, peakPerMinute, troughAtMs } = sc.arrivals;
  const length = uniformLength(sc.game.minSessionMs, sc.game.maxSessionMs);
  const diurnal = (t: number) =>
    basePerMinute +
    (peakPerMinute * (1 - Math.cos((2 * Math.PI * (t - troughAtMs)) / (24 * HOUR)))) / 2;
  const rate = (fromMs: number, toMs: number, perMinute: (atMs: number) => number) =>
    poissonArrivals({ fromMs, toMs, stepMs: sc.stepMs, perMinute }, length, rand);
  const bursts = { ...sc.bursts, spanMs: sc.durationMs - HOUR, withinMs: MINUTE };
  const out = [
    ...rate(-sc.warmUpMs, sc.durationMs, diurnal),
    ...burstArrivals(bursts, length, rand),
  ];
  // Drawn last, so a scenario with a wave has exactly main's arrivals plus the wave's.
  if (sc.wave) {
    const { atMs, durationMs, multiplier } = sc.wave;
    out.push(...rate(atMs, atMs + durationMs, () => multiplier * (basePerMinute + peakPerMinute)));
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}

export interface SimGame {
  readonly id: number;
  readonly arrivedAtMs: number;
  readonly sessionMs: number;
  startedAtMs?: number;
  node?: SimNode;
}

export interface SimNode {
  readonly name: string;
  readonly launchedAtMs: number;
  /** Started from the warm pool: it registers and turns Ready sooner. */
  readonly warm?: boolean;
  unschedulable: boolean;
  annotations: Record<string, string>;
  readonly games: Set<SimGame>;
  /** Placeholder pods bound here, each requesting one game server's CPU. */
  placeholders: number;
  /**
   * When a game server or placeholder last bound to this node or left it (DaemonSet pods do not
   * count):
   * Karpenter's NodeClaim `status.lastPodEventTime`, which its `consolidateAfter` counts from.
   */
  lastPodEventAtMs?: number;
}

/** What one scaler did to the simulated day. */
export interface DayOutcome {
  readonly nodeHours: number;
  readonly peakNodes: number;
  readonly interruptedGames: number;
  /** Games lost with a node that failed (not counted as interrupted: no scaler removed it). */
  readonly lostGames: number;
  readonly waitingPods: number;
  readonly waitMinutesTotal: number;
  readonly waitSecondsP99: number;
  readonly cordons: number;
  readonly uncordons: number;
  readonly grows: number;
  readonly deletes: number;
  /** Placeholder pods the scaler's configuration keeps (the Deployment's replicas). */
  readonly placeholders: number;
  /** Placeholders evicted to make room for a game server. */
  readonly preemptions: number;
  readonly sessions: number;
  readonly scalerMs: number;
  /** On a day with forced node lifetimes: how the nodes were replaced (`./agones-day.ts`). */
  readonly replacement?: ReplacementOutcome;
  /** On an Agones-style day: hours of matches played within the day, summed over matches. */
  readonly matchHours?: number;
}

/** How a scaler replaced nodes under a forced lifetime. */
export interface ReplacementOutcome {
  /** Nodes at 00:00. */
  readonly nodesAtStart: number;
  /** From 00:00 until the last of them was gone; undefined when one outlived the day. */
  readonly replacedAllMs?: number;
  /** Nodes that ran past their deadline (launch + lifetime), and the longest overrun. */
  readonly lateNodes: number;
  readonly maxOverrunMs: number;
}

/** The cluster every scaler drives. */
export class SimCluster {
  readonly sc: Scenario;
  readonly nodes: SimNode[] = [];
  readonly queue: SimGame[] = [];
  nodeMs = 0;
  peakNodes = 0;
  interrupted = 0;
  lost = 0;
  waited = 0;
  readonly waitsMs: number[] = [];
  cordons = 0;
  uncordons = 0;
  grows = 0;
  deletes = 0;
  preemptions = 0;
  /** The placeholder Deployment's replicas (0: no overprovisioning). */
  placeholderReplicas = 0;
  /** Placeholders created and not bound to a node: Pending, unschedulable. */
  pendingPlaceholders = 0;
  /** Game servers created so far (what an admission webhook has seen), warm-up included. */
  arrivedCount = 0;
  /** Game servers whose sessions ended so far (their pods' DELETEs, as the webhook sees them). */
  endedCount = 0;
  #next = 0;
  #games = 0;

  /** The node group's warm pool, when the scaler launches through it. */
  readonly warmPool: WarmPool | undefined;
  /** Stopped instances the warm pool holds, and when its booting replacements stop. */
  #warmStopped = 0;
  #warmBoots: number[] = [];

  constructor(
    sc: Scenario,
    public now: number,
    warmPool?: WarmPool,
  ) {
    this.sc = sc;
    this.warmPool = warmPool;
    // Filled before the day: its instances were prepared long before.
    this.#warmStopped = warmPool?.size ?? 0;
  }

  registered(node: SimNode): boolean {
    const delay = node.warm ? this.warmPool?.registerDelayMs : undefined;
    return this.now >= node.launchedAtMs + (delay ?? this.sc.registerDelayMs);
  }

  ready(node: SimNode): boolean {
    const delay = node.warm ? this.warmPool?.bootDelayMs : undefined;
    return this.now >= node.launchedAtMs + (delay ?? this.sc.bootDelayMs);
  }

  /**
   * The warm pool's instances between steps: replacements that finished their boot stop and
   * join the Stopped ones, the pool launches what it lacks, and the step's cost is counted (a
   * booting replacement runs at full price, a Stopped one at its volumes' share).
   */
  tendWarmPool(): void {
    const pool = this.warmPool;
    if (!pool) return;
    const boots = this.#warmBoots.filter((at) => at > this.now);
    this.#warmStopped += this.#warmBoots.length - boots.length;
    while (this.#warmStopped + boots.length < pool.size) boots.push(this.now + this.sc.bootDelayMs);
    this.#warmBoots = boots;
    if (this.now >= 0) {
      this.nodeMs +=
        (boots.length + this.#warmStopped * pool.stoppedNodeHourShare) * this.sc.stepMs;
    }
  }

  /** Instances the pool has (booting ones included): its desired size. */
  get desired(): number {
    return this.nodes.length;
  }

  growTo(size: number): void {
    if (size <= this.nodes.length) return;
    this.grows++;
    while (this.nodes.length < size) {
      this.#next += 1;
      // The group draws on its warm pool first (the EC2 Auto Scaling warm start).
      const warm = this.#warmStopped > 0;
      if (warm) this.#warmStopped -= 1;
      this.nodes.push({
        name: `node-${String(this.#next).padStart(4, '0')}`,
        launchedAtMs: this.now,
        ...(warm ? { warm } : {}),
        unschedulable: false,
        annotations: {},
        games: new Set(),
        placeholders: 0,
      });
    }
  }

  /** A scaler removes a node: the games holding players on it are interrupted. */
  remove(node: SimNode): void {
    for (const game of node.games) if (this.holdsPlayers(game)) this.interrupted++;
    this.#drop(node);
    this.deletes++;
  }

  /** A node fails (hardware, kernel, spot reclaim): its games are lost and it is gone. */
  fail(node: SimNode): void {
    this.lost += node.games.size;
    this.#drop(node);
  }

  /** The node leaves; its placeholders go Pending (their Deployment recreates them). */
  #drop(node: SimNode): void {
    this.pendingPlaceholders += node.placeholders;
    const index = this.nodes.indexOf(node);
    if (index >= 0) this.nodes.splice(index, 1);
  }

  /** The node with the most game servers (the first such in list order), if any. */
  fullestNode(): SimNode | undefined {
    let fullest: SimNode | undefined;
    for (const node of this.nodes) {
      if (!fullest || node.games.size > fullest.games.size) fullest = node;
    }
    return fullest;
  }

  /** CPU requested on `node` by its DaemonSet pod, game servers and placeholders. */
  requestedMillis(node: SimNode): number {
    const { daemon, game } = this.sc;
    return daemon.requestMillis + (node.games.size + node.placeholders) * game.requestMillis;
  }

  freeMillis(node: SimNode): number {
    return this.sc.node.allocatableMillis - this.requestedMillis(node);
  }

  /** Pods a scaler of pending pods sees: game servers, then placeholders. */
  get pendingPods(): number {
    return this.queue.length + this.pendingPlaceholders;
  }

  /**
   * Sets the placeholder Deployment's replicas: new ones are Pending; fewer are taken from the
   * Pending ones first, then from the nodes holding the most.
   */
  setPlaceholderReplicas(replicas: number): void {
    let remove = this.placeholderReplicas - replicas;
    this.placeholderReplicas = replicas;
    if (remove < 0) this.pendingPlaceholders -= remove;
    const fromPending = Math.min(Math.max(0, remove), this.pendingPlaceholders);
    this.pendingPlaceholders -= fromPending;
    remove -= fromPending;
    while (remove > 0) {
      const most = this.nodes.reduce<SimNode | undefined>(
        (a, b) => (!a || b.placeholders > a.placeholders ? b : a),
        undefined,
      );
      if (!most || most.placeholders === 0) break;
      most.placeholders -= 1;
      most.lastPodEventAtMs = this.now;
      remove -= 1;
    }
  }

  #schedulable(node: SimNode): boolean {
    return !node.unschedulable && this.ready(node);
  }

  /** The kube-scheduler (see the header): game servers packed, preempting placeholders, then placeholders spread. */
  schedule(): void {
    const request = this.sc.game.requestMillis;
    while (this.queue.length > 0) {
      let best: SimNode | undefined;
      let preempt: SimNode | undefined;
      for (const node of this.nodes) {
        if (!this.#schedulable(node)) continue;
        const free = this.freeMillis(node);
        if (free >= request) {
          if (!best || node.games.size > best.games.size) best = node;
        } else if (free + node.placeholders * request >= request) {
          if (!preempt || node.games.size > preempt.games.size) preempt = node;
        }
      }
      const game = this.queue[0];
      const target = best ?? preempt;
      if (!target || !game) break;
      if (!best) {
        const victims = Math.ceil((request - this.freeMillis(target)) / request);
        target.placeholders -= victims;
        this.pendingPlaceholders += victims;
        this.preemptions += victims;
      }
      this.queue.shift();
      game.node = target;
      game.startedAtMs = this.now;
      target.games.add(game);
      target.lastPodEventAtMs = this.now;
      this.placed(game);
    }
    while (this.pendingPlaceholders > 0) {
      let roomiest: SimNode | undefined;
      for (const node of this.nodes) {
        if (!this.#schedulable(node) || this.freeMillis(node) < request) continue;
        if (!roomiest || this.freeMillis(node) > this.freeMillis(roomiest)) roomiest = node;
      }
      if (!roomiest) return;
      roomiest.placeholders += 1;
      roomiest.lastPodEventAtMs = this.now;
      this.pendingPlaceholders -= 1;
    }
  }

  /** A game server just bound: here its session starts, so a late one has waited. */
  protected placed(game: SimGame): void {
    this.recordWait(game.arrivedAtMs);
  }

  /** Counts a player who waited: served a step or more after `arrivedAtMs`. */
  protected recordWait(arrivedAtMs: number): void {
    const waitedMs = this.now - arrivedAtMs;
    if (waitedMs >= this.sc.stepMs) {
      this.waited++;
      this.waitsMs.push(waitedMs);
    }
  }

  /**
   * Whether a game server holds players (a scaler that removes its node interrupts them): every
   * one on this day, where a game server is created for its session.
   */
  holdsPlayers(_game: SimGame): boolean {
    return true;
  }

  /**
   * Evicts a game server that holds no players (its fleet makes another, `holdsPlayers`); false,
   * and nothing done, for one that does.
   */
  /** GameServer labels a pass patched (multi-session servers' session label), by server. */
  readonly #gameServerLabels = new Map<SimGame, Readonly<Record<string, string>>>();

  gameServerLabels(game: SimGame): Readonly<Record<string, string>> | undefined {
    return this.#gameServerLabels.get(game);
  }

  setGameServerLabels(game: SimGame, labels: Readonly<Record<string, string>>): void {
    this.#gameServerLabels.set(game, labels);
  }

  evict(game: SimGame): boolean {
    const node = game.node;
    if (!node || this.holdsPlayers(game) || !node.games.delete(game)) return false;
    node.lastPodEventAtMs = this.now;
    return true;
  }

  /** When a game server holding players was allocated (here: placed); undefined for one that holds none. */
  allocatedAtMs(game: SimGame): number | undefined {
    return this.holdsPlayers(game) ? game.startedAtMs : undefined;
  }

  /**
   * A multi-session game server's Counter (`./agones-sessions.ts`): its matches and the most it
   * hosts; undefined on days whose servers host one match each.
   */
  sessionsOf(_game: SimGame): { readonly count: number; readonly capacity: number } | undefined {
    return undefined;
  }

  /** What this day measures besides the common outcome. */
  extraOutcome(): Partial<DayOutcome> {
    return {};
  }

  endSessions(): void {
    for (const node of this.nodes) {
      for (const game of node.games) {
        if ((game.startedAtMs ?? 0) + game.sessionMs <= this.now) {
          node.games.delete(game);
          this.endedCount += 1;
          node.lastPodEventAtMs = this.now;
        }
      }
    }
  }

  /** Forgets what happened during the warm-up. */
  resetCounters(): void {
    this.nodeMs = 0;
    this.peakNodes = 0;
    this.interrupted = 0;
    this.lost = 0;
    this.waited = 0;
    this.waitsMs.length = 0;
    this.cordons = 0;
    this.uncordons = 0;
    this.grows = 0;
    this.deletes = 0;
    this.preemptions = 0;
  }

  arrive(arrival: Arrival): void {
    this.arrivedCount += 1;
    this.queue.push({
      id: this.queue.length,
      arrivedAtMs: arrival.atMs,
      sessionMs: arrival.sessionMs,
    });
  }
}

/**
 * A scaler's loop over the simulated cluster at `cluster.now`, run every `intervalMs` (the
 * scenario's pass interval when absent), after the scheduler, at the same instants for every
 * scaler of the same interval.
 */
export interface Scaler {
  /** berth's loop answers a promise: the pass's act phase is asynchronous, as it is in AWS. */
  (cluster: SimCluster): void | Promise<void>;
  readonly intervalMs?: number;
  /**
   * How it launches nodes: through the node group's Auto Scaling group (its warm pool with it),
   * or, as Karpenter does, with EC2 CreateFleet, which no warm pool serves.
   */
  readonly launches?: 'node-group' | 'fleet';
}

/** `loop` as a scaler that runs every `intervalMs`. */
export function everyMs(
  intervalMs: number,
  loop: (cluster: SimCluster) => void | Promise<void>,
): Scaler {
  return Object.assign(loop, { intervalMs });
}

/** Runs the day under one scaler. */
export async function simulateDay(
  sc: Scenario,
  day: readonly Arrival[],
  scaler: Scaler,
  makeCluster: (sc: Scenario, now: number, warmPool?: WarmPool) => SimCluster = (s, now, pool) =>
    new SimCluster(s, now, pool),
): Promise<DayOutcome> {
  const warmPool = scaler.launches === 'fleet' ? undefined : sc.warmPool;
  const cluster = makeCluster(sc, -sc.warmUpMs - sc.bootDelayMs, warmPool);
  cluster.growTo(sc.scale.minNodes);
  let next = 0;
  let scalerMs = 0;
  let failed = false;
  const intervalMs = scaler.intervalMs ?? sc.passIntervalMs;
  for (let t = -sc.warmUpMs; t < sc.durationMs; t += sc.stepMs) {
    cluster.now = t;
    if (t === 0) cluster.resetCounters();
    cluster.endSessions();
    cluster.tendWarmPool();
    if (sc.failure && !failed && t >= sc.failure.atMs) {
      failed = true;
      const fullest = cluster.fullestNode();
      if (fullest) cluster.fail(fullest);
    }
    for (let a = day[next]; a && a.atMs <= t; a = day[++next]) cluster.arrive(a);
    cluster.schedule();
    if (t % intervalMs === 0) {
      const started = performance.now();
      // Only a promise is awaited: a baseline's synchronous loop pays no microtask per step.
      const running = scaler(cluster);
      if (running) await running;
      scalerMs += performance.now() - started;
      cluster.schedule();
    }
    if (t >= 0) cluster.nodeMs += cluster.nodes.length * sc.stepMs;
    cluster.peakNodes = Math.max(cluster.peakNodes, cluster.nodes.length);
  }
  const waits = [...cluster.waitsMs].sort((a, b) => a - b);
  return {
    nodeHours: round(cluster.nodeMs / HOUR, 2),
    peakNodes: cluster.peakNodes,
    interruptedGames: cluster.interrupted,
    lostGames: cluster.lost,
    waitingPods: cluster.waited,
    waitMinutesTotal: round(waits.reduce((s, w) => s + w, 0) / MINUTE, 1),
    waitSecondsP99: waits.length ? (waits[Math.floor(waits.length * 0.99)] ?? 0) / SECOND : 0,
    cordons: cluster.cordons,
    uncordons: cluster.uncordons,
    grows: cluster.grows,
    deletes: cluster.deletes,
    placeholders: cluster.placeholderReplicas,
    preemptions: cluster.preemptions,
    sessions: day.filter((a) => a.atMs >= 0).length,
    scalerMs: Math.round(scalerMs),
    ...cluster.extraOutcome(),
  };
}

export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

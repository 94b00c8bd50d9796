/**
 * The node scale benchmark: one simulated 24-hour day of game sessions (diurnal arrivals,
 * sessions of 5–40 minutes, bursts) on a simulated cluster, scaled twice with the same arrivals
 * and the same node boot delay: once by berth's plan (the very `buildSnapshot` + `planScale` the
 * pass runs, fed Kubernetes objects), once by the paddle-soccer nodescaler as
 * `shared/reference/scale-down.md` describes it (CPU limits against capacity, pod-count sort, no
 * minimum on cordon, re-cordoning, list-order deletion). Reports node-hours, interrupted games,
 * pods that waited for a slot and cordon/uncordon churn; writes `bench/results/scale.json`.
 *
 * Simulation rules, the same for both scalers:
 * - time advances in 10 s steps; both scalers run every 60 s at the same instants;
 * - an instance asked for registers its Node (NotReady) after 90 s and is Ready after 180 s;
 * - the scheduler places pending game servers first come first served, by CPU requests against
 *   allocatable, onto the Ready schedulable node with the most game servers (berth's preferred
 *   pod affinity packs them); a pod not placed in the step it arrived in has waited;
 * - every node runs one DaemonSet pod; a session starts when its pod is placed;
 * - a node deleted with game servers on it interrupts them; the pool never shrinks on a grow
 *   request (the upstream NodePool contract; the GCE shrink bug is not modelled);
 * - the upstream scaler also runs on every game pod Added/Deleted event; here both run on the
 *   same 60 s tick, so the comparison is of the algorithms, not of their triggers.
 *
 * The main scenario carries the targets; the other scenarios are printed and stored beside it to
 * show where berth's advantage comes from (the baseline counts limits, so it over-provisions)
 * and where it ends (a buffer too small for the arrival rate makes berth's players wait).
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parseConfig } from '../shared/config/schema.js';
import { CORDONED_AT, GAME_SERVER_LABEL } from '../shared/scale/names.js';
import { planScale } from '../shared/scale/plan.js';
import { type ScalePolicy, scalePolicy } from '../shared/scale/policy.js';
import { formatRfc3339, parseRfc3339 } from '../shared/scale/rfc3339.js';
import { buildSnapshot } from '../shared/scale/snapshot.js';
import { poisson, seededRandom } from '../sim/random.js';
import { writeResults } from './support/results.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** The simulated day, cluster and config; every scenario is this with some fields replaced. */
const MAIN_SCENARIO = {
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

/** One simulated setting. */
type Scenario = typeof MAIN_SCENARIO;

/**
 * The main scenario carries the targets; the others show where berth's advantage comes from and
 * where it ends, so the main result cannot be read as more than it is.
 */
const SCENARIOS: readonly Scenario[] = [
  MAIN_SCENARIO,
  {
    ...MAIN_SCENARIO,
    name: 'limits-equal-requests',
    description:
      'main, but every limit equals its request: the baseline loses its over-provisioning',
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
];

interface Arrival {
  readonly atMs: number;
  readonly sessionMs: number;
}

/** The day's sessions, in arrival order. */
function arrivals(sc: Scenario): Arrival[] {
  const rand = seededRandom(sc.seed);
  const { basePerMinute, peakPerMinute, troughAtMs } = sc.arrivals;
  const { minSessionMs, maxSessionMs } = sc.game;
  const session = () => minSessionMs + Math.floor(rand() * (maxSessionMs - minSessionMs));
  const out: Arrival[] = [];
  for (let t = -sc.warmUpMs; t < sc.durationMs; t += sc.stepMs) {
    const phase = (2 * Math.PI * (t - troughAtMs)) / (24 * HOUR);
    const perMinute = basePerMinute + (peakPerMinute * (1 - Math.cos(phase))) / 2;
    const count = poisson((perMinute * sc.stepMs) / MINUTE, rand);
    for (let i = 0; i < count; i++) {
      out.push({ atMs: t + Math.floor(rand() * sc.stepMs), sessionMs: session() });
    }
  }
  const { count, minSize, maxSize } = sc.bursts;
  for (let b = 0; b < count; b++) {
    const at = Math.floor(rand() * (sc.durationMs - HOUR));
    const size = minSize + Math.floor(rand() * (maxSize - minSize + 1));
    for (let i = 0; i < size; i++) {
      out.push({ atMs: at + Math.floor(rand() * MINUTE), sessionMs: session() });
    }
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}

interface SimGame {
  readonly id: number;
  readonly arrivedAtMs: number;
  readonly sessionMs: number;
  startedAtMs?: number;
  node?: SimNode;
}

interface SimNode {
  readonly name: string;
  readonly launchedAtMs: number;
  unschedulable: boolean;
  annotations: Record<string, string>;
  readonly games: Set<SimGame>;
}

/** What one scaler did to the simulated day. */
export interface DayOutcome {
  readonly nodeHours: number;
  readonly peakNodes: number;
  readonly interruptedGames: number;
  readonly waitingPods: number;
  readonly waitMinutesTotal: number;
  readonly waitSecondsP99: number;
  readonly cordons: number;
  readonly uncordons: number;
  readonly grows: number;
  readonly deletes: number;
  readonly sessions: number;
  readonly scalerMs: number;
}

/** The cluster both scalers drive. */
class SimCluster {
  readonly sc: Scenario;
  readonly nodes: SimNode[] = [];
  readonly queue: SimGame[] = [];
  nodeMs = 0;
  peakNodes = 0;
  interrupted = 0;
  waited = 0;
  readonly waitsMs: number[] = [];
  cordons = 0;
  uncordons = 0;
  grows = 0;
  deletes = 0;
  #next = 0;
  #games = 0;

  constructor(
    sc: Scenario,
    public now: number,
  ) {
    this.sc = sc;
  }

  registered(node: SimNode): boolean {
    return this.now >= node.launchedAtMs + this.sc.registerDelayMs;
  }

  ready(node: SimNode): boolean {
    return this.now >= node.launchedAtMs + this.sc.bootDelayMs;
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
      this.nodes.push({
        name: `node-${String(this.#next).padStart(4, '0')}`,
        launchedAtMs: this.now,
        unschedulable: false,
        annotations: {},
        games: new Set(),
      });
    }
  }

  remove(node: SimNode): void {
    this.interrupted += node.games.size;
    const index = this.nodes.indexOf(node);
    if (index >= 0) this.nodes.splice(index, 1);
    this.deletes++;
  }

  freeMillis(node: SimNode): number {
    return (
      this.sc.node.allocatableMillis -
      this.sc.daemon.requestMillis -
      node.games.size * this.sc.game.requestMillis
    );
  }

  /** The kube-scheduler, for game servers: requests against allocatable, packed. */
  schedule(): void {
    while (this.queue.length > 0) {
      let best: SimNode | undefined;
      for (const node of this.nodes) {
        if (node.unschedulable || !this.ready(node)) continue;
        if (this.freeMillis(node) < this.sc.game.requestMillis) continue;
        if (!best || node.games.size > best.games.size) best = node;
      }
      const game = this.queue[0];
      if (!best || !game) return;
      this.queue.shift();
      game.node = best;
      game.startedAtMs = this.now;
      best.games.add(game);
      const waitedMs = this.now - game.arrivedAtMs;
      if (waitedMs >= this.sc.stepMs) {
        this.waited++;
        this.waitsMs.push(waitedMs);
      }
    }
  }

  endSessions(): void {
    for (const node of this.nodes) {
      for (const game of node.games) {
        if ((game.startedAtMs ?? 0) + game.sessionMs <= this.now) node.games.delete(game);
      }
    }
  }

  /** Forgets what happened during the warm-up. */
  resetCounters(): void {
    this.nodeMs = 0;
    this.peakNodes = 0;
    this.interrupted = 0;
    this.waited = 0;
    this.waitsMs.length = 0;
    this.cordons = 0;
    this.uncordons = 0;
    this.grows = 0;
    this.deletes = 0;
  }

  arrive(arrival: Arrival): void {
    this.queue.push({
      id: this.queue.length,
      arrivedAtMs: arrival.atMs,
      sessionMs: arrival.sessionMs,
    });
  }
}

/** A scaler pass over the simulated cluster at `cluster.now`. */
type Scaler = (cluster: SimCluster) => void;

/** Runs the day under one scaler. */
function simulateDay(sc: Scenario, day: readonly Arrival[], scaler: Scaler): DayOutcome {
  const cluster = new SimCluster(sc, -sc.warmUpMs - sc.bootDelayMs);
  cluster.growTo(sc.scale.minNodes);
  let next = 0;
  let scalerMs = 0;
  for (let t = -sc.warmUpMs; t < sc.durationMs; t += sc.stepMs) {
    cluster.now = t;
    if (t === 0) cluster.resetCounters();
    cluster.endSessions();
    for (let a = day[next]; a && a.atMs <= t; a = day[++next]) cluster.arrive(a);
    cluster.schedule();
    if (t % sc.passIntervalMs === 0) {
      const started = performance.now();
      scaler(cluster);
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
    waitingPods: cluster.waited,
    waitMinutesTotal: round(waits.reduce((s, w) => s + w, 0) / MINUTE, 1),
    waitSecondsP99: waits.length ? (waits[Math.floor(waits.length * 0.99)] ?? 0) / SECOND : 0,
    cordons: cluster.cordons,
    uncordons: cluster.uncordons,
    grows: cluster.grows,
    deletes: cluster.deletes,
    sessions: day.filter((a) => a.atMs >= 0).length,
    scalerMs: Math.round(scalerMs),
  };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** berth: the cluster as Kubernetes objects, through the same snapshot and plan code as the pass. */
function berthScaler(sc: Scenario, policy: ScalePolicy): Scaler {
  return (cluster) => {
    const nodes: V1Node[] = [];
    const pods: V1Pod[] = [];
    const cpu = (millis: number) => `${millis}m`;
    for (const node of cluster.nodes) {
      if (!cluster.registered(node)) continue;
      nodes.push({
        metadata: {
          name: node.name,
          labels: { role: 'game-server' },
          annotations: { ...node.annotations },
          creationTimestamp: new Date(node.launchedAtMs + sc.registerDelayMs),
        },
        spec: { unschedulable: node.unschedulable, providerID: `aws:///zone-a/i-${node.name}` },
        status: {
          allocatable: { cpu: cpu(sc.node.allocatableMillis) },
          conditions: [{ type: 'Ready', status: cluster.ready(node) ? 'True' : 'False' }],
        },
      });
      pods.push(podObject(sc, `${node.name}-daemon`, node.name, false));
      for (const game of node.games) pods.push(podObject(sc, `game-${game.id}`, node.name, true));
    }
    for (const game of cluster.queue) pods.push(podObject(sc, `game-${game.id}`, undefined, true));
    const snapshot = buildSnapshot(nodes, pods, { desiredSize: cluster.desired });
    const plan = planScale(snapshot, policy, cluster.now);
    const byName = new Map(cluster.nodes.map((n) => [n.name, n]));
    for (const action of plan.actions) {
      const node = action.node ? byName.get(action.node) : undefined;
      switch (action.type) {
        case 'cordon':
          if (!node) break;
          node.unschedulable = true;
          node.annotations = { ...node.annotations, [CORDONED_AT]: formatRfc3339(cluster.now) };
          cluster.cordons++;
          break;
        case 'uncordon':
          if (!node) break;
          node.unschedulable = false;
          node.annotations = {};
          cluster.uncordons++;
          break;
        case 'grow':
          cluster.growTo(action.to);
          break;
        case 'delete':
          if (node) cluster.remove(node);
          break;
      }
    }
  };
}

function podObject(sc: Scenario, name: string, nodeName: string | undefined, game: boolean): V1Pod {
  const shape = game ? sc.game : sc.daemon;
  return {
    metadata: {
      name,
      namespace: game ? 'games' : 'kube-system',
      labels: game ? { [GAME_SERVER_LABEL]: 'true' } : { app: 'node-agent' },
    },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      containers: [
        {
          name: 'main',
          resources: {
            requests: { cpu: `${shape.requestMillis}m` },
            limits: { cpu: `${shape.limitMillis}m` },
          },
        },
      ],
    },
    status: { phase: nodeName ? 'Running' : 'Pending' },
  };
}

/**
 * The paddle-soccer nodescaler's `scaleNodes()`, as the reference describes it: CPU limits
 * against capacity, integer division per node, uncordon by limits, sizes from the first node,
 * growth from available nodes only, cordon by pod count over all nodes with no minimum (and
 * re-cordoning), deletion in list order, skipped when uncordoning finished the need.
 */
function paddleSoccerScaler(sc: Scenario): Scaler {
  const { gameServerCpuMillis: cpuRequest, bufferGameServers: bufferCount } = sc.scale;
  const { minNodes: minNodeNumber, maxNodes: maxNodeNumber, shutdownDelaySeconds } = sc.scale;
  const capacity = sc.node.capacityMillis;
  const limitsOf = (node: SimNode) => sc.daemon.limitMillis + node.games.size * sc.game.limitMillis;
  const podsOf = (node: SimNode) => node.games.size + 1;
  return (cluster) => {
    // The node list is what the Kubernetes API lists: registered nodes, by name.
    const list = () => cluster.nodes.filter((n) => cluster.registered(n));
    const availableNodes = (nl: SimNode[]) =>
      nl.filter((n) => cluster.ready(n) && !n.unschedulable);
    const cpuRequestsAvailable = (nl: SimNode[]) =>
      availableNodes(nl).reduce(
        (sum, n) => sum + Math.trunc((capacity - limitsOf(n)) / cpuRequest),
        0,
      );
    const cordon = (node: SimNode, unschedulable: boolean) => {
      node.unschedulable = unschedulable;
      node.annotations = { 'nodescale/timestamp': formatRfc3339(cluster.now) };
      if (unschedulable) cluster.cordons++;
      else cluster.uncordons++;
    };

    let nl = list();
    if (nl.length < minNodeNumber) {
      cluster.growTo(minNodeNumber);
      return;
    }
    let available = cpuRequestsAvailable(nl);
    if (available < bufferCount) {
      const gameNumber = bufferCount - available;
      const cordoned = nl.filter((n) => n.unschedulable).sort((a, b) => limitsOf(b) - limitsOf(a));
      let finished = false;
      if (cordoned.length > 0) {
        let need = cpuRequest * gameNumber;
        for (const node of cordoned) {
          cordon(node, false);
          need -= capacity - limitsOf(node);
          if (need <= 0) {
            finished = true;
            break;
          }
        }
      }
      if (finished) return;
      nl = list();
      available = cpuRequestsAvailable(nl);
      const missing = bufferCount - available;
      const first = nl[0];
      if (missing > 0 && first) {
        const diff = Math.ceil((missing * cpuRequest) / capacity);
        const size = Math.min(availableNodes(nl).length + diff, maxNodeNumber);
        cluster.growTo(size);
      }
    } else if (available > bufferCount) {
      const diff = Math.floor(((available - bufferCount) * cpuRequest) / capacity);
      if (diff > 0) {
        const order = [...nl].sort((a, b) => podsOf(a) - podsOf(b));
        for (const node of order.slice(0, diff)) cordon(node, true);
      }
    }
    // deleteCordonedNodes()
    nl = list();
    let l = nl.length;
    if (l <= minNodeNumber) return;
    for (const node of nl) {
      if (!node.unschedulable) continue;
      const at = parseRfc3339(node.annotations['nodescale/timestamp'] ?? '') ?? 0;
      if (node.games.size === 0 && at + shutdownDelaySeconds * SECOND < cluster.now) {
        cluster.remove(node);
        l--;
        if (l <= minNodeNumber) break;
      }
    }
  };
}

/** Both scalers over one scenario's day. */
export interface ScenarioResult {
  readonly scenario: string;
  readonly description: string;
  readonly berth: DayOutcome;
  readonly baseline: DayOutcome;
  /** berth's node-hours over the baseline's. */
  readonly nodeHoursRatio: number;
  readonly targets: {
    readonly nodeHoursAtMost90Percent: boolean;
    readonly noInterruptedGames: boolean;
    readonly noMoreWaitingPods: boolean;
  };
}

/** The main scenario (which carries the targets) and the others. */
export interface ScaleBenchResult {
  readonly main: ScenarioResult;
  readonly scenarios: readonly ScenarioResult[];
  readonly targetsMet: boolean;
}

function compare(sc: Scenario): ScenarioResult {
  const day = arrivals(sc);
  const policy = scalePolicy(parseConfig({ scale: sc.scale }).scale);
  const berth = simulateDay(sc, day, berthScaler(sc, policy));
  const baseline = simulateDay(sc, day, paddleSoccerScaler(sc));
  const nodeHoursRatio = round(berth.nodeHours / baseline.nodeHours, 3);
  return {
    scenario: sc.name,
    description: sc.description,
    berth,
    baseline,
    nodeHoursRatio,
    targets: {
      nodeHoursAtMost90Percent: nodeHoursRatio <= 0.9,
      noInterruptedGames: berth.interruptedGames === 0,
      noMoreWaitingPods: berth.waitingPods <= baseline.waitingPods,
    },
  };
}

/** Runs every scenario under berth and the baseline, prints tables, writes scale.json. */
export async function runScaleBench(): Promise<ScaleBenchResult> {
  const started = performance.now();
  const scenarios = SCENARIOS.map(compare);
  const [main] = scenarios;
  if (!main) throw new Error('no scenario');
  const targetsMet = Object.values(main.targets).every(Boolean);
  console.log(
    `node scale: one simulated day per scenario, berth vs paddle-soccer (${Math.round(performance.now() - started)} ms)`,
  );
  const rows = Object.keys(main.berth) as Array<keyof DayOutcome>;
  console.log(`scenario "${main.scenario}": ${main.description}`);
  console.table(
    Object.fromEntries(
      rows.map((key) => [key, { berth: main.berth[key], 'paddle-soccer': main.baseline[key] }]),
    ),
  );
  console.table(
    scenarios.map((r) => ({
      scenario: r.scenario,
      'node-hours berth/baseline': `${r.berth.nodeHours} / ${r.baseline.nodeHours} (${r.nodeHoursRatio})`,
      'waiting pods': `${r.berth.waitingPods} / ${r.baseline.waitingPods}`,
      interrupted: `${r.berth.interruptedGames} / ${r.baseline.interruptedGames}`,
      'cordons+uncordons': `${r.berth.cordons + r.berth.uncordons} / ${r.baseline.cordons + r.baseline.uncordons}`,
      targets: Object.values(r.targets).every(Boolean) ? 'met' : 'not met',
    })),
  );
  console.log(
    `main: node-hours ratio ${main.nodeHoursRatio} (target <= 0.9), interrupted ${main.berth.interruptedGames} (target 0), waiting ${main.berth.waitingPods} vs ${main.baseline.waitingPods} (target <=): ${targetsMet ? 'targets met' : 'TARGETS NOT MET'}`,
  );
  const targets = [
    {
      target: 'node-hours at most 90% of the baseline',
      pass: main.targets.nodeHoursAtMost90Percent,
      line: `${main.berth.nodeHours} node-hours against ${main.baseline.nodeHours}: ratio ${main.nodeHoursRatio}`,
    },
    {
      target: 'no game server interrupted',
      pass: main.targets.noInterruptedGames,
      line: `${main.berth.interruptedGames} games interrupted`,
    },
    {
      target: 'no more waiting pods than the baseline',
      pass: main.targets.noMoreWaitingPods,
      line: `${main.berth.waitingPods} pods waited against ${main.baseline.waitingPods}`,
    },
  ];
  await writeResults('scale', {
    policy: scalePolicy(parseConfig({ scale: MAIN_SCENARIO.scale }).scale),
    targets,
    targetsMet,
    main,
    scenarios,
    scenarioSettings: SCENARIOS,
  });
  return { main, scenarios, targetsMet };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await runScaleBench();
}

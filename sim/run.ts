/**
 * A simulated game day through berth's real HTTP surface: sessions arrive as the scenario says,
 * each a game-server pod created, scheduled, bound and deleted by the simulated apiserver
 * (`cluster.ts`), beside a set of Services that is replaced bit by bit. Day time runs `speed`
 * times faster than wall time (as fast as berth answers, when that is slower), with up to
 * `inFlight` game-server requests at once. The invariants (`invariants.ts`) are checked every
 * `checkEvery` events, at a quiet moment, and at the end; the first violation stops the run with
 * its evidence.
 */
import type { RepairSummary } from '../shared/repair/pass.js';
import type { UiClusterView, UiState } from '../shared/ui/state.js';
import { httpWebhook, SimCluster } from './cluster.js';
import { gameDay, type Scenario, type Session } from './game-day.js';
import { InFlight } from './in-flight.js';
import { checkMoment } from './invariants.js';
import type { KubeApiServer } from './kube-api-server.js';
import { percentileOfSorted, seededRandom } from './random.js';

/** What to simulate. */
export interface SimOptions {
  readonly hours: number;
  /** Day seconds per wall second. */
  readonly speed: number;
  readonly seed: number;
  readonly nodes: number;
  readonly sessionsPerMinute: number;
  readonly scenario: Scenario;
  /** Services kept alive; one is replaced every `serviceChurnMinutes`. */
  readonly services: number;
  readonly serviceChurnMinutes: number;
  readonly checkEvery: number;
  /** Game-server requests sent at once, as an apiserver has many in flight. */
  readonly inFlight: number;
  /** Day minutes between repair passes (berth's default interval); 0 runs none. */
  readonly repairEveryMinutes: number;
  readonly nodeCpuMillis: number;
  readonly gameServerCpuMillis: number;
  readonly meanSessionMinutes: number;
}

/** Defaults of `berth sim`. */
export const SIM_DEFAULTS: SimOptions = {
  hours: 1,
  speed: 60,
  seed: 1,
  nodes: 20,
  sessionsPerMinute: 20,
  scenario: 'waves',
  services: 20,
  serviceChurnMinutes: 10,
  checkEvery: 100,
  inFlight: 16,
  repairEveryMinutes: 3,
  nodeCpuMillis: 16_000,
  gameServerCpuMillis: 500,
  meanSessionMinutes: 20,
};

/** What a run did, and what it found. */
export interface SimReport {
  readonly scenario: Scenario;
  readonly simulatedHours: number;
  readonly sessions: number;
  readonly gameServersAdmitted: number;
  readonly gameServersDenied: number;
  readonly gameServersPending: number;
  readonly peakGameServers: number;
  /** Game servers whose node failed under them. */
  readonly gameServersLost: number;
  readonly servicesCreated: number;
  readonly servicesDeleted: number;
  readonly bindings: number;
  readonly admissionRequests: number;
  /** What the apiserver waited for admission, over the whole day. */
  readonly admissionMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** Repair passes run, what they found and freed in all. */
  readonly repairPasses: number;
  readonly repairFindings: number;
  readonly repairReleased: number;
  /** Checks made, and the violations found (the run stops at the first moment with any). */
  readonly checks: number;
  readonly violations: readonly string[];
  /** Simulated time reached when the run ended (all of it unless a violation stopped it). */
  readonly reachedHours: number;
  readonly wallSeconds: number;
  readonly nodeHours: number;
}

/** What a day runs against: berth's server, and the cluster's API with the repair pass over it. */
export interface SimTarget {
  /** The berth server: its `/admission` and `/ui/state`. */
  readonly url: string;
  /** Where the stand-in keeps the objects it stores, readable as a Kubernetes API. */
  readonly api?: KubeApiServer;
  /** One repair pass of berth over that API. */
  readonly repair?: () => Promise<RepairSummary>;
}

/** One pass the day ran, as the report and the web view show it. */
export interface SimPass {
  readonly kind: 'repair';
  readonly atHours: number;
  readonly findings: number;
  readonly released: number;
  readonly recorded: number;
  readonly ms: number;
}

/** Hooks for tests and the live view. */
export interface SimHooks {
  /** Handed, once the cluster exists, what the web view shows of it and of the checks so far. */
  readonly watch?: (view: () => UiClusterView) => void;
  /** After every event (its 1-based index): a test injects a fault here. */
  readonly afterEvent?: (index: number) => Promise<void>;
  /** Progress, about every tenth of the day. */
  readonly progress?: (line: string) => void;
}

type Event =
  | { readonly atMs: number; readonly kind: 'start' | 'end'; readonly pod: string }
  | { readonly atMs: number; readonly kind: 'churn' | 'node-failure' | 'repair' };

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * The day's events in time order: each session's start and end, the Service churn, and the node
 * failure of that scenario. Sessions still running when the day ends end with it.
 */
function dayEvents(sessions: readonly Session[], options: SimOptions, repair: boolean): Event[] {
  const dayMs = options.hours * 3_600_000;
  const events: Event[] = sessions.flatMap((session, i): Event[] => [
    { atMs: session.startMs, kind: 'start', pod: `gs-${i}` },
    { atMs: session.endMs, kind: 'end', pod: `gs-${i}` },
  ]);
  for (let atMs = 0; atMs < dayMs; atMs += options.serviceChurnMinutes * 60_000) {
    events.push({ atMs, kind: 'churn' });
  }
  if (options.scenario === 'node-failure') events.push({ atMs: dayMs * 0.4, kind: 'node-failure' });
  if (repair && options.repairEveryMinutes > 0) {
    const every = options.repairEveryMinutes * 60_000;
    for (let atMs = every; atMs < dayMs; atMs += every) events.push({ atMs, kind: 'repair' });
  }
  return events
    .map((event) => ({ ...event, atMs: Math.min(event.atMs, dayMs) }))
    .sort((a, b) => a.atMs - b.atMs);
}

/** What the web view shows of the simulated cluster and the checks so far. */
function viewOf(
  cluster: SimCluster,
  checks: number,
  violations: readonly string[],
  passes: readonly SimPass[],
): UiClusterView {
  const pods = [...cluster.pods.values()];
  return {
    nodes: [...cluster.nodes.values()].map((node) => ({
      name: node.name,
      cpuMillis: node.cpuMillis,
      usedCpuMillis: node.usedCpuMillis,
      gameServers: pods.filter((pod) => pod.node === node.name).length,
      cordoned: node.cordoned,
    })),
    pendingGameServers: pods.filter((pod) => !pod.node).length,
    admissionMs: latencyOf(cluster.admissionMs.slice(-1_000)),
    invariants: { checks, violations: [...violations] },
    passes: passes.slice(-10).map((pass) => ({
      kind: pass.kind,
      atHours: pass.atHours,
      summary: `${pass.findings} findings, ${pass.released} released, ${pass.recorded} recorded in ${pass.ms} ms`,
    })),
  };
}

/** Runs one day against the berth server at `url` (its `/admission` and `/ui/state`). */
export async function runSim(
  target: SimTarget,
  options: SimOptions,
  hooks: SimHooks = {},
): Promise<SimReport> {
  const { url } = target;
  const started = performance.now();
  const random = seededRandom(options.seed);
  const cluster = new SimCluster(
    httpWebhook(`${url}/admission`),
    options.nodes,
    options.nodeCpuMillis,
    target.api,
  );
  const readState = async (): Promise<UiState> => {
    const response = await fetch(`${url}/ui/state`);
    if (!response.ok) throw new Error(`berth answered /ui/state with HTTP ${response.status}`);
    return (await response.json()) as UiState;
  };

  const sessions = gameDay({ ...options, random });
  const sorted = dayEvents(sessions, options, target.repair !== undefined);
  const passes: SimPass[] = [];

  let serial = 0;
  const serviceName = () => `svc-${serial++}`;
  for (let i = 0; i < options.services; i++) {
    await cluster.createService(serviceName(), i % 5 === 0 ? 'NodePort' : 'ClusterIP');
  }

  const violations: string[] = [];
  let checks = 0;
  hooks.watch?.(() => viewOf(cluster, checks, violations, passes));
  let peak = 0;
  let reachedMs = 0;
  let nodeMs = 0;
  let gameServersLost = 0;
  const check = async () => {
    checks++;
    violations.push(...checkMoment(await readState(), cluster));
  };
  const tenth = Math.max(1, Math.floor(sorted.length / 10));
  const inFlight = new InFlight(options.inFlight);
  /** Each game server's CREATE, which its DELETE waits for. */
  const creating = new Map<string, Promise<void>>();
  for (const [index, event] of sorted.entries()) {
    // Pace: day time `atMs` is due `atMs / speed` after the start, in wall time.
    const due = event.atMs / options.speed - (performance.now() - started);
    if (due > 0) await sleep(due);
    nodeMs += (event.atMs - reachedMs) * cluster.nodes.size;
    reachedMs = event.atMs;
    if (event.kind === 'start') {
      let created: () => void = () => {};
      // Settles either way: a failure is the in-flight tracker's to report.
      creating.set(event.pod, new Promise<void>((resolve) => (created = resolve)));
      await inFlight.add(async () => {
        try {
          await cluster.createGameServer(event.pod, options.gameServerCpuMillis);
        } finally {
          created();
        }
      });
    } else if (event.kind === 'end') {
      const created = creating.get(event.pod);
      creating.delete(event.pod);
      await inFlight.add(async () => {
        await created;
        await cluster.deleteGameServer(event.pod);
      });
    } else {
      // Services change and nodes fail one at a time, with nothing else in flight.
      await inFlight.drain();
      if (event.kind === 'repair' && target.repair) {
        const summary = await target.repair();
        passes.push({
          kind: 'repair',
          atHours: event.atMs / 3_600_000,
          findings: Object.values(summary.findings).reduce((a, b) => a + b, 0),
          released: summary.released,
          recorded: summary.recorded,
          ms: Math.round(summary.durationMs),
        });
      } else if (event.kind === 'node-failure') {
        const node = cluster.fullestNode();
        if (node) {
          const lost = await cluster.failNode(node);
          gameServersLost += lost;
          hooks.progress?.(
            `  node ${node} failed at ${(event.atMs / 3_600_000).toFixed(1)} h: ${lost} game servers lost`,
          );
        }
      } else {
        const [oldest] = cluster.services.keys();
        if (oldest !== undefined) await cluster.deleteService(oldest);
        await cluster.createService(serviceName(), serial % 5 === 0 ? 'NodePort' : 'ClusterIP');
      }
    }
    peak = Math.max(peak, cluster.pods.size);
    if (hooks.afterEvent) {
      // A hook sees every earlier event finished.
      await inFlight.drain();
      await hooks.afterEvent(index + 1);
    }
    if ((index + 1) % options.checkEvery === 0) {
      // Checked at a quiet moment: berth and the cluster agree only between requests.
      await inFlight.drain();
      await check();
    }
    if (violations.length > 0) break;
    if ((index + 1) % tenth === 0) {
      hooks.progress?.(
        `  ${(reachedMs / 3_600_000).toFixed(1)} h of ${options.hours} h: ${cluster.pods.size} game servers, ${cluster.counts.podsCreated} admitted, ${checks} checks clean`,
      );
    }
  }
  await inFlight.drain();
  if (violations.length === 0) await check();

  const { counts } = cluster;
  return {
    scenario: options.scenario,
    simulatedHours: options.hours,
    sessions: sessions.length,
    gameServersAdmitted: counts.podsCreated,
    gameServersDenied: counts.podsDenied,
    gameServersPending: counts.podsPending,
    peakGameServers: peak,
    gameServersLost,
    servicesCreated: counts.servicesCreated,
    servicesDeleted: counts.servicesDeleted,
    bindings: counts.bindings,
    admissionRequests:
      counts.podsCreated +
      counts.podsDenied +
      counts.podsDeleted +
      counts.bindings +
      counts.servicesCreated +
      counts.servicesDenied +
      counts.servicesDeleted,
    admissionMs: latencyOf(cluster.admissionMs),
    repairPasses: passes.length,
    repairFindings: passes.reduce((sum, pass) => sum + pass.findings, 0),
    repairReleased: passes.reduce((sum, pass) => sum + pass.released, 0),
    checks,
    violations,
    reachedHours: reachedMs / 3_600_000,
    wallSeconds: (performance.now() - started) / 1000,
    nodeHours: nodeMs / 3_600_000,
  };
}

/** Percentiles of request durations, in ms (0 for none). */
export function latencyOf(durations: readonly number[]): SimReport['admissionMs'] {
  const sorted = [...durations].sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    p50: round(percentileOfSorted(sorted, 50)),
    p99: round(percentileOfSorted(sorted, 99)),
    max: round(sorted.at(-1) ?? 0),
  };
}

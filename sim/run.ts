/**
 * A simulated game day through berth's real HTTP surface: sessions arrive as the scenario says,
 * each a game-server pod created, scheduled, bound, given an address by berth's node IP API and
 * deleted by the simulated apiserver (`cluster.ts`), beside a set of Services that is replaced
 * bit by bit. berth's repair, ENI and scale passes run at their configured intervals over the
 * cluster's API and the EC2 fake; the scale pass's growth joins as new nodes after their
 * provisioning time. Day time runs `speed` times faster than wall time (as fast as berth
 * answers, when that is slower), with up to `inFlight` game-server requests at once. The
 * invariants (`invariants.ts`) are checked every `checkEvery` events, at a quiet moment, after
 * every scale pass, and at the end; the first violation stops the run with its evidence.
 */
import type { EniPassSummary } from '../shared/eni/pass.js';
import type { RepairSummary } from '../shared/repair/pass.js';
import { indexAgones } from '../shared/scale/game-state.js';
import type { ScaleReport } from '../shared/scale/pass.js';
import { buildSnapshot } from '../shared/scale/snapshot.js';
import { nodesView } from '../shared/ui/node-view.js';
import type { UiClusterView, UiState } from '../shared/ui/state.js';
import type { Arrival } from './arrivals.js';
import type { SimClock } from './clock.js';
import { httpWebhook, SimCluster } from './cluster.js';
import type { KubeApiServer } from './fakes/kube-api-server.js';
import { type FleetTally, SimAgonesFleet } from './fleet-day.js';
import { gameDay, type Scenario } from './game-day.js';
import { InFlight } from './in-flight.js';
import { checkMoment } from './invariants.js';
import type { SimMachines, SimNodePool } from './machines.js';
import { httpNodeIps } from './node-ips.js';
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
  /** Whether berth's scale pass runs (at `scale.intervalSeconds`); off, the fleet stays as made. */
  readonly scale: boolean;
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
  scale: true,
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
  /** Game servers on a node berth's scale pass removed: any is a violation. */
  readonly gameServersInterrupted: number;
  /** Game-server CREATEs in the day's busiest minute. */
  readonly peakCreatesPerMinute: number;
  readonly servicesCreated: number;
  readonly servicesDeleted: number;
  readonly servicesUpdated: number;
  readonly bindings: number;
  /** Bindings berth refused: the node was cordoned by berth to drain, or being removed. */
  readonly bindingsRefused: number;
  readonly admissionRequests: number;
  /** What the apiserver waited for admission, over the whole day. */
  readonly admissionMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** Repair passes run, what they found and freed in all. */
  readonly repairPasses: number;
  readonly repairFindings: number;
  readonly repairReleased: number;
  /** The ENI pools: passes, addresses given to pods, sandboxes told to wait and the longest wait. */
  readonly eniPasses: number;
  readonly podIpsAssigned: number;
  readonly podsWaitedForIp: number;
  readonly longestIpWaitSeconds: number;
  /** EC2 calls berth made (mutating ones, throttled ones) and the busiest minute's mutating calls. */
  readonly ec2Calls: number;
  readonly ec2MutatingCalls: number;
  readonly ec2Throttled: number;
  readonly peakEc2MutatingPerMinute: number;
  /** The account's budget for mutating calls, a minute. */
  readonly ec2MutatingBudgetPerMinute: number;
  /** Scale passes, the nodes they added and removed, and the cordons they made. */
  readonly scalePasses: number;
  readonly nodesAdded: number;
  readonly nodesRemoved: number;
  readonly cordons: number;
  /** Checks made, and the violations found (the run stops at the first moment with any). */
  readonly checks: number;
  readonly violations: readonly string[];
  /** Simulated time reached when the run ended (all of it unless a violation stopped it). */
  readonly reachedHours: number;
  readonly wallSeconds: number;
  readonly nodeHours: number;
  /** The `agones-fleet` day's allocations, waits, Ready servers moved and sessions interrupted. */
  readonly fleet?: FleetTally;
}

/**
 * The Ready buffer of the `agones-fleet` day: two minutes of the day's allocations, as Agones
 * users size a buffer FleetAutoscaler to ride out the fleet's start-up time.
 */
export function fleetReadyBuffer(options: Pick<SimOptions, 'sessionsPerMinute'>): number {
  return Math.max(2, Math.ceil(2 * options.sessionsPerMinute));
}

/** The account and fleet of a day, and berth's passes over them, on the day's clock. */
export interface SimWorld {
  readonly clock: SimClock;
  readonly machines: SimMachines;
  readonly pool: SimNodePool;
  /** Labels of the day's nodes (berth's `scale.nodeSelector` matches them). */
  readonly nodeLabels: Readonly<Record<string, string>>;
  eni(): Promise<EniPassSummary>;
  scale(): Promise<ScaleReport>;
  readonly eniEverySeconds: number;
  readonly scaleEverySeconds: number;
  readonly mutatingBudgetPerMinute: number;
}

/** What a day runs against: berth's server, the cluster's API, the account, the passes. */
export interface SimTarget {
  /** The berth server: its `/admission`, node IP API and `/ui/state`. */
  readonly url: string;
  /** Where the stand-in keeps the objects it stores, readable as a Kubernetes API. */
  readonly api: KubeApiServer;
  /** One repair pass of berth over that API. */
  readonly repair: () => Promise<RepairSummary>;
  readonly world: SimWorld;
}

/** One pass the day ran, as the web view shows it. */
export interface SimPass {
  readonly kind: 'repair' | 'eni' | 'scale';
  readonly atHours: number;
  readonly summary: string;
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
  | {
      readonly atMs: number;
      readonly kind:
        | 'churn'
        | 'node-failure'
        | 'subnet-dry'
        | 'subnet-back'
        | 'repair'
        | 'eni'
        | 'scale';
    };

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Every `seconds` of day time, from the first interval to the day's end. */
function every(seconds: number, dayMs: number): number[] {
  const times: number[] = [];
  for (let atMs = seconds * 1000; seconds > 0 && atMs < dayMs; atMs += seconds * 1000) {
    times.push(atMs);
  }
  return times;
}

/**
 * The day's events in time order: each session's start and end, the Service churn, the passes,
 * and the node failure or the subnet running dry of those scenarios (dry from 30% to 60% of the
 * day). Sessions still running when the day ends end with it.
 */
function dayEvents(sessions: readonly Arrival[], options: SimOptions, world: SimWorld): Event[] {
  const dayMs = options.hours * 3_600_000;
  const events: Event[] = sessions.flatMap((session, i): Event[] => [
    { atMs: session.atMs, kind: 'start', pod: `gs-${i}` },
    { atMs: session.atMs + session.sessionMs, kind: 'end', pod: `gs-${i}` },
  ]);
  for (let atMs = 0; atMs < dayMs; atMs += options.serviceChurnMinutes * 60_000) {
    events.push({ atMs, kind: 'churn' });
  }
  if (options.scenario === 'node-failure') events.push({ atMs: dayMs * 0.4, kind: 'node-failure' });
  if (options.scenario === 'subnet-dry') {
    events.push(
      { atMs: dayMs * 0.3, kind: 'subnet-dry' },
      { atMs: dayMs * 0.6, kind: 'subnet-back' },
    );
  }
  const passes = [
    ['repair', options.repairEveryMinutes * 60],
    ['eni', world.eniEverySeconds],
    ['scale', options.scale ? world.scaleEverySeconds : 0],
  ] as const;
  for (const [kind, seconds] of passes) {
    for (const atMs of every(seconds, dayMs)) events.push({ atMs, kind });
  }
  return events
    .map((event) => ({ ...event, atMs: Math.min(event.atMs, dayMs) }))
    .sort((a, b) => a.atMs - b.atMs);
}

/** The day's running figures that the view shows and the report ends with. */
interface DayTally {
  checks: number;
  readonly violations: string[];
  readonly passes: SimPass[];
  /** EC2 mutating calls and game-server CREATEs in each day minute. */
  readonly ec2PerMinute: number[];
  readonly createsPerMinute: number[];
}

/** What the web view shows of the simulated cluster and the checks so far. */
function viewOf(
  cluster: SimCluster,
  tally: DayTally,
  world: SimWorld,
  api: KubeApiServer,
): UiClusterView {
  // Game servers per node, counted in one walk over the pods (the page polls every second).
  const onNode = new Map<string, number>();
  let pending = 0;
  for (const pod of cluster.pods.values()) {
    if (pod.node) onNode.set(pod.node, (onNode.get(pod.node) ?? 0) + 1);
    else pending++;
  }
  const { ec2 } = world.machines;
  // Game state as berth's scale pass reads it from the API: the pods and Agones GameServers there.
  const read = buildSnapshot([], api.pods.values(), {}, indexAgones(api.gameServers.values()));
  const nodes = [...cluster.nodes.values()].map((node) => ({
    name: node.name,
    cpuMillis: node.cpuMillis,
    usedCpuMillis: node.usedCpuMillis,
    gameServers: onNode.get(node.name) ?? 0,
    cordoned: node.cordoned,
    draining: node.draining,
    joining: false,
  }));
  return {
    ...nodesView(nodes, read.gameServers),
    pendingGameServers: pending,
    nodesOnTheirWay: world.pool.onTheirWay,
    waitingForIp: cluster.waitingForIp(),
    admissionMs: latencyOf(cluster.admissionMs.slice(-1_000)),
    invariants: { checks: tally.checks, violations: [...tally.violations] },
    passes: tally.passes.slice(-10),
    ec2: {
      calls: [...ec2.counts.values()].reduce((a, b) => a + b, 0),
      mutatingCalls: ec2.mutatingCalls(),
      throttled: ec2.throttled,
      // Minutes nothing was counted in are holes in the array: zeros to the chart.
      mutatingPerMinute: Array.from(tally.ec2PerMinute.slice(-60), (calls) => calls ?? 0),
      mutatingBudgetPerMinute: world.mutatingBudgetPerMinute,
    },
  };
}

/** One line of what an ENI pass did. */
function eniPassLine(summary: EniPassSummary): string {
  return `${summary.pools} pools: ${summary.ipsAssigned} addresses assigned, ${summary.ipsUnassigned} unassigned, ${summary.enisCreated} ENIs created, ${summary.enisDeleted} deleted; ${summary.assignedIps} held by pods, ${summary.idleIps} idle`;
}

/** One line of what a scale pass did. */
function scalePassLine(report: ScaleReport): string {
  if (report.actions.length === 0)
    return `nothing to do${report.failures.length ? `, ${report.failures.length} failures` : ''}`;
  return report.actions
    .map(
      (action) =>
        `${action.type}${action.node ? ` ${action.node}` : ''}${action.to !== undefined ? ` to ${action.to}` : ''}`,
    )
    .join(', ');
}

/** Runs one day against the berth server at `url` (its `/admission` and `/ui/state`). */
export async function runSim(
  target: SimTarget,
  options: SimOptions,
  hooks: SimHooks = {},
): Promise<SimReport> {
  const { url, world } = target;
  const started = performance.now();
  const random = seededRandom(options.seed);
  const cluster = new SimCluster(httpWebhook(`${url}/admission`), {
    nodeCpuMillis: options.nodeCpuMillis,
    nodeLabels: world.nodeLabels,
    api: target.api,
    machines: world.machines,
    nodeIps: httpNodeIps(url),
    dayMs: () => world.clock.dayMs,
  });
  for (let i = 0; i < options.nodes; i++) cluster.addNode();
  const fleet =
    options.scenario === 'agones-fleet'
      ? new SimAgonesFleet(cluster, target.api, {
          readyBuffer: fleetReadyBuffer(options),
          cpuMillis: options.gameServerCpuMillis,
        })
      : undefined;
  await fleet?.refill();
  const readState = async (): Promise<UiState> => {
    const response = await fetch(`${url}/ui/state`);
    if (!response.ok) throw new Error(`berth answered /ui/state with HTTP ${response.status}`);
    return (await response.json()) as UiState;
  };

  const sessions = gameDay({ ...options, random });
  const sorted = dayEvents(sessions, options, world);
  const tally: DayTally = {
    checks: 0,
    violations: [],
    passes: [],
    ec2PerMinute: [],
    createsPerMinute: [],
  };
  const passed = (kind: SimPass['kind'], summary: string) =>
    tally.passes.push({ kind, atHours: world.clock.dayMs / 3_600_000, summary });

  let serial = 0;
  const serviceName = () => `svc-${serial++}`;
  for (let i = 0; i < options.services; i++) {
    await cluster.createService(serviceName(), i % 5 === 0 ? 'NodePort' : 'ClusterIP');
  }

  hooks.watch?.(() => viewOf(cluster, tally, world, target.api));
  let peak = 0;
  let nodeMs = 0;
  let gameServersLost = 0;
  let gameServersInterrupted = 0;
  const repairs = { passes: 0, findings: 0, released: 0 };
  let eniPasses = 0;
  let scalePasses = 0;
  let cordons = 0;
  let ec2Seen = 0;
  let foreign: string[] = [];
  const check = async () => {
    tally.checks++;
    const state = await readState();
    tally.violations.push(...checkMoment(state, cluster, world.machines.ec2.allInterfaces()));
  };
  /** EC2 calls since the last look, counted in the minute they were seen. */
  const countEc2 = () => {
    const calls = world.machines.ec2.mutatingCalls();
    const minute = Math.floor(world.clock.dayMs / 60_000);
    tally.ec2PerMinute[minute] = (tally.ec2PerMinute[minute] ?? 0) + calls - ec2Seen;
    ec2Seen = calls;
  };
  const tenth = Math.max(1, Math.floor(sorted.length / 10));
  const inFlight = new InFlight(options.inFlight);
  /** Each game server's CREATE, which its DELETE waits for. */
  const creating = new Map<string, Promise<void>>();
  for (const [index, event] of sorted.entries()) {
    // Pace: day time `atMs` is due `atMs / speed` after the start, in wall time.
    const due = event.atMs / options.speed - (performance.now() - started);
    if (due > 0) await sleep(due);
    nodeMs += (event.atMs - world.clock.dayMs) * cluster.nodes.size;
    world.clock.advanceTo(event.atMs);
    const joining = world.pool.due();
    if (joining > 0) {
      await inFlight.drain();
      for (let i = 0; i < joining; i++) cluster.addNode();
      await cluster.schedulePending();
    }
    if (event.kind === 'start') {
      const minute = Math.floor(event.atMs / 60_000);
      tally.createsPerMinute[minute] = (tally.createsPerMinute[minute] ?? 0) + 1;
      let created: () => void = () => {};
      // Settles either way: a failure is the in-flight tracker's to report.
      creating.set(event.pod, new Promise<void>((resolve) => (created = resolve)));
      await inFlight.add(async () => {
        try {
          if (fleet) await fleet.allocate(event.pod);
          else await cluster.createGameServer(event.pod, options.gameServerCpuMillis);
        } finally {
          created();
        }
      });
    } else if (event.kind === 'end') {
      const created = creating.get(event.pod);
      creating.delete(event.pod);
      await inFlight.add(async () => {
        await created;
        if (fleet) await fleet.end(event.pod);
        else await cluster.deleteGameServer(event.pod);
      });
    } else {
      // Passes, Service changes and faults come one at a time, with nothing else in flight.
      await inFlight.drain();
      if (event.kind === 'repair') {
        const summary = await target.repair();
        const findings = Object.values(summary.findings).reduce((a, b) => a + b, 0);
        repairs.passes++;
        repairs.findings += findings;
        repairs.released += summary.released;
        passed(
          'repair',
          `${findings} findings, ${summary.released} released, ${summary.recorded} recorded`,
        );
      } else if (event.kind === 'eni') {
        const summary = await world.eni();
        eniPasses++;
        passed('eni', eniPassLine(summary));
        // Sandboxes told to wait ask again once the pools had their pass.
        await cluster.retrySandboxes();
      } else if (event.kind === 'scale') {
        const report = await world.scale();
        scalePasses++;
        cordons += report.actions.filter((action) => action.type === 'cordon').length;
        passed('scale', scalePassLine(report));
        for (const loss of await cluster.syncNodes()) {
          gameServersInterrupted += loss.gameServers.length;
          tally.violations.push(
            `node ${loss.node} left the cluster after the scale pass at ${(event.atMs / 3_600_000).toFixed(2)} h with game servers running: ${loss.gameServers.join(', ')}`,
          );
        }
        // Ready GameServers berth took away are made again; an Allocated one must never go.
        for (const session of (await fleet?.afterPass()) ?? []) {
          gameServersInterrupted += 1;
          tally.violations.push(
            `session ${session}'s Allocated game server went during the scale pass at ${(event.atMs / 3_600_000).toFixed(2)} h`,
          );
        }
      } else if (event.kind === 'node-failure') {
        const node = cluster.fullestNode();
        if (node) {
          const lost = await cluster.failNode(node);
          gameServersLost += lost;
          hooks.progress?.(
            `  node ${node} failed at ${(event.atMs / 3_600_000).toFixed(1)} h: ${lost} game servers lost`,
          );
        }
      } else if (event.kind === 'subnet-dry') {
        foreign = world.machines.ec2.occupyForeign(world.machines.subnetId, 0);
        hooks.progress?.(
          `  the subnet ran dry at ${(event.atMs / 3_600_000).toFixed(1)} h: other tenants took its ${foreign.length} free addresses`,
        );
      } else if (event.kind === 'subnet-back') {
        world.machines.ec2.releaseForeign(world.machines.subnetId, foreign);
        hooks.progress?.(
          `  the other tenants let ${foreign.length} addresses go at ${(event.atMs / 3_600_000).toFixed(1)} h`,
        );
        foreign = [];
      } else {
        // The oldest Service is replaced, and the newest but one changes type.
        const names = [...cluster.services.keys()];
        if (names[0] !== undefined) await cluster.deleteService(names[0]);
        const changing = names.at(-2);
        if (changing !== undefined && changing !== names[0]) await cluster.updateService(changing);
        await cluster.createService(serviceName(), serial % 5 === 0 ? 'NodePort' : 'ClusterIP');
      }
    }
    countEc2();
    peak = Math.max(peak, cluster.pods.size);
    if (hooks.afterEvent) {
      // A hook sees every earlier event finished.
      await inFlight.drain();
      await hooks.afterEvent(index + 1);
    }
    if ((index + 1) % options.checkEvery === 0 || event.kind === 'scale') {
      // Checked at a quiet moment: berth and the cluster agree only between requests.
      await inFlight.drain();
      await check();
    }
    if (tally.violations.length > 0) break;
    if ((index + 1) % tenth === 0) {
      hooks.progress?.(
        `  ${(world.clock.dayMs / 3_600_000).toFixed(1)} h of ${options.hours} h: ${cluster.nodes.size} nodes, ${cluster.pods.size} game servers, ${cluster.counts.podsCreated} admitted, ${tally.checks} checks clean`,
      );
    }
  }
  await inFlight.drain();
  if (tally.violations.length === 0) await check();

  const { counts } = cluster;
  const { ec2 } = world.machines;
  return {
    scenario: options.scenario,
    simulatedHours: options.hours,
    sessions: sessions.length,
    gameServersAdmitted: counts.podsCreated,
    gameServersDenied: counts.podsDenied,
    gameServersPending: counts.podsPending,
    peakGameServers: peak,
    gameServersLost,
    gameServersInterrupted,
    peakCreatesPerMinute: Math.max(0, ...Array.from(tally.createsPerMinute, (n) => n ?? 0)),
    servicesCreated: counts.servicesCreated,
    servicesDeleted: counts.servicesDeleted,
    servicesUpdated: counts.servicesUpdated,
    bindings: counts.bindings,
    bindingsRefused: counts.bindingsRefused,
    // Every review the cluster sent, whatever its kind: each was timed.
    admissionRequests: cluster.admissionMs.length,
    admissionMs: latencyOf(cluster.admissionMs),
    repairPasses: repairs.passes,
    repairFindings: repairs.findings,
    repairReleased: repairs.released,
    eniPasses,
    podIpsAssigned: counts.ipsAssigned,
    podsWaitedForIp: counts.podsWaitedForIp,
    longestIpWaitSeconds: Math.round(counts.longestIpWaitMs / 1000),
    ec2Calls: [...ec2.counts.values()].reduce((a, b) => a + b, 0),
    ec2MutatingCalls: ec2.mutatingCalls(),
    ec2Throttled: ec2.throttled,
    peakEc2MutatingPerMinute: Math.max(0, ...Array.from(tally.ec2PerMinute, (n) => n ?? 0)),
    ec2MutatingBudgetPerMinute: world.mutatingBudgetPerMinute,
    scalePasses,
    nodesAdded: world.pool.launched,
    nodesRemoved: world.pool.released,
    cordons,
    checks: tally.checks,
    violations: tally.violations,
    reachedHours: world.clock.dayMs / 3_600_000,
    wallSeconds: (performance.now() - started) / 1000,
    nodeHours: nodeMs / 3_600_000,
    ...(fleet ? { fleet: { ...fleet.tally } } : {}),
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

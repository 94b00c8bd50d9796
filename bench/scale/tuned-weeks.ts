/**
 * The scale benchmark over weeks (or a recorded trace), with every peer tuned as its operator
 * tunes it: on the first week (the first day of a trace shorter than a week), by bisection, the
 * fewest placeholder pods (0-200) that keep every game placed, Karpenter at each
 * `consolidateAfter` of the sweep, then the cheapest of them on that week; the settings kept for
 * the whole run, as an operator sets them once. paddle-soccer has no knob for this and runs as
 * written. berth runs on its defaults. Each run is set beside the clairvoyant schedule and the
 * no-foresight floor of the same arrivals (`floor.ts`).
 *
 * The bisection takes more placeholders to make no more games wait. That is nearly so, not
 * exactly: one more placeholder moves where games land, and on the weeks a count one higher has
 * now and then let a few more wait. An operator searching by hand meets the same; every count
 * tried is reported, so such a step shows.
 */
import { basename } from 'node:path';
import type { Arrival } from '../../sim/arrivals.js';
import { berthAsServed } from './berth.js';
import { clusterAutoscalerScaler } from './cluster-autoscaler.js';
import { type DayOutcome, round, type Scaler, type Scenario, simulateDay } from './day.js';
import { type NodeHourFloors, nodeHourFloors } from './floor.js';
import {
  CONSOLIDATE_AFTER_SWEEP_MS,
  consolidateAfterLabel,
  KARPENTER_POLICIES,
  karpenterScaler,
} from './karpenter.js';
import { paddleSoccerScaler } from './paddle-soccer.js';
import { floorsBeside } from './targets.js';
import {
  DAY,
  traceDurationMs,
  WEEK,
  WEEKS_SEEDS,
  WEEKS_WORKLOAD,
  weeksArrivals,
  weeksScenario,
} from './weeks.js';

/** The placeholder counts the bisection searches. */
export const PLACEHOLDER_SEARCH_MAX = 200;

/** One count the bisection tried on the tuning window, and what it gave. */
export interface TriedCount {
  readonly placeholders: number;
  readonly waitingPods: number;
  readonly nodeHours: number;
}

/** A peer setting tuned on the first week: the count found and every count tried. */
export interface TunedSetting {
  readonly name: string;
  readonly placeholders: number;
  /** Whether some count up to the search's maximum kept the tuning window at 0 waiting. */
  readonly met: boolean;
  readonly tuning: DayOutcome;
  readonly tried: readonly TriedCount[];
}

/**
 * The smallest count in 0..`max` for which `placed(count)` holds, by bisection, if `placed(max)`
 * does; `max` and `met: false` otherwise.
 */
export async function smallestPlacing(
  placed: (count: number) => Promise<boolean>,
  max: number = PLACEHOLDER_SEARCH_MAX,
): Promise<{ readonly count: number; readonly met: boolean }> {
  if (!(await placed(max))) return { count: max, met: false };
  let fails = -1;
  let holds = max;
  while (holds - fails > 1) {
    const mid = Math.floor((fails + holds) / 2);
    if (await placed(mid)) holds = mid;
    else fails = mid;
  }
  return { count: holds, met: true };
}

/** A peer whose knob is its placeholder count. */
interface TunablePeer {
  readonly name: string;
  readonly family: 'cluster-autoscaler' | 'karpenter';
  readonly make: (placeholders: number) => Scaler;
}

/** The peers the tuning searches: Cluster Autoscaler, and Karpenter at every setting swept. */
export function tunablePeers(): TunablePeer[] {
  const karpenter = Object.entries(KARPENTER_POLICIES).flatMap(([policy, options]) =>
    CONSOLIDATE_AFTER_SWEEP_MS.map(
      (after): TunablePeer => ({
        name: `karpenter-${policy}-${consolidateAfterLabel(after)}`,
        family: 'karpenter',
        make: (placeholders) =>
          karpenterScaler({ ...options, consolidateAfterMs: after, placeholders }),
      }),
    ),
  );
  return [
    {
      name: 'ca',
      family: 'cluster-autoscaler',
      make: (placeholders) =>
        clusterAutoscalerScaler({ gameServersSafeToEvict: false, placeholders }),
    },
    ...karpenter,
  ];
}

/** The first week of `sc` (its first day when it is shorter than a week), and its sessions. */
export function tuningWindow(
  sc: Scenario,
  arrivals: readonly Arrival[],
): { readonly sc: Scenario; readonly arrivals: readonly Arrival[] } {
  const durationMs = sc.durationMs >= WEEK ? WEEK : DAY;
  return {
    sc: { ...sc, name: `${sc.name}-tuning`, durationMs },
    arrivals: arrivals.filter((a) => a.atMs < durationMs),
  };
}

/** Tunes one peer on the window: the fewest placeholders that keep every game placed. */
export async function tunePeer(
  peer: TunablePeer,
  window: { readonly sc: Scenario; readonly arrivals: readonly Arrival[] },
): Promise<TunedSetting> {
  const runs = new Map<number, DayOutcome>();
  const placed = async (placeholders: number) => {
    const outcome = await simulateDay(window.sc, window.arrivals, peer.make(placeholders));
    runs.set(placeholders, outcome);
    return outcome.waitingPods === 0;
  };
  const { count, met } = await smallestPlacing(placed);
  const tuning = runs.get(count);
  if (!tuning) throw new Error(`${peer.name}: the bisection never ran ${count}`);
  return {
    name: peer.name,
    placeholders: count,
    met,
    tuning,
    tried: [...runs]
      .sort(([a], [b]) => a - b)
      .map(([placeholders, o]) => ({
        placeholders,
        waitingPods: o.waitingPods,
        nodeHours: o.nodeHours,
      })),
  };
}

/** A peer's run of the whole weeks, with the placeholder count tuned for it (none: no knob). */
export type TunedOutcome = DayOutcome & { readonly tunedPlaceholders?: number };

/** One run of the weeks: berth, every peer as tuned, the floors. */
export interface WeeksRun {
  readonly name: string;
  readonly seed: number;
  readonly days: number;
  readonly sessions: number;
  readonly floors: NodeHourFloors;
  readonly berth: DayOutcome;
  /** Every setting tuned on the first week, with its count and the runs tried. */
  readonly tuned: readonly TunedSetting[];
  /** The peers over the whole run: each family's cheapest tuned setting, and paddle-soccer. */
  readonly peers: Readonly<Record<string, TunedOutcome>>;
}

/** The cheapest setting of each family on the tuning window, among those that met it. */
function cheapestPerFamily(
  peers: readonly TunablePeer[],
  tuned: readonly TunedSetting[],
): TunablePeer[] {
  const best = new Map<string, { peer: TunablePeer; setting: TunedSetting }>();
  peers.forEach((peer, i) => {
    const setting = tuned[i];
    if (!setting) return;
    const current = best.get(peer.family);
    const better =
      !current ||
      (setting.met && !current.setting.met) ||
      (setting.met === current.setting.met &&
        setting.tuning.nodeHours < current.setting.tuning.nodeHours);
    if (better) best.set(peer.family, { peer, setting });
  });
  return [...best.values()].map(({ peer }) => peer);
}

/** berth and the tuned peers over `sc`'s whole run of `arrivals`. */
export async function runWeeks(sc: Scenario, arrivals: readonly Arrival[]): Promise<WeeksRun> {
  const berth = await simulateDay(sc, arrivals, berthAsServed(sc));
  const window = tuningWindow(sc, arrivals);
  const peers = tunablePeers();
  const tuned: TunedSetting[] = [];
  for (const peer of peers) tuned.push(await tunePeer(peer, window));
  const whole: Record<string, TunedOutcome> = {
    'paddle-soccer': await simulateDay(sc, arrivals, paddleSoccerScaler(sc)),
  };
  for (const peer of cheapestPerFamily(peers, tuned)) {
    const placeholders = tuned[peers.indexOf(peer)]?.placeholders ?? 0;
    const outcome = await simulateDay(sc, arrivals, peer.make(placeholders));
    whole[`${peer.name}+ph-${placeholders}`] = { ...outcome, tunedPlaceholders: placeholders };
  }
  return {
    name: sc.name,
    seed: sc.seed,
    days: round(sc.durationMs / DAY, 2),
    sessions: arrivals.filter((a) => a.atMs >= 0).length,
    floors: nodeHourFloors(sc, arrivals),
    berth,
    tuned,
    peers: whole,
  };
}

/** A recorded trace to run in place of the generated weeks. */
export interface TraceInput {
  readonly path: string;
  readonly arrivals: readonly Arrival[];
}

/** The runs of the weeks part: every seed of the generated weeks, or the one trace. */
export async function weeksRuns(trace?: TraceInput): Promise<WeeksRun[]> {
  const inputs = trace
    ? [
        {
          // A trace starts cold: nothing ran before its first row.
          sc: {
            ...weeksScenario(`trace ${basename(trace.path)}`, 0, traceDurationMs(trace.arrivals)),
            warmUpMs: 0,
            bursts: { count: 0, minSize: 0, maxSize: 0 },
          },
          arrivals: trace.arrivals,
        },
      ]
    : WEEKS_SEEDS.map((seed) => {
        const sc = weeksScenario(`weeks-${seed}`, seed, WEEKS_WORKLOAD.weeks * WEEK);
        return { sc, arrivals: weeksArrivals(sc) };
      });
  const runs: WeeksRun[] = [];
  for (const { sc, arrivals } of inputs) {
    const started = performance.now();
    process.stdout.write(`  ${sc.name}: ${sc.description}…\n`);
    const run = await runWeeks(sc, arrivals);
    printWeeksRun(run, performance.now() - started);
    runs.push(run);
  }
  return runs;
}

/** One run's table: berth, each peer as tuned, and the tuning's counts. */
function printWeeksRun(run: WeeksRun, ms: number): void {
  const { clairvoyant } = run.floors;
  const row = (scaler: string, o: DayOutcome, placeholders?: number) => ({
    scaler,
    placeholders: placeholders ?? '-',
    'node-hours': o.nodeHours,
    'x clairvoyant': round(o.nodeHours / clairvoyant, 3),
    'waiting pods': o.waitingPods,
    'wait p99 s': o.waitSecondsP99,
    interrupted: o.interruptedGames,
  });
  console.log(
    `${run.name}: ${run.days} days, ${run.sessions} sessions (${Math.round(ms / 1000)} s); ${floorsBeside(run.floors, run.berth.nodeHours)}`,
  );
  console.table([
    row('berth (defaults)', run.berth),
    ...Object.entries(run.peers).map(([name, o]) => row(name, o, o.tunedPlaceholders)),
  ]);
  console.log(
    `tuned on the first ${run.days >= 7 ? 'week' : 'day'}: ${run.tuned
      .map(
        (t) =>
          `${t.name} ${t.placeholders}${t.met ? '' : ' (none up to the search maximum kept every game placed)'} [tried ${t.tried.map((c) => `${c.placeholders}:${c.waitingPods}w`).join(' ')}]`,
      )
      .join('; ')}`,
  );
}

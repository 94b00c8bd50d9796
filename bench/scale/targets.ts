/**
 * The node scale benchmark's targets, judged per scenario from the measured days of berth and of
 * every baseline run that is not information only (paddle-soccer, which keeps a buffer of free
 * CPU; Cluster Autoscaler and Karpenter, reacting to pending pods, with and without placeholder
 * pods, Karpenter at every `consolidateAfter` swept).
 */
import { type DayOutcome, round } from './day.js';
import type { NodeHourFloors } from './floor.js';

/** berth's node-hours may be at most this share of the cheapest comparable baseline's. */
export const NODE_HOURS_RATIO_TARGET = 0.9;

export type ScaleTargetName =
  | 'noInterruptedGames'
  | 'waitingNoMoreThanBestBaseline'
  | `nodeHoursAtMost${number}PercentOfComparable`
  | 'everyNodeReplacedBeforeItsDeadline'
  | 'noWorseThanPeersTunedForTheDay'
  | 'noServerWithAMatchInterrupted'
  | 'nodeHoursPerMatchHourNoWorseThanSingleSession';

/** One target of one scenario, as written to `scale.json`. */
export interface ScaleTarget {
  readonly target: string;
  readonly pass: boolean;
  readonly line: string;
}

export interface ScenarioVerdict {
  readonly name: ScaleTargetName;
  readonly pass: boolean;
  readonly line: string;
}

/**
 * - `noInterruptedGames`: berth removed no node with a game on it;
 * - `waitingNoMoreThanBestBaseline`: berth's waiting pods ≤ the fewest of any baseline run;
 * - `nodeHoursAtMost90PercentOfComparable` (at `ratio` 0.9, the default; the name carries the
 *   ratio): berth's node-hours ≤ `ratio` × the fewest node-hours of
 *   any baseline run whose waiting pods are ≤ berth's (a cheaper day bought with more waiting players
 *   is not comparable); with no such baseline the target passes vacuously, and the line says so.
 *   Given the day's `floors`, the line also prints them beside berth (`floor.ts`).
 */
export function judgeScenario(
  berth: DayOutcome,
  baselines: Readonly<Record<string, DayOutcome>>,
  ratio: number = NODE_HOURS_RATIO_TARGET,
  floors?: NodeHourFloors,
): ScenarioVerdict[] {
  const entries = Object.entries(baselines);
  if (entries.length === 0) throw new Error('no baseline to judge berth against');
  const fewestWaiting = entries.reduce((best, e) =>
    e[1].waitingPods < best[1].waitingPods ? e : best,
  );
  const comparable = entries.filter(([, o]) => o.waitingPods <= berth.waitingPods);
  const cheapest = comparable.reduce<[string, DayOutcome] | undefined>(
    (best, e) => (!best || e[1].nodeHours < best[1].nodeHours ? e : best),
    undefined,
  );
  const nodeHours = cheapest
    ? {
        pass: berth.nodeHours <= ratio * cheapest[1].nodeHours,
        line: `${berth.nodeHours} node-hours against ${cheapest[1].nodeHours} (${cheapest[0]}, the cheapest of ${comparable.length} baseline(s) with <= ${berth.waitingPods} waiting pods): ratio ${round(berth.nodeHours / cheapest[1].nodeHours, 3)}, target <= ${ratio}${floors ? `; ${floorsBeside(floors, berth.nodeHours)}` : ''}`,
      }
    : {
        pass: true,
        line: `vacuous: no baseline had <= ${berth.waitingPods} waiting pods (fewest: ${fewestWaiting[1].waitingPods}, ${fewestWaiting[0]}); berth ${berth.nodeHours} node-hours`,
      };
  return [
    {
      name: 'noInterruptedGames',
      pass: berth.interruptedGames === 0,
      line: `${berth.interruptedGames} games interrupted by berth (${berth.lostGames} lost to a node failure, not counted)`,
    },
    {
      name: 'waitingNoMoreThanBestBaseline',
      pass: berth.waitingPods <= fewestWaiting[1].waitingPods,
      line: `${berth.waitingPods} pods waited against ${fewestWaiting[1].waitingPods} (${fewestWaiting[0]}, the fewest of the baselines)`,
    },
    { name: `nodeHoursAtMost${Math.round(ratio * 100)}PercentOfComparable`, ...nodeHours },
  ];
}

/** The day's floors (`floor.ts`) beside berth's node-hours. */
export function floorsBeside(floors: NodeHourFloors, nodeHours: number): string {
  const times = (floor: number) => round(nodeHours / floor, 3);
  return `the clairvoyant schedule takes ${floors.clairvoyant} node-hours (berth ${times(floors.clairvoyant)} x), one without foresight that keeps a burst of ${floors.noForesight.burst} placed at any moment ${floors.noForesight.nodeHours} (berth ${times(floors.noForesight.nodeHours)} x), perfect packing with nodes ready at once ${floors.packed}`;
}

/** berth's node-hours over the weeks may be at most this many times the clairvoyant schedule's. */
export const WEEKS_CLAIRVOYANT_TARGET = 1.15;

/** What the weeks' targets judge of one run (`tuned-weeks.ts`). */
export interface JudgedWeeks {
  readonly name: string;
  readonly berth: DayOutcome;
  readonly peers: Readonly<Record<string, DayOutcome>>;
  readonly floors: NodeHourFloors;
}

/**
 * Whether berth beats `peer` over the weeks: no more pods waiting at most `ratio` x its
 * node-hours, or fewer waiting, at most half as many, at no more node-hours.
 */
export function beatsOverWeeks(berth: DayOutcome, peer: DayOutcome, ratio: number): boolean {
  const cheaper =
    berth.waitingPods <= peer.waitingPods && berth.nodeHours <= ratio * peer.nodeHours;
  const fewerWaiting =
    berth.waitingPods < peer.waitingPods &&
    berth.waitingPods <= peer.waitingPods / 2 &&
    berth.nodeHours <= peer.nodeHours;
  return cheaper || fewerWaiting;
}

/**
 * One run's targets: berth beats every peer as tuned on the first week, stays within
 * WEEKS_CLAIRVOYANT_TARGET of the clairvoyant schedule, and interrupts no game.
 */
export function judgeWeeks(
  run: JudgedWeeks,
  ratio: number = NODE_HOURS_RATIO_TARGET,
): ScaleTarget[] {
  const { berth, floors } = run;
  const peers = Object.entries(run.peers);
  const lost = peers.filter(([, peer]) => !beatsOverWeeks(berth, peer, ratio));
  const versus = peers
    .map(
      ([name, peer]) =>
        `${name} ${peer.nodeHours} node-hours, ${peer.waitingPods} waiting (berth ${round(berth.nodeHours / peer.nodeHours, 3)} x)`,
    )
    .join('; ');
  const times = round(berth.nodeHours / floors.clairvoyant, 3);
  return [
    {
      target: `${run.name}: against every peer tuned on the first week, no more pods waiting at most ${ratio} x its node-hours, or at most half as many waiting at no more`,
      pass: lost.length === 0,
      line: `berth ${berth.nodeHours} node-hours, ${berth.waitingPods} waiting; ${versus}${lost.length > 0 ? `; not beaten: ${lost.map(([name]) => name).join(', ')}` : ''}`,
    },
    {
      target: `${run.name}: at most ${WEEKS_CLAIRVOYANT_TARGET} x the clairvoyant schedule's node-hours`,
      pass: times <= WEEKS_CLAIRVOYANT_TARGET,
      line: `berth ${berth.nodeHours} node-hours = ${times} x the clairvoyant schedule's ${floors.clairvoyant}; ${floorsBeside(floors, berth.nodeHours)}`,
    },
    {
      target: `${run.name}: no game interrupted`,
      pass: berth.interruptedGames === 0,
      line: `${berth.interruptedGames} games interrupted by berth`,
    },
  ];
}

/** A peer setting tuned on the very day it is judged on (`tuned-weeks.ts`). */
export interface TunedForDay {
  readonly name: string;
  readonly placeholders: number;
  readonly tuning: DayOutcome;
}

/**
 * The day's own bound: berth at most 1.00 x the node-hours of every peer tuned in hindsight for
 * that very day (its fewest placeholders that keep every game placed), at no more pods waiting.
 */
export function judgeTunedDay(berth: DayOutcome, tuned: readonly TunedForDay[]): ScenarioVerdict {
  const worse = tuned.filter(
    (t) => berth.waitingPods > t.tuning.waitingPods || berth.nodeHours > t.tuning.nodeHours,
  );
  const cheapest = tuned.reduce<TunedForDay | undefined>(
    (best, t) => (!best || t.tuning.nodeHours < best.tuning.nodeHours ? t : best),
    undefined,
  );
  return {
    name: 'noWorseThanPeersTunedForTheDay',
    pass: worse.length === 0,
    line: `berth ${berth.nodeHours} node-hours, ${berth.waitingPods} waiting; ${tuned.length} peer settings tuned on the day, the cheapest ${cheapest ? `${cheapest.name}+ph-${cheapest.placeholders} ${cheapest.tuning.nodeHours} node-hours, ${cheapest.tuning.waitingPods} waiting (berth ${round(berth.nodeHours / cheapest.tuning.nodeHours, 3)} x)` : 'none'}${worse.length > 0 ? `; berth worse than ${worse.map((t) => `${t.name}+ph-${t.placeholders}`).join(', ')}` : ''}`,
  };
}

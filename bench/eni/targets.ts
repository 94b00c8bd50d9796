/**
 * The ENI benchmark's targets, judged from the runs alone: berth at its config defaults against
 * every peer on the same day and the same subnets. Pure, so the verdicts are tested apart from
 * the simulation.
 */
import type { EniRunResult } from './ledger.js';

/** One target's verdict, as every results file reports it. */
export interface TargetVerdict {
  readonly target: string;
  readonly pass: boolean;
  readonly line: string;
}

/** berth at its defaults and the peers, on the same subnets. */
export interface DayRuns {
  readonly berth: EniRunResult;
  readonly peers: readonly EniRunResult[];
}

/** The runs of one simulated day; a fragmented day may add runs on reserved subnets. */
export interface JudgedDay extends DayRuns {
  readonly day: string;
  readonly fragmented: boolean;
  /** The same day on subnets with a prefix-type CIDR reservation: berth and the peers run so. */
  readonly reserved?: DayRuns;
}

/** berth's calls may be at most this share of the best peer's. */
export const CALLS_SHARE = 0.5;
/** On a fragmented day, no pod may wait longer than this because of fragmentation. */
export const FRAGMENTATION_WAIT_S = 5;
/** The peer whose idle addresses berth must not exceed: the VPC CNI's recommended prefix mode. */
export const IDLE_REFERENCE = 'vpc-cni prefix WARM_PREFIX_TARGET=1';

function best(peers: readonly EniRunResult[], by: (run: EniRunResult) => number): EniRunResult {
  const [first, ...rest] = peers;
  if (!first) throw new Error('no peer runs to judge against');
  return rest.reduce((a, b) => (by(b) < by(a) ? b : a), first);
}

const share = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 1000) / 1000;

/** The clean day's targets: calls and waits against the best peers, idle addresses. */
function judgeClean({ berth, peers }: DayRuns): TargetVerdict[] {
  const fewestCalls = best(peers, (run) => run.mutatingCalls);
  const fewestWaits = best(peers, (run) => run.waitingPods);
  const idleReference = peers.find((run) => run.name === IDLE_REFERENCE);
  if (!idleReference) throw new Error(`no ${IDLE_REFERENCE} run to judge idle addresses against`);
  return [
    {
      target: `clean day: mutating EC2 calls at most ${CALLS_SHARE * 100}% of the best peer's`,
      pass: berth.mutatingCalls <= CALLS_SHARE * fewestCalls.mutatingCalls,
      line: `${berth.name}: ${berth.mutatingCalls} calls, ${share(berth.mutatingCalls, fewestCalls.mutatingCalls)} of ${fewestCalls.name}'s ${fewestCalls.mutatingCalls}`,
    },
    {
      target: 'clean day: no more pods waiting for an address than the best peer',
      pass: berth.waitingPods <= fewestWaits.waitingPods,
      line: `${berth.name}: ${berth.waitingPods} pods waited, against ${fewestWaits.waitingPods} for ${fewestWaits.name}`,
    },
    {
      target: `clean day: no more idle addresses than ${IDLE_REFERENCE}`,
      pass: berth.idleIps.average <= idleReference.idleIps.average,
      line: `${berth.name}: ${berth.idleIps.average} idle on average (peak ${berth.idleIps.peak}), against ${idleReference.idleIps.average} (peak ${idleReference.idleIps.peak})`,
    },
  ];
}

/**
 * A fragmented day's targets on one set of subnets: no more pods waiting than any peer, and no
 * more calls than the best peer that keeps as few waiting (met at once when none does).
 */
function judgeFragmented(label: string, { berth, peers }: DayRuns): TargetVerdict[] {
  const fewestWaits = best(peers, (run) => run.waitingPods);
  const asFew = peers.filter((run) => run.waitingPods <= berth.waitingPods);
  const rival = asFew.length > 0 ? best(asFew, (run) => run.mutatingCalls) : undefined;
  return [
    {
      target: `${label}: no more pods waiting for an address than any peer`,
      pass: berth.waitingPods <= fewestWaits.waitingPods,
      line: `${berth.name}: ${berth.waitingPods} pods waited, against ${fewestWaits.waitingPods} for ${fewestWaits.name}`,
    },
    {
      target: `${label}: no more mutating EC2 calls than the best peer that keeps as few pods waiting`,
      pass: rival === undefined || berth.mutatingCalls <= rival.mutatingCalls,
      line: rival
        ? `${berth.name}: ${berth.mutatingCalls} calls, against ${rival.mutatingCalls} for ${rival.name} (${rival.waitingPods} pods waited)`
        : `${berth.name}: ${berth.mutatingCalls} calls; every peer kept more pods waiting`,
    },
  ];
}

/**
 * The targets: on the clean day calls, waits and idle addresses against the best peers;
 * on every fragmented day (and its reserved subnets) waits and calls against the peers, and no
 * wait over FRAGMENTATION_WAIT_S for fragmentation; berth within its budget on every day.
 */
export function judgeEni(days: readonly JudgedDay[]): TargetVerdict[] {
  const clean = days.find((day) => !day.fragmented);
  if (!clean) throw new Error('no clean day to judge');
  const verdicts = judgeClean(clean);
  const berthRuns: EniRunResult[] = [];
  for (const day of days) {
    berthRuns.push(day.berth, ...(day.reserved ? [day.reserved.berth] : []));
    if (!day.fragmented) continue;
    verdicts.push(...judgeFragmented(`${day.day} day`, day));
    if (day.reserved) {
      verdicts.push(...judgeFragmented(`${day.day} day, prefix reservation`, day.reserved));
    }
    const frag = day.berth.fragmentationWaits;
    verdicts.push({
      target: `${day.day} day: no pod waits longer than ${FRAGMENTATION_WAIT_S} s because of fragmentation`,
      pass: frag.longestSeconds <= FRAGMENTATION_WAIT_S,
      line: `${day.berth.name}: ${frag.pods} pods waited while their subnet had no free /28 but 16 or more free addresses, the longest ${frag.longestSeconds} s`,
    });
  }
  const over = berthRuns.filter((run) => run.budgetViolations > 0);
  verdicts.push({
    target: "within berth's EC2 rate budget, on every day",
    pass: over.length === 0,
    line:
      over.length === 0
        ? `0 calls over the budget in ${berthRuns.length} berth runs`
        : over.map((run) => `${run.name}: ${run.budgetViolations} over`).join('; '),
  });
  return verdicts;
}

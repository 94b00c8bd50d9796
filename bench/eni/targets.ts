/**
 * The ENI benchmark's targets, judged from the runs alone: berth at its config defaults against
 * every peer on the same day and the same subnets. Pure, so the verdicts are tested apart from
 * the simulation.
 */

import type { TargetVerdict } from '../support/results.js';
import type { EniRunResult } from './ledger.js';

/** berth at its defaults and the peers, on the same subnets. */
export interface DayRuns {
  readonly berth: EniRunResult;
  readonly peers: readonly EniRunResult[];
}

/** The runs of one simulated day; a fragmented day may add runs on reserved subnets. */
export interface JudgedDay extends DayRuns {
  readonly day: string;
  readonly fragmented: boolean;
  /** The names of the peers that are the VPC CNI sweep's runs (`vpcCniSweep`). */
  readonly swept?: readonly string[];
  /** The same day on subnets with a prefix-type CIDR reservation: berth and the peers run so. */
  readonly reserved?: DayRuns;
}

/**
 * The clean day's bounds on berth at its config defaults: calls near the day's floor of /28
 * assigns, and no more idle addresses than before node-side handout.
 */
export const CLEAN_DAY = { mutatingCalls: 700, idleAverage: 5927 } as const;
/** berth's calls may be at most this share of every swept VPC CNI run's. */
export const CALLS_SHARE = 0.6;
/** On a fragmented day, no pod may wait longer than this because of fragmentation. */
export const FRAGMENTATION_WAIT_S = 5;

function best(peers: readonly EniRunResult[], by: (run: EniRunResult) => number): EniRunResult {
  const [first, ...rest] = peers;
  if (!first) throw new Error('no peer runs to judge against');
  return rest.reduce((a, b) => (by(b) < by(a) ? b : a), first);
}

const share = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 1000) / 1000;

/** The clean day's own bounds: calls, waits, the budget, idle addresses. */
function judgeCleanBounds(berth: EniRunResult): TargetVerdict {
  return {
    target: `Clean day: at most ${CLEAN_DAY.mutatingCalls} mutating EC2 calls, 0 pods waiting, 0 calls over the budget, mean idle addresses no more than ${CLEAN_DAY.idleAverage.toLocaleString('en-US')}`,
    pass:
      berth.mutatingCalls <= CLEAN_DAY.mutatingCalls &&
      berth.waitingPods === 0 &&
      berth.budgetViolations === 0 &&
      berth.idleIps.average <= CLEAN_DAY.idleAverage,
    line: `${berth.name}: ${berth.mutatingCalls} mutating calls, ${berth.waitingPods} pods waiting (longest ${berth.longestWaitSeconds} s), ${berth.budgetViolations} over the budget, ${berth.idleIps.average} idle on average`,
  };
}

/** berth against one swept VPC CNI run: the three checks, and how far the calls are. */
function against(berth: EniRunResult, peer: EniRunResult) {
  const failed = [
    berth.mutatingCalls > CALLS_SHARE * peer.mutatingCalls,
    berth.idleIps.average > peer.idleIps.average,
    berth.waitingPods > peer.waitingPods,
  ].filter(Boolean).length;
  return { peer, failed, share: share(berth.mutatingCalls, peer.mutatingCalls) };
}

/**
 * Every swept VPC CNI run: berth at most CALLS_SHARE of its calls, at no more idle addresses and
 * no more pods waiting. The line names the worst run: the most checks failed, then the highest
 * share of its calls.
 */
function judgeSweep({ berth, peers, swept = [] }: JudgedDay): TargetVerdict {
  const runs = peers.filter((run) => swept.includes(run.name));
  if (runs.length === 0) throw new Error('no swept VPC CNI runs to judge against');
  const results = runs.map((peer) => against(berth, peer));
  const worst = results.reduce((a, b) =>
    b.failed > a.failed || (b.failed === a.failed && b.share > a.share) ? b : a,
  );
  const met = results.filter((r) => r.failed === 0).length;
  const { peer } = worst;
  return {
    target: `Every VPC CNI run: berth makes at most ${CALLS_SHARE} x its calls at no more idle addresses and no more pods waiting`,
    pass: met === results.length,
    line: `${met} of ${results.length} swept runs met on the clean day; worst ${peer.name}: ${berth.name} ${berth.mutatingCalls} calls = ${worst.share} x its ${peer.mutatingCalls}, ${berth.idleIps.average} idle against ${peer.idleIps.average}, ${berth.waitingPods} pods waiting against ${peer.waitingPods}`,
  };
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
 * The targets: on the clean day berth's own bounds and every swept VPC CNI run; on every
 * fragmented day (and its reserved subnets) waits and calls against the peers, and no
 * wait over FRAGMENTATION_WAIT_S for fragmentation; berth within its budget on every day.
 */
export function judgeEni(days: readonly JudgedDay[]): TargetVerdict[] {
  const clean = days.find((day) => !day.fragmented);
  if (!clean) throw new Error('no clean day to judge');
  const verdicts = [judgeCleanBounds(clean.berth), judgeSweep(clean)];
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

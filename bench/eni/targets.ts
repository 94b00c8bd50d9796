/**
 * The ENI benchmark's targets, judged from the runs alone: berth at its config defaults against
 * every peer on the same day. Pure, so the verdicts are tested apart from the simulation.
 */
import type { EniRunResult } from './ledger.js';

/** One target's verdict, as every results file reports it. */
export interface TargetVerdict {
  readonly target: string;
  readonly pass: boolean;
  readonly line: string;
}

/** The runs of one simulated day: berth at its defaults, and the peers. */
export interface DayRuns {
  readonly berth: EniRunResult;
  readonly peers: readonly EniRunResult[];
}

/** berth's calls may be at most this share of the best peer's. */
export const CALLS_SHARE = 0.5;
/** On the fragmented day, no pod may wait longer than this because of fragmentation. */
export const FRAGMENTATION_WAIT_S = 5;
/** The peer whose idle addresses berth must not exceed: the VPC CNI's recommended prefix mode. */
export const IDLE_REFERENCE = 'vpc-cni prefix WARM_PREFIX_TARGET=1';

function best(peers: readonly EniRunResult[], by: (run: EniRunResult) => number): EniRunResult {
  const [first, ...rest] = peers;
  if (!first) throw new Error('no peer runs to judge against');
  return rest.reduce((a, b) => (by(b) < by(a) ? b : a), first);
}

const share = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 1000) / 1000;

/** The targets: calls, waits, idle addresses and budget on the clean day; fragmentation. */
export function judgeEni(clean: DayRuns, fragmented: DayRuns): TargetVerdict[] {
  const { berth } = clean;
  const fewestCalls = best(clean.peers, (run) => run.mutatingCalls);
  const fewestWaits = best(clean.peers, (run) => run.waitingPods);
  const idleReference = clean.peers.find((run) => run.name === IDLE_REFERENCE);
  if (!idleReference) throw new Error(`no ${IDLE_REFERENCE} run to judge idle addresses against`);
  const frag = fragmented.berth.fragmentationWaits;
  return [
    {
      target: `mutating EC2 calls at most ${CALLS_SHARE * 100}% of the best peer's`,
      pass: berth.mutatingCalls <= CALLS_SHARE * fewestCalls.mutatingCalls,
      line: `${berth.name}: ${berth.mutatingCalls} calls, ${share(berth.mutatingCalls, fewestCalls.mutatingCalls)} of ${fewestCalls.name}'s ${fewestCalls.mutatingCalls}`,
    },
    {
      target: 'no more pods waiting for an address than the best peer',
      pass: berth.waitingPods <= fewestWaits.waitingPods,
      line: `${berth.name}: ${berth.waitingPods} pods waited, against ${fewestWaits.waitingPods} for ${fewestWaits.name}`,
    },
    {
      target: `no more idle addresses than ${IDLE_REFERENCE}`,
      pass: berth.idleIps.average <= idleReference.idleIps.average,
      line: `${berth.name}: ${berth.idleIps.average} idle on average (peak ${berth.idleIps.peak}), against ${idleReference.idleIps.average} (peak ${idleReference.idleIps.peak})`,
    },
    {
      target: "within berth's EC2 rate budget, on both days",
      pass: berth.budgetViolations === 0 && fragmented.berth.budgetViolations === 0,
      line: `${berth.name}: ${berth.budgetViolations} calls over the budget on the clean day, ${fragmented.berth.budgetViolations} on the fragmented day`,
    },
    {
      target: `on the fragmented day no pod waits longer than ${FRAGMENTATION_WAIT_S} s because of fragmentation`,
      pass: frag.longestSeconds <= FRAGMENTATION_WAIT_S,
      line: `${fragmented.berth.name}: ${frag.pods} pods waited while their subnet had no free /28, the longest ${frag.longestSeconds} s`,
    },
  ];
}

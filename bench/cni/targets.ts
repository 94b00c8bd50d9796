/**
 * The CNI benchmark's measurements and targets. The run inside the staged node (`inside.ts`)
 * writes the measurements; the targets are judged from them alone. Pure, so a verdict is tested
 * apart from a run.
 */
import type { TargetVerdict } from '../support/results.js';
import { percentile, round } from '../support/stats.js';

/** The file under the run's work directory the measurements are written to. */
export const MEASUREMENTS_FILE = 'measurements.json';

/** berth-cni's ADD p99 may be at most this many times a bare `node -e 0`'s, in the same run. */
export const START_RATIO = 2;

/** One timed run of a program, from its spawn to its exit with its output read. */
export interface TimedRun {
  readonly ms: number;
  readonly ok: boolean;
  /** For a berth-cni ADD: whether its address was on a secondary ENI, so it routed the pod. */
  readonly routed?: boolean;
}

/** What each round of the one-at-a-time phase runs, in the order the table shows them. */
export const ONE_AT_A_TIME = {
  nodeStart: 'node -e 0',
  version: 'berth-cni VERSION',
  add: 'berth-cni ADD',
  chainAdd: 'ptp ADD, berth-cni IPAM',
  referenceAdd: 'ptp ADD, host-local IPAM',
  del: 'berth-cni DEL',
  chainDel: 'ptp DEL, berth-cni IPAM',
  referenceDel: 'ptp DEL, host-local IPAM',
} as const;

/** What the concurrent phase runs, several at a time. */
export const AT_ONCE = {
  add: ONE_AT_A_TIME.add,
  chainAdd: ONE_AT_A_TIME.chainAdd,
  referenceAdd: ONE_AT_A_TIME.referenceAdd,
  del: ONE_AT_A_TIME.del,
  chainDel: ONE_AT_A_TIME.chainDel,
  referenceDel: ONE_AT_A_TIME.referenceDel,
} as const;

/** One value per key of `kinds` (`ONE_AT_A_TIME`, `AT_ONCE`, or anything keyed by them). */
export function perKind<K extends string, V>(
  kinds: Readonly<Record<K, unknown>>,
  value: (kind: K) => V,
): Record<K, V> {
  return Object.fromEntries(Object.keys(kinds).map((kind) => [kind, value(kind as K)])) as Record<
    K,
    V
  >;
}

/** What the staged run measured. */
export interface CniMeasurements {
  /** Rounds of the one-at-a-time phase: one run of each kind per round. */
  readonly rounds: number;
  /** Pods each berth-cni kind keeps added in that phase before it deletes the oldest. */
  readonly held: number;
  /** Runs in flight in the concurrent phase. */
  readonly concurrency: number;
  readonly oneAtATime: Readonly<Record<keyof typeof ONE_AT_A_TIME, readonly TimedRun[]>>;
  readonly atOnce: Readonly<Record<keyof typeof AT_ONCE, readonly TimedRun[]>>;
  /** The concurrent phase's berth-cni ADDs that succeeded, and what they and the node hold. */
  readonly concurrentAddresses: {
    readonly added: number;
    /** Distinct addresses among their results. */
    readonly distinct: number;
    /** The node's lease files once they were all added. */
    readonly leases: number;
    /** Leases naming the container whose result carries the address. */
    readonly leasesOfTheirContainer: number;
  };
  /** Requests berth's node IP API answered while the plugin ran: the node's set serves all. */
  readonly berthRequests: number;
  /** Lease files left once every pod was deleted. */
  readonly leasesLeft: number;
}

/** Latency of one kind of run. */
export interface RunSummary {
  readonly runs: number;
  readonly failed: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** p50, p99 and max over all runs, failed ones included, and how many failed. */
export function summarize(runs: readonly TimedRun[]): RunSummary {
  const ms = runs.map((r) => r.ms);
  return {
    runs: runs.length,
    failed: runs.filter((r) => !r.ok).length,
    p50Ms: round(percentile(ms, 50), 1),
    p99Ms: round(percentile(ms, 99), 1),
    maxMs: round(ms.length === 0 ? Number.NaN : Math.max(...ms), 1),
  };
}

/** Every summary, by phase and kind. */
export function summaries(m: CniMeasurements) {
  return {
    oneAtATime: perKind(m.oneAtATime, (kind) => summarize(m.oneAtATime[kind])),
    atOnce: perKind(m.atOnce, (kind) => summarize(m.atOnce[kind])),
  };
}

/** The targets, from the measurements alone. */
export function judgeCni(m: CniMeasurements): TargetVerdict[] {
  const { oneAtATime: one, atOnce } = summaries(m);
  const ratio = round(one.add.p99Ms / one.nodeStart.p99Ms, 2);
  const berthKinds = ['add', 'chainAdd', 'del', 'chainDel'] as const;
  const failedAdds =
    one.add.failed + one.chainAdd.failed + atOnce.add.failed + atOnce.chainAdd.failed;
  const failedDels =
    one.del.failed + one.chainDel.failed + atOnce.del.failed + atOnce.chainDel.failed;
  const berthRuns = berthKinds.reduce((n, kind) => n + one[kind].runs + atOnce[kind].runs, 0);
  const held = m.concurrentAddresses;
  return [
    {
      target: `CNI ADD p99 (plugin start included) ≤ ${START_RATIO}× node -e 0 p99 in the same run`,
      pass: one.add.failed === 0 && one.add.p99Ms <= START_RATIO * one.nodeStart.p99Ms,
      line: `berth-cni ADD p99 ${one.add.p99Ms} ms (p50 ${one.add.p50Ms}) over ${one.add.runs} runs (${m.oneAtATime.add.filter((r) => r.routed).length} routed through a secondary ENI), ${ratio}× node -e 0 p99 ${one.nodeStart.p99Ms} ms (p50 ${one.nodeStart.p50Ms}); berth-cni VERSION p99 ${one.version.p99Ms} ms; the whole ptp ADD p99 ${one.chainAdd.p99Ms} ms with berth-cni, ${one.referenceAdd.p99Ms} ms with host-local`,
    },
    {
      target: '0 failed berth-cni ADDs (and DELs), each from the node’s own set (no berth call)',
      pass: failedAdds === 0 && failedDels === 0 && m.berthRequests === 0 && m.leasesLeft === 0,
      line: `${failedAdds} ADDs and ${failedDels} DELs failed of ${berthRuns}, one at a time and ${m.concurrency} at a time, with ptp and without; berth's API answered ${m.berthRequests} requests meanwhile; ${m.leasesLeft} leases left after the last DEL`,
    },
    {
      target: `No address held twice by ADDs ${m.concurrency} at a time`,
      pass:
        held.added === atOnce.add.runs + atOnce.chainAdd.runs &&
        held.distinct === held.added &&
        held.leases === held.added &&
        held.leasesOfTheirContainer === held.added,
      line: `${held.added} ADDs got ${held.distinct} distinct addresses; the node holds ${held.leases} leases, ${held.leasesOfTheirContainer} of them naming the container that got the address`,
    },
  ];
}

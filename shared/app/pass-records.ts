/**
 * What the pass functions (ENI, repair, scale) and the settle function record of their work:
 * log lines and metrics, shared by their handlers and the cost meter, which runs the same bodies
 * against DynamoDB Local. CloudWatch bills a custom metric for every hour it is published in, so
 * a metric is published only when it has something to say: a count only when it is not zero, a
 * range's use only from `RANGE_USE_PUBLISHED_FROM` percent (its alarm's concern). Every figure is
 * also in a log line, which the dashboard reads with Logs Insights (paid per query, by use).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { RangeUsage } from '../allocation/usage.js';
import type { ClusterCapacity } from '../capacity/view.js';
import type { EniPassSummary } from '../eni/pass.js';
import type { EniFailure } from '../eni/pool-actions.js';
import { REPAIR_REASONS } from '../repair/findings.js';
import type { RepairSummary } from '../repair/pass.js';
import type { ScaleReport } from '../scale/pass.js';
import type { SettleOutcome, SettleTask } from '../settle/task.js';

type Observed = { readonly logger: Logger; readonly metrics: Metrics };

/** A range this full raises the range alarm. */
export const RANGE_ALARM_PERCENT = 90;
/** A range's use is published as a metric from this percentage (logged always). */
export const RANGE_USE_PUBLISHED_FROM = 80;

/** The findings that are values a leak held, freed by the pass. */
const LEAKED_VALUES = [
  REPAIR_REASONS.clusterIpLeaked,
  REPAIR_REASONS.portLeaked,
  REPAIR_REASONS.hostPortLeaked,
] as const;

/** Adds a count metric, unless it is zero (a zero is what no data means to berth's alarms). */
function count(metrics: Metrics, name: string, value: number): void {
  if (value !== 0) metrics.addMetric(name, MetricUnit.Count, value);
}

/** One background refill of a node's pool. */
export function recordRefill(
  observe: { readonly logger: Logger },
  node: string,
  outcome: string,
  failures: readonly EniFailure[],
): void {
  for (const failure of failures) observe.logger.error('pool action failed', { failure });
  observe.logger.info('background refill', { node, outcome });
}

/** One pass, over every pool or over the pools of one instance. */
export function recordEniPass(observe: Observed, summary: EniPassSummary): void {
  const { logger, metrics } = observe;
  for (const failure of summary.failures) logger.error('pool action failed', { failure });
  count(metrics, 'EniFailures', summary.failures.length);
  count(metrics, 'Ec2BudgetSpent', summary.budgetSpent ? 1 : 0);
  // Idle and assigned addresses are in this line only: the dashboard reads them from the logs.
  logger.info('eni pass', { summary: { ...summary, failures: summary.failures.length } });
}

/** One settle look, `lagMs` after its admission. */
export function recordSettle(
  { logger, metrics }: Observed,
  task: SettleTask,
  outcome: SettleOutcome,
  lagMs: number,
): void {
  count(metrics, 'SettleFreed', outcome.freed);
  count(metrics, 'SettleRefusedKept', outcome.kept);
  metrics.addMetric('SettleLag', MetricUnit.Seconds, lagMs / 1000);
  logger.info('settled', { task, outcome });
}

/** One repair pass, and the use of every exclusive range after it. */
export function recordRepairPass(
  { logger, metrics }: Observed,
  summary: RepairSummary,
  usage: readonly RangeUsage[],
): void {
  if (summary.skipped) logger.warn('skipped', { reason: summary.skipped });
  for (const finding of summary.notes) logger.info('finding', { finding });
  for (const [reason, found] of Object.entries(summary.findings)) count(metrics, reason, found);
  // One metric for every value a leak held, freed: what the leak alarm watches (one alarm
  // metric, not one per kind of value).
  count(
    metrics,
    'LeaksFreed',
    LEAKED_VALUES.reduce((sum, reason) => sum + (summary.findings[reason] ?? 0), 0),
  );
  count(metrics, 'Released', summary.released);
  let fullest = 0;
  for (const range of usage) {
    if (range.blocks !== undefined) {
      // Too wide (an IPv6 /64) for a share of it to mean anything: its values and their blocks.
      logger.info('range usage', { range: range.name, used: range.used, blocks: range.blocks });
      continue;
    }
    const percent = (100 * range.used) / Math.max(1, range.size);
    logger.info('range usage', { range: range.name, used: range.used, size: range.size, percent });
    fullest = Math.max(fullest, percent);
  }
  // The fullest range's use, with no range dimension: one metric (and one alarm metric) for the
  // cluster however many ranges it has; the log lines above say which range it is.
  if (fullest >= RANGE_USE_PUBLISHED_FROM) {
    metrics.singleMetric().addMetric('RangeUsedPercent', MetricUnit.Percent, fullest);
  }
  count(metrics, 'Recorded', summary.recorded);
}

/** One scale pass. */
export function recordScalePass({ logger, metrics }: Observed, report: ScaleReport): void {
  for (const action of report.actions) logger.info('scale action', { action });
  for (const failure of report.failures) logger.error('scale action failed', { failure });
  if (report.leaseHeldBy) {
    logger.warn('skipped: another scale pass holds the lease', {
      holder: report.leaseHeldBy.holder,
    });
  }
  count(metrics, 'ScaleActions', report.actions.length);
  count(metrics, 'ScaleFailures', report.failures.length);
}

/**
 * One cluster's capacity view (the scale function records it after each pass, so once a
 * minute): a log line always, which the dashboard and Logs Insights read by cluster, and with
 * `asMetrics` (`capacity.cloudWatchMetrics`) metrics under the cluster's dimension. Unlike the
 * counts above, a figure is then published when it is zero: no free slot is what a matchmaker's
 * alarm watches for.
 */
export function recordCapacity(
  { logger, metrics }: Observed,
  view: ClusterCapacity,
  asMetrics: boolean,
): void {
  logger.info('capacity', { capacity: view });
  if (!asMetrics) return;
  const gauge = (name: string, value: number | undefined) => {
    if (value !== undefined) metrics.addMetric(name, MetricUnit.Count, value);
  };
  gauge('CapacityReadyGameServers', view.gameServers?.ready);
  gauge('CapacityFreeSlots', view.gameServers?.freeSlots);
  gauge('CapacityBufferSlots', view.buffer?.buffer);
  gauge('CapacityComingSlots', view.buffer?.slotsComing);
  gauge('CapacityFreeFrontSlots', view.fronts?.free);
  gauge('CapacityFreeEniAddresses', view.eni?.freeAddresses);
  gauge('CapacityStale', view.stale ? 1 : 0);
  for (const range of view.hostPorts?.ranges ?? []) {
    if (range.free === undefined) continue;
    const single = metrics.singleMetric();
    single.addDimension('range', range.range);
    single.addMetric('CapacityFreeHostPorts', MetricUnit.Count, range.free);
  }
}

/**
 * What the pass functions (ENI, repair, scale) and the settle function record of their work:
 * log lines and metrics, shared by their handlers and the cost meter, which runs the same bodies
 * against DynamoDB Local. Metrics are what the dashboard and the alarms read; every other figure
 * is in a log line, since each metric is billed monthly per cluster.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { RangeUsage } from '../allocation/usage.js';
import type { EniPassSummary } from '../eni/pass.js';
import type { EniFailure } from '../eni/pool-actions.js';
import type { RepairSummary } from '../repair/pass.js';
import type { ScaleReport } from '../scale/pass.js';
import type { SettleOutcome } from '../settle/step.js';
import type { SettleTask } from '../settle/task.js';

type Observed = { readonly logger: Logger; readonly metrics: Metrics };

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
  metrics.addMetric('EniFailures', MetricUnit.Count, summary.failures.length);
  metrics.addMetric('IdleIps', MetricUnit.Count, summary.idleIps);
  metrics.addMetric('AssignedIps', MetricUnit.Count, summary.assignedIps);
  metrics.addMetric('Ec2BudgetSpent', MetricUnit.Count, summary.budgetSpent ? 1 : 0);
  logger.info('eni pass', { summary: { ...summary, failures: summary.failures.length } });
}

/** One settle look, `lagMs` after its admission. */
export function recordSettle(
  { logger, metrics }: Observed,
  task: SettleTask,
  outcome: SettleOutcome,
  lagMs: number,
): void {
  metrics.addMetric('SettleFreed', MetricUnit.Count, outcome.freed);
  if (outcome.kept > 0) metrics.addMetric('SettleRefusedKept', MetricUnit.Count, outcome.kept);
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
  for (const [reason, count] of Object.entries(summary.findings)) {
    metrics.addMetric(reason, MetricUnit.Count, count);
  }
  metrics.addMetric('Released', MetricUnit.Count, summary.released);
  for (const range of usage) {
    const used = metrics.singleMetric();
    used.addDimension('range', range.name);
    used.addMetric(
      'RangeUsedPercent',
      MetricUnit.Percent,
      (100 * range.used) / Math.max(1, range.size),
    );
  }
  metrics.addMetric('Recorded', MetricUnit.Count, summary.recorded);
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
  metrics.addMetric('ScaleActions', MetricUnit.Count, report.actions.length);
  metrics.addMetric('ScaleFailures', MetricUnit.Count, report.failures.length);
}

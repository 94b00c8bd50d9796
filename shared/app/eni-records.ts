/**
 * What the ENI function records of its work, shared by its handler and the cost meter (which
 * runs the same bodies against DynamoDB Local). Metrics are what the dashboard's "are ENI pools
 * warm?" row and the EC2 throttling alarm read; every other figure of a pass is in its log line,
 * since each metric is billed monthly per cluster.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { EniPassSummary } from '../eni/pass.js';
import type { EniFailure } from '../eni/pool-actions.js';

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
export function recordEniPass(
  observe: { readonly logger: Logger; readonly metrics: Metrics },
  summary: EniPassSummary,
): void {
  const { logger, metrics } = observe;
  for (const failure of summary.failures) logger.error('pool action failed', { failure });
  metrics.addMetric('EniFailures', MetricUnit.Count, summary.failures.length);
  metrics.addMetric('IdleIps', MetricUnit.Count, summary.idleIps);
  metrics.addMetric('AssignedIps', MetricUnit.Count, summary.assignedIps);
  metrics.addMetric('Ec2BudgetSpent', MetricUnit.Count, summary.budgetSpent ? 1 : 0);
  logger.info('eni pass', { summary: { ...summary, failures: summary.failures.length } });
}

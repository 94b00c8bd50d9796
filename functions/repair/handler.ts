/**
 * The repair pass, run by an EventBridge schedule every `repair.intervalSeconds`. A pass that
 * cannot complete fails the invocation (so the schedule's retry policy and alarms see it) and
 * advances no leak counter.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { lambdaPassContext } from '../../shared/app/lambda.js';
import { forCluster, observability, publishMetrics } from '../../shared/app/observability.js';
import { exclusiveUsage, repairRunner } from '../../shared/app/repair-pass.js';

const { logger, metrics, tracer } = observability('repair');
const context = lambdaPassContext();
forCluster(metrics, context.config.cluster);
const repair = repairRunner(context);
const usage = exclusiveUsage(context);

const run = async (_event: unknown, context: Context) => {
  const summary = await repair(context.awsRequestId);
  if (summary.skipped) logger.warn('skipped', { reason: summary.skipped });
  for (const finding of summary.notes) logger.info('finding', { finding });
  for (const [reason, count] of Object.entries(summary.findings)) {
    metrics.addMetric(reason, MetricUnit.Count, count);
  }
  metrics.addMetric('Released', MetricUnit.Count, summary.released);
  for (const range of await usage()) {
    const used = metrics.singleMetric();
    used.addDimension('range', range.name);
    used.addMetric(
      'RangeUsedPercent',
      MetricUnit.Percent,
      (100 * range.used) / Math.max(1, range.size),
    );
  }
  metrics.addMetric('Recorded', MetricUnit.Count, summary.recorded);
  const { findings, released, recorded, durationMs } = summary;
  return { findings, released, recorded, durationMs };
};

export const handler = middy(run)
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics));

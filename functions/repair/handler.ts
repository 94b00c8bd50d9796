/**
 * The repair pass, run by an EventBridge schedule every `repair.intervalSeconds`. A pass that
 * cannot complete fails the invocation (so the schedule's retry policy and alarms see it) and
 * advances no leak counter.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { lambdaPassContext } from '../../shared/app/lambda.js';
import { forCluster, observability, publishMetrics } from '../../shared/app/observability.js';
import { recordRepairPass } from '../../shared/app/pass-records.js';
import { exclusiveUsage, repairRunner } from '../../shared/app/repair-pass.js';

const { logger, metrics, tracer } = observability('repair');
const context = lambdaPassContext();
forCluster(metrics, context.config.cluster);
const repair = repairRunner(context);
const usage = exclusiveUsage(context);

const run = async (_event: unknown, context: Context) => {
  const summary = await repair(context.awsRequestId);
  recordRepairPass({ logger, metrics }, summary, await usage());
  const { findings, released, recorded, durationMs } = summary;
  return { findings, released, recorded, durationMs };
};

export const handler = middy(run)
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics));

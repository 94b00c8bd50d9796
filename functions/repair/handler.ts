/**
 * The repair pass, run by an EventBridge schedule every `repair.intervalSeconds` for the cluster
 * its input names (`{ "cluster": "games-a" }`; a single-cluster stack's `{}` means its one
 * cluster). A pass that cannot complete fails the invocation (so the schedule's retry policy and
 * alarms see it) and advances no leak counter.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { parser } from '@aws-lambda-powertools/parser/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { handlerTracing, observability, publishMetrics } from '../../shared/app/observability.js';
import { type PassInput, passInput } from '../../shared/app/pass-input.js';
import { recordRepairPass } from '../../shared/app/pass-records.js';
import { exclusiveUsage, repairRunner } from '../../shared/app/repair-pass.js';
import { activeTracing } from '../../shared/config/load.js';

const { logger, metrics, forCluster } = observability('repair');
const tracing = await handlerTracing('repair', activeTracing());
const passes = lambdaPassContexts().map((context) => ({
  repair: repairRunner(context),
  usage: exclusiveUsage(context),
}));

const run = async (input: PassInput, context: Context) => {
  const { config, value } = passes.get(input.cluster);
  forCluster(config.cluster);
  const summary = await value.repair(context.awsRequestId);
  recordRepairPass({ logger, metrics }, summary, await value.usage());
  const { findings, released, recorded, durationMs } = summary;
  return { cluster: config.cluster, findings, released, recorded, durationMs };
};

export const handler = middy(run)
  .use(tracing)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics))
  .use(parser({ schema: passInput }));

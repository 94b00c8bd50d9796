/**
 * The node scale pass, run by an EventBridge schedule every minute for the cluster its input
 * names. The lease inside the pass keeps a slow run and the next schedule from acting at once.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { parser } from '@aws-lambda-powertools/parser/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { handlerTracing, observability, publishMetrics } from '../../shared/app/observability.js';
import { failWhenNothingWorked } from '../../shared/app/pass-failure.js';
import { passInput } from '../../shared/app/pass-input.js';
import { recordScalePass } from '../../shared/app/pass-records.js';
import { scaleRunner } from '../../shared/app/scale-pass.js';
import { activeTracing } from '../../shared/config/load.js';

const { logger, metrics, forCluster } = observability('scale');
const tracing = await handlerTracing('scale', activeTracing());
const passes = lambdaPassContexts().map((context) => scaleRunner(context));

/** The schedule's input, and `"dryRun": true` to log the plan only. */
const scheduleInput = passInput.extend({ dryRun: z.boolean().optional() });

const run = async (input: z.infer<typeof scheduleInput>, context: Context) => {
  const { config, value: scale } = passes.get(input.cluster);
  forCluster(config.cluster);
  const report = await scale(context.awsRequestId, { dryRun: input.dryRun ?? false });
  recordScalePass({ logger, metrics }, report);
  failWhenNothingWorked('scale', report.actions.length, report.failures);
  return {
    cluster: config.cluster,
    dryRun: report.dryRun,
    actions: report.actions,
    failures: report.failures.length,
  };
};

export const handler = middy(run)
  .use(tracing)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics))
  .use(parser({ schema: scheduleInput }));

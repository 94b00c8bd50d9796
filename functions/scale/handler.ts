/**
 * The node scale pass, run by an EventBridge schedule every minute for the cluster its input
 * names. The lease inside the pass keeps a slow run and the next schedule from acting at once.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import middy from '@middy/core';
import { z } from 'zod';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';
import { passInput } from '../../shared/app/pass-input.js';
import { scaleInvocation, scaleRunner } from '../../shared/app/scale-pass.js';

const observe = observability('scale');
const tracing = await handlerTracing('scale');
const run = scaleInvocation(
  lambdaPassContexts().map((context) => scaleRunner(context)),
  observe,
);

/** The schedule's input, and `"dryRun": true` to log the plan only. */
const scheduleInput = passInput.extend({ dryRun: z.boolean().optional() });

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics))
  .use(parser({ schema: scheduleInput }));

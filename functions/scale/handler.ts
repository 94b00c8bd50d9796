/**
 * The node scale pass, run by an EventBridge schedule every minute for the cluster its input
 * names. The lease inside the pass keeps a slow run and the next schedule from acting at once.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { z } from 'zod';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { observability, observedHandler } from '../../shared/app/observability.js';
import { passInput } from '../../shared/app/pass-input.js';
import { scaleInvocation, scaleRunner } from '../../shared/app/scale-pass.js';

const observe = observability('scale');
const run = scaleInvocation(
  lambdaPassContexts().map((context) => scaleRunner(context)),
  observe,
);

/** The schedule's input, and `"dryRun": true` to log the plan only. */
const scheduleInput = passInput.extend({ dryRun: z.boolean().optional() });

export const handler = (await observedHandler('scale', observe, run)).use(
  parser({ schema: scheduleInput }),
);

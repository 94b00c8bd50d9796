/**
 * The node scale pass, run by an EventBridge schedule every minute for the cluster its input
 * names, and between schedules by the admission function when game servers use up the slack the
 * last pass left (`triggered`). The lease inside the pass keeps a slow run, the next schedule and
 * a triggered pass from acting at once.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { lambdaCapacityReader } from '../../shared/app/lambda-capacity.js';
import { observability, observedHandler } from '../../shared/app/observability.js';
import { scaleInput, scaleInvocation, scaleRunner } from '../../shared/app/scale-pass.js';

const observe = observability('scale');
const run = scaleInvocation(
  lambdaPassContexts().map((context) => scaleRunner(context)),
  observe,
  lambdaCapacityReader(),
);

export const handler = (await observedHandler('scale', observe, run)).use(
  parser({ schema: scaleInput }),
);

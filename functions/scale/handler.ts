/**
 * The node scale pass, run by an EventBridge schedule every minute for the cluster its input
 * names, and between schedules by the admission function when game servers use up the slack the
 * last pass left (`triggered`). The lease inside the pass keeps a slow run, the next schedule and
 * a triggered pass from acting at once.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { clusterCapacityReader } from '../../shared/app/capacity.js';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { observability, observedHandler } from '../../shared/app/observability.js';
import { scaleInput, scaleInvocation, scaleRunner } from '../../shared/app/scale-pass.js';

const observe = observability('scale');
const contexts = lambdaPassContexts();
const run = scaleInvocation(
  contexts.map((context) => scaleRunner(context)),
  observe,
  contexts.map(clusterCapacityReader),
);

export const handler = (await observedHandler('scale', observe, run)).use(
  parser({ schema: scaleInput }),
);

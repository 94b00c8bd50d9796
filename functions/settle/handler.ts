/**
 * The settle step behind the SQS settle queue: each message is one owner whose values wait for
 * the apiserver's commit (the body, `settleMessages`, says what becomes of each). Each task names
 * its cluster where the stack serves several.
 */
import middy from '@middy/core';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { lambdaSettleQueue } from '../../shared/app/lambda-settle.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';
import { settleMessages, settleRunner } from '../../shared/app/settle.js';
import { activeTracing, lambdaSettings } from '../../shared/config/load.js';

const observe = observability('settle');
const tracing = await handlerTracing('settle', activeTracing());
const settings = lambdaSettings();
const run = settleMessages({
  settles: lambdaPassContexts(settings).map((context) => settleRunner(context)),
  queue: lambdaSettleQueue(settings),
  observe,
  now: Date.now,
});

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics));

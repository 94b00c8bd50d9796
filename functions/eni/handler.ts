/**
 * The ENI pool pass: every `eni.intervalSeconds` from an EventBridge schedule (the whole cluster
 * its input names), and on EC2 instance state-change events (that instance only, so a new node's
 * pool is warm before its first pod and a terminated node's pool is gone at once). The node IP
 * function also sends it `refill-pool` events: one pool grown ahead of demand. The body is
 * `eniInvocation`.
 */
import middy from '@middy/core';
import { eniInvocation, eniRunner, sdkEc2Account } from '../../shared/app/eni-pass.js';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';
import { activeTracing, lambdaSettings } from '../../shared/config/load.js';

const observe = observability('eni');
const tracing = await handlerTracing('eni', activeTracing());
const settings = lambdaSettings();
const account = sdkEc2Account(settings.region);
const run = eniInvocation(
  lambdaPassContexts(settings).map((context) => eniRunner(context, account)),
  observe,
);

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics));

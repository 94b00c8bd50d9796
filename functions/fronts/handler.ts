/**
 * The fronts function: batches from the fronts queue (a game server's binding to make reachable,
 * a deleted one's fronts to take down once it is gone; up to 100 gathered for a second, so a
 * burst's accelerator destinations are one call), and the scheduled fronts pass of the cluster
 * its input names (`{ "cluster": "games-a" }`), which repairs what a crash or a lost message left.
 */
import middy from '@middy/core';
import {
  frontsInvocation,
  frontsRunner,
  lambdaFrontQueue,
  sdkFrontsAccount,
} from '../../shared/app/fronts.js';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';
import { activeTracing, lambdaSettings } from '../../shared/config/load.js';

const observe = observability('fronts');
const tracing = await handlerTracing('fronts', activeTracing());
const settings = lambdaSettings();
const account = sdkFrontsAccount(settings.region);
const queue = lambdaFrontQueue(settings);
const run = frontsInvocation(
  lambdaPassContexts(settings).map((context) => frontsRunner(context, account, queue)),
  observe,
);

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics));

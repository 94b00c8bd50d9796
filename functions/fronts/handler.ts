import middy from '@middy/core';
import { lambdaFrontsInvocation } from '../../shared/app/fronts.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';

const observe = observability('fronts');
const tracing = await handlerTracing('fronts');
const run = lambdaFrontsInvocation(observe);

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics));

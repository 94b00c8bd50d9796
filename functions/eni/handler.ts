import middy from '@middy/core';
import { lambdaEniInvocation } from '../../shared/app/eni-pass.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';

const observe = observability('eni');
const tracing = await handlerTracing('eni');
const run = lambdaEniInvocation(observe);

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics));

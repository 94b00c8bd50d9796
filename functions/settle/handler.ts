import middy from '@middy/core';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';
import { lambdaSettleMessages } from '../../shared/app/settle.js';

const observe = observability('settle');
const tracing = await handlerTracing('settle');
const run = lambdaSettleMessages(observe);

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics));

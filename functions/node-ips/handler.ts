import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import middy from '@middy/core';
import { functionUrlHandler } from '../../shared/app/function-url.js';
import { lambdaNodeIpsApi } from '../../shared/app/lambda-node-ips.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';

const observe = observability('node-ips');
const { logger, metrics } = observe;
const tracing = await handlerTracing('node-ips');
const answer = functionUrlHandler(lambdaNodeIpsApi(observe), { logger, metrics });

export const handler = middy(answer)
  .use(tracing)
  .use(requestLogging(logger))
  .use(publishMetrics(metrics))
  .use(parser({ schema: LambdaFunctionUrlSchema }));

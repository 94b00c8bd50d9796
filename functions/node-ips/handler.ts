import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import { functionUrlHandler } from '../../shared/app/function-url.js';
import { lambdaNodeIpsApi } from '../../shared/app/lambda-node-ips.js';
import { observability, observedHandler } from '../../shared/app/observability.js';

const observe = observability('node-ips');
const answer = functionUrlHandler(lambdaNodeIpsApi(observe), observe);

export const handler = (await observedHandler('node-ips', observe, answer)).use(
  parser({ schema: LambdaFunctionUrlSchema }),
);

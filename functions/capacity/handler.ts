/**
 * The capacity API: `GET /v1/capacity` behind a function URL with IAM authentication, for a
 * matchmaker's role the stack grants. It reads the capacity the passes recorded, never a cluster.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import { functionUrlHandler } from '../../shared/app/function-url.js';
import { lambdaCapacityApi } from '../../shared/app/lambda-capacity.js';
import { observability, observedHandler } from '../../shared/app/observability.js';

const observe = observability('capacity');
const answer = functionUrlHandler(lambdaCapacityApi(), observe);

export const handler = (await observedHandler('capacity', observe, answer)).use(
  parser({ schema: LambdaFunctionUrlSchema }),
);

/**
 * The repair pass, run by an EventBridge schedule every `repair.intervalSeconds` for the cluster
 * its input names (`{ "cluster": "games-a" }`; a single-cluster stack's `{}` means its one
 * cluster). A pass that cannot complete fails the invocation (so the schedule's retry policy and
 * alarms see it) and advances no leak counter.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import middy from '@middy/core';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
} from '../../shared/app/observability.js';
import { passInput } from '../../shared/app/pass-input.js';
import { repairInvocation, repairPasses } from '../../shared/app/repair-pass.js';

const observe = observability('repair');
const tracing = await handlerTracing('repair');
const run = repairInvocation(lambdaPassContexts().map(repairPasses), observe);

export const handler = middy(run)
  .use(tracing)
  .use(requestLogging(observe.logger))
  .use(publishMetrics(observe.metrics))
  .use(parser({ schema: passInput }));

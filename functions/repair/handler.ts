/**
 * The repair pass, run by an EventBridge schedule every `repair.intervalSeconds` for the cluster
 * its input names (`{ "cluster": "games-a" }`; a single-cluster stack's `{}` means its one
 * cluster). A pass that cannot complete fails the invocation (so the schedule's retry policy and
 * alarms see it) and advances no leak counter.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { observability, observedHandler } from '../../shared/app/observability.js';
import { passInput } from '../../shared/app/pass-input.js';
import { repairInvocation, repairPasses } from '../../shared/app/repair-pass.js';

const observe = observability('repair');
const run = repairInvocation(lambdaPassContexts().map(repairPasses), observe);

export const handler = (await observedHandler('repair', observe, run)).use(
  parser({ schema: passInput }),
);

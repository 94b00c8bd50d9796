/**
 * The ENI pool pass: every `eni.intervalSeconds` from an EventBridge schedule (the whole
 * cluster), and on EC2 instance state-change events (that instance only, so a new node's pool is
 * warm before its first pod and a terminated node's pool is gone at once). The node IP function
 * also sends it `refill-pool` events: one pool grown ahead of demand.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import { z } from 'zod';
import { eniRunner, refillPoolEvent } from '../../shared/app/eni-pass.js';
import { lambdaPassContext } from '../../shared/app/lambda.js';
import { forCluster, observability, publishMetrics } from '../../shared/app/observability.js';
import { failWhenNothingWorked } from '../../shared/app/pass-failure.js';
import { recordEniPass, recordRefill } from '../../shared/app/pass-records.js';
import type { EniPassSummary } from '../../shared/eni/pass.js';

const { logger, metrics, tracer } = observability('eni');
const context = lambdaPassContext();
forCluster(metrics, context.config.cluster);
const eni = eniRunner(context);

/** An EventBridge rule's EC2 event; anything else (the schedule's `{}`) runs the whole pass. */
const instanceStateChange = z.object({
  source: z.literal('aws.ec2'),
  'detail-type': z.literal('EC2 Instance State-change Notification'),
  detail: z.unknown(),
});

const run = async (event: unknown) => {
  const refill = refillPoolEvent.safeParse(event);
  if (refill.success) {
    const { outcome, failures } = await eni.refill(refill.data.node);
    recordRefill({ logger }, refill.data.node, outcome, failures);
    return { refill: outcome };
  }
  const change = instanceStateChange.safeParse(event);
  let summary: EniPassSummary | undefined;
  if (change.success) {
    summary = await eni.instanceStateChange(change.data.detail);
    if (!summary) logger.warn('ignored an instance state-change event without an instance id');
  } else {
    summary = await eni.pass();
  }
  if (!summary) return { ignored: true };
  recordEniPass({ logger, metrics }, summary);
  failWhenNothingWorked(
    'eni',
    summary.ipsAssigned +
      summary.ipsUnassigned +
      summary.enisCreated +
      summary.enisDeleted +
      summary.poolsCreated +
      summary.poolsRemoved,
    summary.failures,
  );
  return summary;
};

export const handler = middy(run)
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics));

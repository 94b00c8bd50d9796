/**
 * The ENI pool pass: every `eni.intervalSeconds` from an EventBridge schedule (the whole cluster
 * its input names), and on EC2 instance state-change events (that instance only, so a new node's
 * pool is warm before its first pod and a terminated node's pool is gone at once). An instance
 * event names no cluster, so each cluster served looks at the instance: only the cluster whose
 * node it is has a pool to create or remove, and the others make no EC2 call for it. The node IP
 * function also sends it `refill-pool` events: one pool grown ahead of demand.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { z } from 'zod';
import { eniRunner, refillPoolEvent, sdkEc2Account } from '../../shared/app/eni-pass.js';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { handlerTracing, observability, publishMetrics } from '../../shared/app/observability.js';
import { failWhenNothingWorked } from '../../shared/app/pass-failure.js';
import { passInput } from '../../shared/app/pass-input.js';
import { recordEniPass, recordRefill } from '../../shared/app/pass-records.js';
import { activeTracing, lambdaSettings } from '../../shared/config/load.js';
import {
  type EniPassSummary,
  parseInstanceStateChange,
  passedNoPool,
} from '../../shared/eni/pass.js';

const { logger, metrics, forCluster } = observability('eni');
const tracing = await handlerTracing('eni', activeTracing());
const settings = lambdaSettings();
const account = sdkEc2Account(settings.region);
const runners = lambdaPassContexts(settings).map((context) => eniRunner(context, account));

/** An EventBridge rule's EC2 event; anything else (the schedule's input) runs the whole pass. */
const instanceStateChange = z.object({
  source: z.literal('aws.ec2'),
  'detail-type': z.literal('EC2 Instance State-change Notification'),
  detail: z.unknown(),
});

/** Records one cluster's pass and fails the invocation when none of its work could be done. */
function record(cluster: string, summary: EniPassSummary): void {
  forCluster(cluster);
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
}

const run = async (event: unknown) => {
  const refill = refillPoolEvent.safeParse(event);
  if (refill.success) {
    const { config, value: eni } = runners.get(refill.data.cluster);
    forCluster(config.cluster);
    const { outcome, failures } = await eni.refill(refill.data.node);
    recordRefill({ logger }, refill.data.node, outcome, failures);
    return { refill: outcome };
  }
  const change = instanceStateChange.safeParse(event);
  if (change.success) {
    const instance = parseInstanceStateChange(change.data.detail);
    if (!instance) {
      logger.warn('ignored an instance state-change event without an instance id');
      return { ignored: true };
    }
    // Every cluster looks, even after one fails: the failure is raised once all have. A cluster
    // with no pool for the instance (another cluster's) made no call and records nothing.
    const summaries: Record<string, EniPassSummary> = {};
    const failures: unknown[] = [];
    // One deadline for the invocation, however many clusters look in turn.
    const startedAt = Date.now();
    for (const cluster of runners.names) {
      try {
        const summary = await runners.get(cluster).value.instanceStateChange(instance, startedAt);
        if (passedNoPool(summary)) continue;
        summaries[cluster] = summary;
        record(cluster, summary);
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) {
      throw new AggregateError(failures, 'ENI passes failed in several clusters');
    }
    return summaries;
  }
  const input = passInput.parse(event ?? {});
  const { config, value: eni } = runners.get(input.cluster);
  const summary = await eni.pass();
  record(config.cluster, summary);
  return summary;
};

export const handler = middy(run)
  .use(tracing)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics));

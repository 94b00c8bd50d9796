/**
 * The settle step, wired once per process: the local server runs it on in-process timers, the
 * settle function from SQS (`settleMessages`, its body). Both look at owners exactly the same way.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { ExclusiveAllocator } from '../allocation/allocator.js';
import { type ClusterSet, UnknownClusterError } from '../clusters/cluster-set.js';
import { lambdaSettings } from '../config/load.js';
import { clusterIpRange, nodePortRange } from '../net/value-range.js';
import { settleTiming } from '../settle/policy.js';
import { settleStep } from '../settle/step.js';
import type { SettleQueue } from '../settle/task.js';
import {
  MalformedSettleTaskError,
  parseSettleTask,
  type SettleOutcome,
  type SettleTask,
} from '../settle/task.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';
import { lambdaPassContexts } from './lambda.js';
import { lambdaSettleQueue } from './lambda-settle.js';
import type { Observability } from './observability.js';
import { type PassContext, storeOptions } from './pass-context.js';
import { recordSettle } from './pass-records.js';

/** One look at one owner. */
export type SettleRunner = (task: SettleTask) => Promise<SettleOutcome>;

/** Wires the settle step to the table and the cluster of `context`. */
export function settleRunner(context: PassContext): SettleRunner {
  const { config, clusterApi } = context;
  const now = context.now ?? Date.now;
  const deps = {
    allocator: new ExclusiveAllocator({
      store: new DynamoAllocationStore(storeOptions(context)),
      random: Math.random,
      now,
    }),
    cluster: clusterApi,
    ranges: {
      clusterIps: config.serviceCIDRs.map(clusterIpRange),
      nodePorts: nodePortRange(config.nodePortRange),
    },
    timing: settleTiming(config.settle.delaySeconds),
    now,
  };
  return (task) => settleStep(deps, task);
}

/** What the settle function's body is built from. */
export interface SettleMessagesDeps {
  /** Each served cluster's settle step. */
  readonly settles: ClusterSet<SettleRunner>;
  /** Where a look that asks for another puts the task back. */
  readonly queue: SettleQueue;
  readonly observe: Observability;
  readonly now: () => number;
}

/**
 * The settle function's body (functions/settle/handler.ts; the cost meter runs the same): each
 * SQS message is one owner whose values wait for the apiserver's commit. A look that asks for
 * another puts the task back with its backoff; a look that fails is a batch item failure, so SQS
 * delivers it again after the visibility timeout (and to the dead-letter queue after its last
 * try; the repair pass still finishes what it marked).
 */
export function settleMessages(
  deps: SettleMessagesDeps,
): (event: SQSEvent) => Promise<SQSBatchResponse> {
  const { settles, queue, observe, now } = deps;
  const { logger } = observe;
  return async (event) => {
    const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
    for (const record of event.Records) {
      // The previous record's cluster is not this one's, whatever becomes of it.
      logger.removeKeys(['cluster']);
      try {
        const task = parseSettleTask(record.body);
        const { config, value: settle } = settles.get(task.cluster);
        observe.forCluster(config.cluster);
        const outcome = await settle(task);
        recordSettle(observe, task, outcome, now() - task.admittedAt);
        if (outcome.recheckAfter !== undefined) {
          await queue.submit({ ...task, attempt: task.attempt + 1 }, outcome.recheckAfter);
        }
      } catch (error) {
        if (error instanceof MalformedSettleTaskError) {
          logger.error('dropped a message that is not a settle task', { error: error.message });
          continue;
        }
        if (error instanceof UnknownClusterError) {
          // A cluster taken out of the stack: its items go with `berth forget-cluster`.
          logger.error('dropped a settle task for a cluster not served', { error: error.message });
          continue;
        }
        logger.error('settle look failed', { error, messageId: record.messageId });
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}

/** The settle function as the stack deploys it: every cluster of the Lambda environment, on SQS. */
export function lambdaSettleMessages(
  observe: Observability,
): (event: SQSEvent) => Promise<SQSBatchResponse> {
  const settings = lambdaSettings();
  return settleMessages({
    settles: lambdaPassContexts(settings).map((context) => settleRunner(context)),
    queue: lambdaSettleQueue(settings),
    observe,
    now: Date.now,
  });
}

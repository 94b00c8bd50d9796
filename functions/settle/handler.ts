/**
 * The settle step behind the SQS settle queue: each message is one owner whose values wait for
 * the apiserver's commit. A look that asks for another puts the task back with its backoff; a
 * look that fails is reported as a batch item failure, so SQS delivers it again after the
 * visibility timeout (and to the dead-letter queue after its last try; the repair pass still
 * finishes what it marked). Each task names its cluster where the stack serves several.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import { lambdaSettleQueue } from '../../shared/app/lambda-settle.js';
import { handlerTracing, observability, publishMetrics } from '../../shared/app/observability.js';
import { recordSettle } from '../../shared/app/pass-records.js';
import { settleRunner } from '../../shared/app/settle.js';
import { UnknownClusterError } from '../../shared/clusters/cluster-set.js';
import { activeTracing, lambdaSettings } from '../../shared/config/load.js';
import { MalformedSettleTaskError, parseSettleTask } from '../../shared/settle/task.js';

const { logger, metrics, forCluster } = observability('settle');
const tracing = await handlerTracing('settle', activeTracing());
const settings = lambdaSettings();
const settles = lambdaPassContexts(settings).map((context) => settleRunner(context));
const queue = lambdaSettleQueue(settings);

const run = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    // The previous record's cluster is not this one's, whatever becomes of it.
    logger.removeKeys(['cluster']);
    try {
      const task = parseSettleTask(record.body);
      const { config, value: settle } = settles.get(task.cluster);
      forCluster(config.cluster);
      const outcome = await settle(task);
      recordSettle({ logger, metrics }, task, outcome, Date.now() - task.admittedAt);
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

export const handler = middy(run)
  .use(tracing)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics));

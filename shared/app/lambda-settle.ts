/** The settle queue as the admission and settle functions reach it (SQS, from the environment). */
import { SQSClient } from '@aws-sdk/client-sqs';
import { ConfigError } from '../config/errors.js';
import type { LambdaSettings } from '../config/load.js';
import { SqsSettleQueue } from '../settle/sqs-queue.js';

/** The SQS settle queue named by `BERTH_SETTLE_QUEUE`. */
export function lambdaSettleQueue(settings: LambdaSettings): SqsSettleQueue {
  if (!settings.settleQueueUrl) {
    throw new ConfigError(['BERTH_SETTLE_QUEUE: environment variable is not set']);
  }
  return new SqsSettleQueue(new SQSClient({ region: settings.region }), settings.settleQueueUrl);
}

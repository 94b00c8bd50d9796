/**
 * The settle queue in AWS: an SQS queue whose messages are delivered after their delay to the
 * settle function. A look is safe to repeat, so SQS's at-least-once delivery is enough.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsDelayedQueue } from '../aws/sqs-delayed-queue.js';
import type { SettleQueue } from './task.js';
import { type SettleTask, settleTaskBody } from './task.js';

/** `SettleQueue` over one SQS queue. */
export class SqsSettleQueue extends SqsDelayedQueue<SettleTask> implements SettleQueue {
  constructor(client: SQSClient, queueUrl: string) {
    super(client, queueUrl, settleTaskBody);
  }
}

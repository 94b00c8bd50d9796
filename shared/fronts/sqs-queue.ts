/**
 * The fronts queue in AWS: an SQS queue whose batches (up to 100 messages gathered for up to a
 * second) reach the fronts function, so a burst of bindings is one invocation and one Global
 * Accelerator call. Every step of the work is safe to repeat: at-least-once delivery is enough.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsDelayedQueue } from '../aws/sqs-delayed-queue.js';
import type { FrontQueue, FrontWork } from './work.js';
import { frontWorkBody } from './work-message.js';

/** `FrontQueue` over one SQS queue. */
export class SqsFrontQueue extends SqsDelayedQueue<FrontWork> implements FrontQueue {
  constructor(client: SQSClient, queueUrl: string) {
    super(client, queueUrl, frontWorkBody);
  }
}

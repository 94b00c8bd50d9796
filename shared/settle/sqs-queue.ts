/**
 * The settle queue in AWS: an SQS queue whose messages are delivered after their delay to the
 * settle function. SQS delivers at least once and keeps a message a failed look did not delete,
 * and a look is safe to repeat, so nothing here needs to be exactly once.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SettleQueue } from './settler.js';
import { type SettleTask, settleTaskBody } from './task.js';

/** SQS's longest message delay. */
const MAX_DELAY_SECONDS = 900;

/** `SettleQueue` over one SQS queue. */
export class SqsSettleQueue implements SettleQueue {
  readonly #client: SQSClient;
  readonly #queueUrl: string;

  constructor(client: SQSClient, queueUrl: string) {
    this.#client = client;
    this.#queueUrl = queueUrl;
  }

  async submit(task: SettleTask, delaySeconds: number): Promise<void> {
    await this.#client.send(
      new SendMessageCommand({
        QueueUrl: this.#queueUrl,
        MessageBody: settleTaskBody(task),
        DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds))),
      }),
    );
  }
}

/**
 * The fronts queue in AWS: an SQS queue whose batches (up to 100 messages gathered for up to a
 * second) reach the fronts function, so a burst of bindings is one invocation and one Global
 * Accelerator call. Every step of the work is safe to repeat: at-least-once delivery is enough.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { FrontQueue, FrontWork } from './work.js';
import { frontWorkBody } from './work-message.js';

/** SQS's longest message delay. */
const MAX_DELAY_SECONDS = 900;

/** `FrontQueue` over one SQS queue. */
export class SqsFrontQueue implements FrontQueue {
  readonly #client: SQSClient;
  readonly #queueUrl: string;

  constructor(client: SQSClient, queueUrl: string) {
    this.#client = client;
    this.#queueUrl = queueUrl;
  }

  async submit(work: FrontWork, delaySeconds: number): Promise<void> {
    await this.#client.send(
      new SendMessageCommand({
        QueueUrl: this.#queueUrl,
        MessageBody: frontWorkBody(work),
        DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds))),
      }),
    );
  }
}

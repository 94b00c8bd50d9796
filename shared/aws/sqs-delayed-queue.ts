/**
 * An SQS queue of work items, each delivered after its delay. SQS delivers at least once and
 * keeps a message whose handling failed, so every consumer's step must be safe to repeat; nothing
 * here needs to be exactly once.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** SQS's longest message delay. */
const MAX_DELAY_SECONDS = 900;

/** Sends items of one kind to one queue, each as its message body says. */
export class SqsDelayedQueue<T> {
  readonly #client: SQSClient;
  readonly #queueUrl: string;
  readonly #body: (item: T) => string;

  constructor(client: SQSClient, queueUrl: string, body: (item: T) => string) {
    this.#client = client;
    this.#queueUrl = queueUrl;
    this.#body = body;
  }

  /** Queues `item`, delivered after `delaySeconds` (whole seconds, at most SQS's 15 minutes). */
  async submit(item: T, delaySeconds: number): Promise<void> {
    await this.#client.send(
      new SendMessageCommand({
        QueueUrl: this.#queueUrl,
        MessageBody: this.#body(item),
        DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds))),
      }),
    );
  }
}

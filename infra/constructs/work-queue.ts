/**
 * The settle queue: admission puts an owner on it (with a per-message delay) when a Service's
 * values wait for the apiserver's commit, and the settle function takes it off. SQS delivers at
 * least once and the settle step is safe to repeat; a look that keeps failing ends in the stack's
 * dead-letter queue, and the repair pass still finishes what it marked in the table.
 */
import { Duration } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** What the queue connects. */
export interface SettleQueueProps {
  /** The settle function, which consumes the queue and puts back tasks that want another look. */
  readonly consumer: lambda.IFunction;
  /** Roles that put tasks on the queue (the admission function's). */
  readonly producers: readonly iam.IGrantable[];
  /** The consumer's timeout: the queue hides a message at least six times as long (AWS's advice). */
  readonly consumerTimeout: Duration;
  /** Where a task goes after its last delivery: the stack's one dead-letter queue. */
  readonly deadLetterQueue: sqs.IQueue;
}

/** Deliveries of one task before it goes to the dead-letter queue. */
const MAX_RECEIVES = 5;

/** The SQS settle queue, redriving to the stack's dead-letter queue. */
export class SettleQueue extends Construct {
  readonly queue: sqs.Queue;

  constructor(scope: Construct, id: string, props: SettleQueueProps) {
    super(scope, id);
    this.queue = new sqs.Queue(this, 'Queue', {
      enforceSSL: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      visibilityTimeout: Duration.seconds(props.consumerTimeout.toSeconds() * 6),
      // A task waits at most 5 minutes between looks; a day covers any outage of the consumer.
      retentionPeriod: Duration.days(1),
      // The dead-letter queue keeps messages 14 days, longer than this queue's day, as SQS asks.
      deadLetterQueue: { queue: props.deadLetterQueue, maxReceiveCount: MAX_RECEIVES },
    });
    props.consumer.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: 10,
        maxBatchingWindow: Duration.seconds(1),
        reportBatchItemFailures: true,
      }),
    );
    this.queue.grantSendMessages(props.consumer);
    for (const producer of props.producers) this.queue.grantSendMessages(producer);
  }
}

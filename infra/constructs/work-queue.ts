/**
 * A queue of work items between berth functions: producers put items on it, one consumer takes
 * them off in batches, reporting the items that failed so only those come back. SQS delivers at
 * least once and every consumer's step is safe to repeat; an item that keeps failing ends in the
 * stack's one dead-letter queue (whose alarm reports it), and the consumer's scheduled pass still
 * finishes what the table says is pending.
 *
 * The settle queue (admission puts an owner on it with a per-message delay, the settle function
 * frees its values once the apiserver has committed) and the fronts queue (bindings and releases
 * of public fronts, taken a burst at a time) are both one of these.
 */
import { Duration } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** What the queue connects, and how its consumer takes items. */
export interface WorkQueueProps {
  /** The function that consumes the queue; it may put items back (a task wanting another look). */
  readonly consumer: lambda.IFunction;
  /** Roles that put items on the queue. */
  readonly producers: readonly iam.IGrantable[];
  /** The consumer's timeout: the queue hides a message at least six times as long (AWS's advice). */
  readonly consumerTimeout: Duration;
  /** Where an item goes after its last delivery: the stack's one dead-letter queue. */
  readonly deadLetterQueue: sqs.IQueue;
  /** Items handed to one invocation at most. */
  readonly batchSize: number;
  /**
   * How long Lambda gathers items before invoking with fewer than `batchSize`: a burst arriving
   * within it is one invocation.
   */
  readonly maxBatchingWindow: Duration;
  /**
   * Invocations the queue may run at once (SQS allows 2 to 1,000); absent, Lambda scales its
   * pollers with the backlog, splitting a burst over many small batches.
   */
  readonly maxConcurrency?: number;
}

/** Deliveries of one item before it goes to the dead-letter queue. */
const MAX_RECEIVES = 5;

/** An encrypted, TLS-only SQS queue feeding one function, redriving to the stack's dead-letter queue. */
export class WorkQueue extends Construct {
  readonly queue: sqs.Queue;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    this.queue = new sqs.Queue(this, 'Queue', {
      enforceSSL: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      visibilityTimeout: Duration.seconds(props.consumerTimeout.toSeconds() * 6),
      // An item waits at most 5 minutes between looks; a day covers any outage of the consumer.
      retentionPeriod: Duration.days(1),
      // The dead-letter queue keeps messages 14 days, longer than this queue's day, as SQS asks.
      deadLetterQueue: { queue: props.deadLetterQueue, maxReceiveCount: MAX_RECEIVES },
    });
    props.consumer.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: props.batchSize,
        maxBatchingWindow: props.maxBatchingWindow,
        reportBatchItemFailures: true,
        ...(props.maxConcurrency === undefined ? {} : { maxConcurrency: props.maxConcurrency }),
      }),
    );
    this.queue.grantSendMessages(props.consumer);
    for (const producer of props.producers) this.queue.grantSendMessages(producer);
  }
}

/**
 * Runs a reconcile pass on a fixed rate with EventBridge Scheduler. Scheduler (not an
 * `events.Rule`) for its per-target retry policy and dead-letter queue and its plain payload.
 * Overlapping runs are harmless: every pass takes a DynamoDB lease and a second one yields.
 */
import { Annotations, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import {
  ContextAttribute,
  Schedule,
  ScheduleExpression,
  ScheduleTargetInput,
} from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { invokeVersionsFinding } from './permissions.js';

/** Props of a pass schedule. */
export interface PassScheduleProps {
  readonly pass: 'repair' | 'scale' | 'eni' | 'fronts';
  readonly target: lambda.Function;
  /** The config's `<pass>.intervalSeconds`; 0 turns the pass off, as it does locally. */
  readonly intervalSeconds: number;
  /** Where invocations that could not be delivered after their retries go. */
  readonly deadLetterQueue: sqs.IQueue;
  /** The cluster the pass runs for, in a stack of several (its input names it). */
  readonly cluster?: string;
}

/** Scheduler's rate unit is the minute: a shorter or uneven interval is rounded up to one. */
export function scheduleMinutes(intervalSeconds: number): number {
  return Math.max(1, Math.ceil(intervalSeconds / 60));
}

/** One pass on its schedule. */
export class PassSchedule extends Construct {
  /** The schedule, or undefined when the interval is 0. */
  readonly schedule: Schedule | undefined;

  constructor(scope: Construct, id: string, props: PassScheduleProps) {
    super(scope, id);
    if (props.intervalSeconds === 0) {
      Annotations.of(this).addInfo(
        `${props.pass}.intervalSeconds is 0: the ${props.pass} pass has no schedule`,
      );
      this.schedule = undefined;
      return;
    }
    const minutes = scheduleMinutes(props.intervalSeconds);
    if (minutes * 60 !== props.intervalSeconds) {
      Annotations.of(this).addWarningV2(
        'berth:ScheduleRounded',
        `${props.pass}.intervalSeconds ${props.intervalSeconds} runs every ${minutes} min: EventBridge Scheduler rates are whole minutes`,
      );
    }
    // An own role per schedule, so it can invoke this one function and nothing else.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    });
    this.schedule = new Schedule(this, 'Schedule', {
      description: `berth ${props.pass} pass every ${minutes} min${props.cluster === undefined ? '' : ` for ${props.cluster}`}`,
      schedule: ScheduleExpression.rate(Duration.minutes(minutes)),
      target: new LambdaInvoke(props.target, {
        role,
        input: ScheduleTargetInput.fromObject({
          pass: props.pass,
          ...(props.cluster === undefined ? {} : { cluster: props.cluster }),
          scheduledTime: ContextAttribute.scheduledTime,
        }),
        // A pass that cannot be delivered within one interval is superseded by the next one;
        // retrying longer would only queue stale passes behind fresh ones.
        retryAttempts: 3,
        maxEventAge: Duration.seconds(Math.max(60, minutes * 60)),
        deadLetterQueue: props.deadLetterQueue,
      }),
    });
    Validations.of(role).acknowledge({
      id: invokeVersionsFinding(props.target),
      reason:
        'CDK grants invoke on the function and its versions (ARN:*); the role can invoke this one function only.',
    });
  }
}

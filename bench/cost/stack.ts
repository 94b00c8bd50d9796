/**
 * What the bill takes from the stack itself: the CDK app is built in-process (no bundling, as the
 * infra tests build it) for the reference cluster's config, and its template is read for the
 * functions and their memory, the pass schedules, alarms and the metrics they watch, dashboards,
 * KMS keys, secrets, queues, log retention and the table's billing mode and PITR. Change the
 * stack and the bill follows.
 */
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { createBerthApp } from '../../infra/berth-app.js';
import { FUNCTION_NAMES, type FunctionName } from '../../infra/constructs/berth-function.js';

/** One function as the template declares it. */
export interface StackFunction {
  readonly memoryMb: number;
  readonly architecture: string;
  readonly tracing: string;
  /** Lambda writes its START, END and REPORT lines (system log level INFO or DEBUG). */
  readonly platformLogs: boolean;
}

/** Everything billable the template declares, for one cluster's stack. */
export interface StackResources {
  readonly functions: Readonly<Record<FunctionName, StackFunction>>;
  /** Minutes between runs of each scheduled pass. */
  readonly scheduleMinutes: Readonly<Record<'repair' | 'scale' | 'eni', number>>;
  readonly alarms: number;
  /** Metrics the alarms watch (metric math counts each metric it reads). */
  readonly alarmMetrics: number;
  readonly dashboards: number;
  readonly kmsKeys: number;
  readonly kmsKeysRotated: number;
  readonly secrets: number;
  readonly queues: number;
  readonly settleBatchSize: number;
  readonly logRetentionDays: readonly number[];
  readonly tableBillingMode: string;
  readonly pointInTimeRecovery: boolean;
  /** Interface VPC endpoints (private-network mode). */
  readonly interfaceEndpoints: number;
  readonly resourceCounts: Readonly<Record<string, number>>;
  readonly synthMs: number;
}

interface Resource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
}

const PASS_NAMES = ['repair', 'scale', 'eni'] as const;

function rateMinutes(expression: unknown): number {
  const match = /^rate\((\d+) minutes?\)$/.exec(String(expression));
  if (!match) throw new Error(`schedule expression ${String(expression)} is not rate(N minutes)`);
  return Number(match[1]);
}

/**
 * Builds the app for `configDocument` (with CDK context `context` besides, e.g. `-c vpc`) and
 * reads what it would bill.
 */
export function stackResources(
  configDocument: Readonly<Record<string, unknown>>,
  context: Readonly<Record<string, string>> = {},
): StackResources {
  const started = performance.now();
  const { stack } = createBerthApp(
    { context: { ...context, config: 'berth.json', 'aws:cdk:bundling-stacks': [] } },
    (path) => {
      if (path !== 'berth.json') throw new Error(`unexpected read of ${path}`);
      return JSON.stringify(configDocument);
    },
  );
  const template = Template.fromStack(stack).toJSON() as { Resources: Record<string, Resource> };
  const resources = Object.values(template.Resources);
  const ofType = (type: string) => resources.filter((r) => r.Type === type);

  const functions = Object.fromEntries(
    FUNCTION_NAMES.map((name) => {
      const cfn = stack.functions[name].function.node.defaultChild as CfnFunction;
      const props = template.Resources[stack.getLogicalId(cfn)]?.Properties ?? {};
      const tracing = (props.TracingConfig as { Mode?: string } | undefined)?.Mode ?? 'PassThrough';
      const systemLevel =
        (props.LoggingConfig as { SystemLogLevel?: string } | undefined)?.SystemLogLevel ?? 'INFO';
      return [
        name,
        {
          memoryMb: Number(props.MemorySize),
          architecture: String((props.Architectures as string[] | undefined)?.[0] ?? 'x86_64'),
          tracing,
          platformLogs: systemLevel === 'INFO' || systemLevel === 'DEBUG',
        },
      ];
    }),
  ) as Record<FunctionName, StackFunction>;

  const scheduleMinutes = Object.fromEntries(
    PASS_NAMES.map((pass) => {
      const schedule = ofType('AWS::Scheduler::Schedule').find((r) =>
        String((r.Properties?.Target as { Input?: string } | undefined)?.Input).includes(
          `"pass":"${pass}"`,
        ),
      );
      if (!schedule) throw new Error(`the stack has no schedule for the ${pass} pass`);
      return [pass, rateMinutes(schedule.Properties?.ScheduleExpression)];
    }),
  ) as Record<(typeof PASS_NAMES)[number], number>;

  const alarms = ofType('AWS::CloudWatch::Alarm');
  const alarmMetrics = alarms.reduce((sum, alarm) => {
    const metrics = alarm.Properties?.Metrics as { MetricStat?: unknown }[] | undefined;
    return sum + (metrics ? metrics.filter((m) => m.MetricStat).length : 1);
  }, 0);
  const keys = ofType('AWS::KMS::Key');
  const table = ofType('AWS::DynamoDB::GlobalTable')[0]?.Properties ?? {};
  const replica = (table.Replicas as Record<string, unknown>[] | undefined)?.[0] ?? {};
  const mapping = ofType('AWS::Lambda::EventSourceMapping')[0]?.Properties ?? {};
  const resourceCounts: Record<string, number> = {};
  for (const r of resources) resourceCounts[r.Type] = (resourceCounts[r.Type] ?? 0) + 1;

  return {
    functions,
    scheduleMinutes,
    alarms: alarms.length,
    alarmMetrics,
    dashboards: ofType('AWS::CloudWatch::Dashboard').length,
    kmsKeys: keys.length,
    kmsKeysRotated: keys.filter((k) => k.Properties?.EnableKeyRotation === true).length,
    secrets: ofType('AWS::SecretsManager::Secret').length,
    queues: ofType('AWS::SQS::Queue').length,
    settleBatchSize: Number(mapping.BatchSize ?? 10),
    logRetentionDays: ofType('AWS::Logs::LogGroup').map((g) =>
      Number(g.Properties?.RetentionInDays),
    ),
    tableBillingMode: String(table.BillingMode ?? 'PROVISIONED'),
    pointInTimeRecovery:
      (replica.PointInTimeRecoverySpecification as { PointInTimeRecoveryEnabled?: boolean })
        ?.PointInTimeRecoveryEnabled === true,
    interfaceEndpoints: ofType('AWS::EC2::VPCEndpoint').filter(
      (e) => (e.Properties?.VpcEndpointType ?? 'Interface') === 'Interface',
    ).length,
    resourceCounts,
    synthMs: Math.round(performance.now() - started),
  };
}

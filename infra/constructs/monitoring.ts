/**
 * Alarms and a dashboard for one berth stack. Every alarm notifies one SNS topic (subscribe a
 * mailbox or a pager to the AlarmTopicArn output). Thresholds are "any" for faults that should
 * never happen in a healthy stack (errors, throttles, dead letters) and a latency bound for the
 * webhook, whose calls hold up the apiserver.
 *
 * The functions, queues and table are the stack's, watched once; berth's own metrics carry the
 * cluster as a dimension, so each cluster has its own alarms on them (a full range, a leak, the
 * EC2 budget) and its own lines on the one dashboard.
 *
 * What it costs: CloudWatch bills each metric an alarm watches, each month, and each custom
 * metric for every hour it is published. So an alarm watches one metric per fault, not one per
 * function where one place sees them all (a failed pass lands in the dead-letter queue), and the
 * dashboard reads what only it needs (addresses in the pools, each range's use) from the passes'
 * log lines with Logs Insights, paid per query when someone looks.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { RANGE_ALARM_PERCENT } from '../../shared/app/pass-records.js';
import { STACK_OUTPUTS } from '../../shared/manifests/stack-outputs.js';

/** One cluster the stack serves, as the monitoring sees it. */
export interface MonitoredCluster {
  readonly name: string;
  /** Prefix of its alarms' construct ids: empty in a single-cluster stack (ids as they were). */
  readonly idPrefix: string;
  /** Names of its exclusive ranges (the service CIDRs and the node port range). */
  readonly ranges: readonly string[];
}

/** Props of the monitoring. */
export interface MonitoringProps {
  /** What the stack is called in descriptions (its cluster, or the stack's name). */
  readonly name: string;
  /** `berth-<cluster>` for one cluster, the stack's name for several. */
  readonly dashboardName: string;
  readonly clusters: readonly MonitoredCluster[];
  /** Every berth function, by name. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** Where the repair and ENI passes log what the dashboard reads (range use, pool addresses). */
  readonly logGroups: { readonly repair: logs.ILogGroup; readonly eni: logs.ILogGroup };
  /** Encrypt the alarm topic with a customer managed key of its own. */
  readonly topicKey: boolean;
  /** The webhook function, watched for latency, throttles and answered 500s as well. */
  readonly admission: lambda.IFunction;
  /** The node IP API's function, watched for throttles. */
  readonly nodeIps: lambda.IFunction;
  /** The capacity API's function, watched for throttles and answered 5XX (never its 403s). */
  readonly capacity: lambda.IFunction;
  /** p99 duration above this raises an alarm: the apiserver is waiting on berth. */
  readonly admissionLatencyBudget: Duration;
  readonly table: dynamodb.ITableV2;
  /**
   * Where a failed pass, an undelivered event and a settle task that kept failing end (the
   * repair pass finishes a settle task's releases).
   */
  readonly deadLetterQueue: sqs.IQueue;
  /** The settle queue: its oldest message's age is the settle lag, plotted. */
  readonly settleQueue: sqs.IQueue;
}

const PERIOD = Duration.minutes(5);

/** Alarms, their topic and the dashboard. */
export class Monitoring extends Construct {
  /** Where every alarm sends its state changes. */
  readonly topic: sns.Topic;
  /** Every alarm, by id. */
  readonly alarms: readonly cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    // CloudWatch alarms cannot publish to a topic under the AWS managed SNS key, so an encrypted
    // topic needs a key of its own that lets CloudWatch (and only it, besides the account) use it.
    const key = props.topicKey
      ? new kms.Key(this, 'AlarmTopicKey', {
          description: `berth alarm topic (${props.name})`,
          enableKeyRotation: true,
          removalPolicy: RemovalPolicy.DESTROY,
          pendingWindow: Duration.days(7),
        })
      : undefined;
    key?.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    );
    this.topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `berth alarms (${props.name})`,
      enforceSSL: true,
      ...(key ? { masterKey: key } : {}),
    });
    if (!key) {
      Validations.of(this.topic).acknowledge({
        id: 'AwsSolutions-SNS2',
        reason:
          'The alarm topic carries alarm state changes (alarm names, thresholds, metric values), no data; it takes TLS only. A key of its own costs $1-3 a month: -c alarmTopicKey=true adds it.',
      });
    }
    new CfnOutput(this, 'AlarmTopicArn', {
      key: STACK_OUTPUTS.alarmTopicArn,
      value: this.topic.topicArn,
      description: 'SNS topic of the berth alarms',
    });

    const alarms: cloudwatch.Alarm[] = [];
    const alarm = (
      alarmId: string,
      metric: cloudwatch.IMetric,
      threshold: number,
      description: string,
      cluster: string = props.name,
    ) => {
      const created = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No data means no invocations, which is not a fault.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `berth (${cluster}): ${description}`,
      });
      created.addAlarmAction(new actions.SnsAction(this.topic));
      created.addOkAction(new actions.SnsAction(this.topic));
      alarms.push(created);
      return created;
    };

    // Errors and throttles alarm where a caller waits: the webhook (its reserved concurrency caps
    // it), the node IP API and the capacity API. A failed or throttled pass or instance event,
    // and a settle look that keeps failing, end in the dead-letter queue: its alarm below catches
    // every one of them, with one metric.
    const callerFacing = [
      { id: 'Admission', name: 'admission', fn: props.admission },
      { id: 'NodeIps', name: 'node-ips', fn: props.nodeIps },
      { id: 'Capacity', name: 'capacity', fn: props.capacity },
    ];
    // Every 5XX answer of the webhook's function URL, for the stack: a failed invocation (a
    // crash or a timeout, answered 502), and the 500s and 503s berth answers itself (counted per
    // cluster as InternalErrors, plotted below). The webhook never answers 5XX otherwise; the
    // node IP API does (503: no address ready yet, retry), so its errors alarm as two metrics.
    alarm(
      'AdmissionErrors',
      props.admission.metric('Url5xxCount', { period: PERIOD, statistic: cloudwatch.Stats.SUM }),
      1,
      'the webhook answered HTTP 5XX: it failed, or answered 500, or 503 with the table or the EKS API unreachable',
    );
    // The capacity API answers 5XX only when it fails or meets a fault (500), so one metric covers
    // both, as for the webhook; a caller it refuses (403) or a cluster it does not serve (404) is
    // the caller's mistake, 4XX, and alarms nobody.
    alarm(
      'CapacityErrors',
      props.capacity.metric('Url5xxCount', { period: PERIOD, statistic: cloudwatch.Stats.SUM }),
      1,
      'the capacity API answered HTTP 5XX: it failed, or answered 500 with the table unreachable',
    );
    alarm(
      'NodeIpsErrors',
      props.nodeIps.metricErrors({ period: PERIOD }),
      1,
      'the node-ips function failed',
    );
    for (const { id, name, fn } of callerFacing) {
      alarm(
        `${id}Throttles`,
        fn.metricThrottles({ period: PERIOD }),
        1,
        `the ${name} function was throttled`,
      );
    }
    const admissionP99 = props.admission.metricDuration({
      period: PERIOD,
      statistic: cloudwatch.Stats.p(99),
    });
    alarm(
      'AdmissionLatency',
      admissionP99,
      props.admissionLatencyBudget.toMilliseconds(),
      `webhook p99 duration reached ${props.admissionLatencyBudget.toMilliseconds()} ms`,
    );
    const deadLetters = props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period: PERIOD,
      statistic: cloudwatch.Stats.MAXIMUM,
    });
    alarm(
      'DeadLetters',
      deadLetters,
      1,
      'a scheduled pass or instance event failed or could not be delivered, or settle looks kept failing (given-back Service values wait for the repair pass)',
    );
    // The settle lag is plotted, not alarmed: a task waits at most 5 minutes between looks, and
    // a queue nobody drains delays a release by one repair pass only (each pass finishes every
    // release older than two minutes); a look that keeps failing ends in the dead letters above.
    const settleLag = props.settleQueue.metricApproximateAgeOfOldestMessage({
      period: PERIOD,
      statistic: cloudwatch.Stats.MAXIMUM,
      label: 'oldest settle task (s)',
    });
    // The table's own throttle counts, on the dashboard. They need no alarm of their own: a
    // throttle the SDK's retries absorb harms nothing, and one they do not fails the call, which
    // the webhook and node IP API answer with HTTP 503 (counted with InternalErrors) and a pass with a failed
    // invocation (the dead-letter queue); so does a DynamoDB system error.
    const tableThrottles = new cloudwatch.MathExpression({
      expression: 'FILL(reads, 0) + FILL(writes, 0)',
      usingMetrics: {
        reads: props.table.metric('ReadThrottleEvents', { period: PERIOD, statistic: 'Sum' }),
        writes: props.table.metric('WriteThrottleEvents', { period: PERIOD, statistic: 'Sum' }),
      },
      label: 'throttled',
      period: PERIOD,
    });
    // berth's own metrics (Powertools EMF): every one carries its service and the cluster.
    const series = {
      fullRangeDenials: [] as cloudwatch.IMetric[],
      leaks: [] as cloudwatch.IMetric[],
      repairWork: [] as cloudwatch.IMetric[],
      budgetSpent: [] as cloudwatch.IMetric[],
      internalErrors: [] as cloudwatch.IMetric[],
    };
    for (const cluster of props.clusters) {
      const id = (alarmId: string) => `${cluster.idPrefix}${alarmId}`;
      // Lines name their cluster where the dashboard shows several.
      const label = (text: string) => (cluster.idPrefix === '' ? text : `${cluster.name} ${text}`);
      const clusterAlarm = (
        alarmId: string,
        metric: cloudwatch.IMetric,
        threshold: number,
        description: string,
      ) => alarm(id(alarmId), metric, threshold, description, cluster.name);
      const berthMetric = (
        service: string,
        metricName: string,
        options: { statistic?: string; dimensions?: Record<string, string>; label?: string } = {},
      ) =>
        new cloudwatch.Metric({
          namespace: 'berth',
          metricName,
          dimensionsMap: {
            service: `berth-${service}`,
            cluster: cluster.name,
            ...options.dimensions,
          },
          statistic: options.statistic ?? cloudwatch.Stats.SUM,
          period: PERIOD,
          ...(options.label ? { label: label(options.label) } : {}),
        });
      // The HTTP functions answer internal faults with HTTP 500, and a table or EKS API that does
      // not answer with 503 (the apiserver applies its failurePolicy to both; a node agent
      // retries), instead of failing the invocation, so the Errors metric misses them;
      // Powertools counts both as InternalErrors per service.
      // The webhook's are alarmed with its function URL's 5XX answers above, once for the stack.
      const internalErrors = berthMetric('admission', 'InternalErrors');
      clusterAlarm(
        'NodeIpsInternalErrors',
        berthMetric('node-ips', 'InternalErrors'),
        1,
        'the ENI IP API answered HTTP 500, or 503 with the table unreachable',
      );
      series.internalErrors.push(
        internalErrors.with({ label: label('HTTP 500'), period: Duration.minutes(5) }),
      );
      // The fullest range's use, published from 80% only (no data is every range well short of
      // its alarm): one alarm metric a cluster, however many ranges; the repair pass's
      // `range usage` log lines and the dashboard's first graph say which range.
      clusterAlarm(
        'RangeNearlyFull',
        berthMetric('repair', 'RangeUsedPercent', { statistic: cloudwatch.Stats.MAXIMUM }),
        RANGE_ALARM_PERCENT,
        `a range (${cluster.ranges.join(', ')}) is over ${RANGE_ALARM_PERCENT}% used`,
      );
      // Denials for a full range are plotted, not alarmed: a full range is over 90% used, which
      // the repair pass after the denial reports to the alarm above.
      series.fullRangeDenials.push(
        berthMetric('admission', 'RangeFullDenials', { label: 'range is full' }),
      );
      // Cluster IPs, node ports and host ports together: one alarm metric (the pass logs which).
      const leaks = berthMetric('repair', 'LeaksFreed', { label: 'leaks freed' });
      clusterAlarm('RepairLeaks', leaks, 1, 'the repair pass freed leaked values');
      series.leaks.push(leaks);
      series.repairWork.push(
        berthMetric('repair', 'Released', { label: 'released' }),
        berthMetric('repair', 'Recorded', { label: 'recorded' }),
      );
      // The budget is the account's, shared by every cluster; spending it is seen per cluster.
      const budgetSpent = berthMetric('eni', 'Ec2BudgetSpent', { label: 'EC2 budget spent' });
      clusterAlarm(
        'Ec2Throttling',
        budgetSpent,
        1,
        "ENI passes found berth's EC2 rate budget spent",
      );
      series.budgetSpent.push(budgetSpent);
    }
    this.alarms = alarms;

    const functions = Object.entries(props.functions);
    const perFunction = (title: string, metric: (fn: lambda.IFunction) => cloudwatch.Metric) =>
      new cloudwatch.GraphWidget({
        title,
        width: 8,
        left: functions.map(([name, fn]) => metric(fn).with({ label: name })),
      });
    // Series by cluster where the stack serves several (the passes' log lines carry it).
    const byCluster = props.clusters.length > 1 ? ', cluster' : '';
    new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(6),
      widgets: [
        [
          new cloudwatch.LogQueryWidget({
            title: 'Are we running out? (% of each range used)',
            width: 8,
            logGroupNames: [props.logGroups.repair.logGroupName],
            view: cloudwatch.LogQueryVisualizationType.LINE,
            queryLines: [
              "filter message = 'range usage'",
              `stats max(percent) by bin(5m), range${byCluster}`,
            ],
          }),
          new cloudwatch.GraphWidget({
            title: 'Did repair find anything? (leaks freed, findings)',
            width: 8,
            left: series.leaks,
            right: series.repairWork,
          }),
          new cloudwatch.LogQueryWidget({
            title: 'Are ENI pools warm? (IPs after each pass)',
            width: 8,
            logGroupNames: [props.logGroups.eni.logGroupName],
            view: cloudwatch.LogQueryVisualizationType.LINE,
            queryLines: [
              // Whole passes only: an instance event's pass sees one node's pool.
              "filter message = 'eni pass' and summary.pools > 1",
              `stats min(summary.idleIps) as idle, max(summary.assignedIps) as assigned by bin(5m)${byCluster}`,
            ],
          }),
        ],
        [
          new cloudwatch.GraphWidget({
            title: 'Denials for a full range, EC2 budget spent',
            width: 24,
            left: series.fullRangeDenials,
            right: series.budgetSpent,
          }),
        ],
        [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms, width: 24 })],
        [
          new cloudwatch.GraphWidget({
            title: 'Webhook duration (ms)',
            width: 8,
            left: [
              props.admission.metricDuration({ statistic: cloudwatch.Stats.p(50), label: 'p50' }),
              props.admission.metricDuration({ statistic: cloudwatch.Stats.p(99), label: 'p99' }),
            ],
            leftAnnotations: [
              {
                value: props.admissionLatencyBudget.toMilliseconds(),
                label: 'alarm',
                color: cloudwatch.Color.RED,
              },
            ],
          }),
          new cloudwatch.GraphWidget({
            title: 'Webhook answers',
            width: 8,
            left: [
              props.admission.metricInvocations({ label: 'invocations' }),
              ...series.internalErrors,
            ],
          }),
          new cloudwatch.GraphWidget({
            title: 'Dead letters, settle lag',
            width: 8,
            left: [deadLetters.with({ label: 'visible messages' })],
            right: [settleLag],
          }),
        ],
        [
          perFunction('Invocations', (fn) => fn.metricInvocations()),
          perFunction('Errors', (fn) => fn.metricErrors()),
          perFunction('Duration p99 (ms)', (fn) =>
            fn.metricDuration({ statistic: cloudwatch.Stats.p(99) }),
          ),
        ],
        [
          new cloudwatch.GraphWidget({
            title: 'Table capacity (units)',
            width: 12,
            left: [
              props.table.metricConsumedReadCapacityUnits({ label: 'read' }),
              props.table.metricConsumedWriteCapacityUnits({ label: 'write' }),
            ],
          }),
          new cloudwatch.GraphWidget({
            title: 'Table throttles and conflicts',
            width: 12,
            left: [
              tableThrottles,
              props.table.metricConditionalCheckFailedRequests({
                label: 'conditional check failed',
              }),
            ],
          }),
        ],
      ],
    });
  }
}

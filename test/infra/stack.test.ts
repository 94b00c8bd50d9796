import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BerthStack } from '../../infra/berth-stack.js';
import { ENI_INVOCATIONS } from '../../shared/eni/policy.js';
import { DEFAULT_REPAIR_LEASE_TTL_MS } from '../../shared/repair/pass.js';
import { SCALE_POLICY_DEFAULTS } from '../../shared/scale/policy.js';
import { renderedJoin } from '../support/cloudformation.js';
import { cfnLint, synthStack, type ValidationReport } from '../support/synth.js';
import * as roles from '../support/template-roles.js';
import { actionsOf, type Resources } from '../support/template-roles.js';

/** A config that differs from the defaults where the template shows it. */
const CONFIG = {
  repair: { intervalSeconds: 300 },
  eni: { intervalSeconds: 90 },
  scale: { nodePool: { type: 'eks-nodegroup', name: 'game-nodes' } },
};

let stack: BerthStack;
let template: Template;
let templateFile: string;
let validationReport: ValidationReport;

const functionId = (construct: string) => roles.functionId(template, construct);
const roleId = (construct: string) => roles.roleId(template, construct);
const statementsOf = (construct: string) => roles.statementsOf(template, construct);

beforeAll(() => {
  ({
    stack,
    template,
    report: validationReport,
    file: templateFile,
  } = synthStack(CONFIG, {
    cluster: 'games',
  }));
}, 600_000);

describe('BerthStack', () => {
  it('is named after the cluster', () => {
    expect(stack.stackName).toBe('berth-games');
  });

  it('passes cdk-nag AwsSolutions with no unacknowledged finding', () => {
    const report = validationReport.pluginReports.find(
      (plugin) => plugin.pluginName === 'AwsSolutions',
    );
    expect(report?.conclusion).toBe('success');
    expect(report?.violations).toEqual([]);
  });

  it('passes cfn-lint with no error or warning beyond the dependencies CDK spells out twice', () => {
    expect(() => cfnLint(templateFile)).not.toThrow();
  });

  it('keeps the table on-demand, recoverable, protected and retained, with the shared key schema', () => {
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 1);
    template.hasResource('AWS::DynamoDB::GlobalTable', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
        Replicas: [
          Match.objectLike({
            DeletionProtectionEnabled: true,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          }),
        ],
      }),
    });
  });

  it('runs seven functions on Node.js 24, arm64, with source maps and the validated config', () => {
    template.resourceCountIs('AWS::Lambda::Function', 7);
    const functions = Object.values(template.findResources('AWS::Lambda::Function') as Resources);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
      });
      const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> })
        .Variables;
      expect(variables.NODE_OPTIONS).toBe('--enable-source-maps');
      expect(JSON.parse(String(variables.BERTH_CONFIG))).toEqual({ ...CONFIG, cluster: 'games' });
      expect(variables.BERTH_TABLE).toEqual({ Ref: expect.stringMatching(/^Table/) });
    }
  });

  it('gives only the admission function the webhook secret, and times it out before the webhook does', () => {
    const admission = template.findResources('AWS::Lambda::Function')[
      functionId('Admission')
    ] as Resources[string];
    expect(admission.Properties.Timeout).toBe(4);
    const variables = (admission.Properties.Environment as { Variables: Record<string, unknown> })
      .Variables;
    expect(JSON.parse(renderedJoin(variables.BERTH_WEBHOOK_SECRETS))).toEqual({
      games: expect.stringMatching(/^WebhookSecret/),
    });
    for (const construct of ['Repair', 'Scale', 'Eni', 'NodeIps']) {
      expect(actionsOf(statementsOf(construct))).not.toContain('secretsmanager:GetSecretValue');
    }
    expect(actionsOf(statementsOf('Admission'))).toContain('secretsmanager:GetSecretValue');
  });

  it('times the leased functions out 30 s before their lease expires', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    const timeoutOf = (name: string) =>
      (functions[functionId(name)] as Resources[string]).Properties.Timeout;
    expect(timeoutOf('Repair')).toBe(DEFAULT_REPAIR_LEASE_TTL_MS / 1000 - 30);
    expect(timeoutOf('Repair')).toBe(270);
    expect(timeoutOf('Scale')).toBe(SCALE_POLICY_DEFAULTS.leaseTtlMs / 1000 - 30);
    expect(timeoutOf('Scale')).toBe(90);
    // The ENI functions: killed 30 s before a pool lease they took can expire.
    expect(timeoutOf('Eni')).toBe(ENI_INVOCATIONS.work.leaseMs / 1000 - 30);
    expect(timeoutOf('Eni')).toBe(120);
    expect(timeoutOf('NodeIps')).toBe(ENI_INVOCATIONS.request.leaseMs / 1000 - 30);
    expect(timeoutOf('NodeIps')).toBe(15);
  });

  it('generates a long webhook secret without punctuation', () => {
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: Match.objectLike({
        ExcludePunctuation: true,
        IncludeSpace: false,
        PasswordLength: 48,
      }),
    });
  });

  it('exposes the webhook without auth (the apiserver cannot sign), the ENI IP and capacity APIs with SigV4', () => {
    template.resourceCountIs('AWS::Lambda::Url', 3);
    template.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'NONE',
      TargetFunctionArn: { 'Fn::GetAtt': [functionId('Admission'), 'Arn'] },
    });
    template.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'AWS_IAM',
      TargetFunctionArn: { 'Fn::GetAtt': [functionId('NodeIps'), 'Arn'] },
    });
    template.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'AWS_IAM',
      TargetFunctionArn: { 'Fn::GetAtt': [functionId('Capacity'), 'Arn'] },
    });
  });

  it('schedules the passes at their configured intervals, rounded up to whole minutes', () => {
    template.resourceCountIs('AWS::Scheduler::Schedule', 3);
    const schedules = Object.values(
      template.findResources('AWS::Scheduler::Schedule') as Resources,
    );
    const byTarget = Object.fromEntries(
      schedules.map((schedule) => {
        const target = schedule.Properties.Target as { Arn: { 'Fn::GetAtt': [string, string] } };
        return [target.Arn['Fn::GetAtt'][0], schedule.Properties];
      }),
    );
    expect(byTarget[functionId('Repair')]?.ScheduleExpression).toBe('rate(5 minutes)');
    expect(byTarget[functionId('Scale')]?.ScheduleExpression).toBe('rate(1 minute)');
    expect(byTarget[functionId('Eni')]?.ScheduleExpression).toBe('rate(2 minutes)');
    for (const schedule of schedules) {
      expect(schedule.Properties.Target).toMatchObject({
        RetryPolicy: { MaximumRetryAttempts: 3 },
        DeadLetterConfig: {
          Arn: { 'Fn::GetAtt': [expect.stringMatching(/^DeadLetterQueue/), 'Arn'] },
        },
      });
    }
  });

  it('sends EC2 instance state changes to the ENI function with a dead-letter queue', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.ec2'],
        'detail-type': ['EC2 Instance State-change Notification'],
        detail: { state: ['running', 'shutting-down', 'terminated'] },
      },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [functionId('Eni'), 'Arn'] },
          DeadLetterConfig: Match.anyValue(),
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 3 }),
        }),
      ],
    });
  });

  it('lets every function describe only its own cluster and use only its own table', () => {
    for (const construct of ['Admission', 'Repair', 'Scale', 'Eni', 'NodeIps']) {
      const statements = statementsOf(construct);
      const describe = statements.filter((statement) =>
        [statement.Action].flat().includes('eks:DescribeCluster'),
      );
      expect(describe).toHaveLength(1);
      expect(JSON.stringify(describe[0]?.Resource)).toContain(':cluster/games"');
      const dynamo = statements.filter((statement) =>
        [statement.Action].flat().some((a) => a.startsWith('dynamodb:')),
      );
      for (const statement of dynamo) {
        expect(statement.Resource).toEqual({
          'Fn::GetAtt': [expect.stringMatching(/^Table/), 'Arn'],
        });
      }
      expect(actionsOf(statements).some((action) => action.endsWith(':*') || action === '*')).toBe(
        false,
      );
    }
  });

  it('gives EC2 permissions to the ENI functions only, and node pool permissions to scale only', () => {
    for (const construct of ['Admission', 'Repair', 'Scale']) {
      expect(actionsOf(statementsOf(construct)).some((action) => action.startsWith('ec2:'))).toBe(
        false,
      );
    }
    for (const construct of ['Admission', 'Repair', 'Eni', 'NodeIps']) {
      const actions = actionsOf(statementsOf(construct));
      expect(
        actions.some((action) => action.startsWith('autoscaling:') || action.includes('Nodegroup')),
      ).toBe(false);
    }
    expect(actionsOf(statementsOf('Scale'))).toEqual(
      expect.arrayContaining([
        'eks:UpdateNodegroupConfig',
        'autoscaling:TerminateInstanceInAutoScalingGroup',
      ]),
    );
    for (const construct of ['Eni', 'NodeIps']) {
      expect(actionsOf(statementsOf(construct))).toEqual(
        expect.arrayContaining(['ec2:CreateNetworkInterface', 'ec2:AssignPrivateIpAddresses']),
      );
    }
  });

  it('lets the node IP function hand background refills to the ENI function, and only that', () => {
    const eni = { 'Fn::GetAtt': [functionId('Eni'), 'Arn'] };
    const invokes = (construct: string) =>
      statementsOf(construct).filter((statement) =>
        [statement.Action].flat().some((action) => action.startsWith('lambda:')),
      );
    expect(invokes('NodeIps')).toEqual([
      expect.objectContaining({ Action: 'lambda:InvokeFunction', Resource: eni }),
    ]);
    for (const construct of ['Repair', 'Scale', 'Eni']) {
      expect(invokes(construct)).toEqual([]);
    }
    const nodeIps = template.findResources('AWS::Lambda::Function')[functionId('NodeIps')];
    expect(nodeIps?.Properties.Environment.Variables.BERTH_ENI_FUNCTION).toEqual({
      Ref: functionId('Eni'),
    });
  });

  it('lets the admission function ask the scale function for passes, and only that', () => {
    const invokes = statementsOf('Admission').filter((statement) =>
      [statement.Action].flat().some((action) => action.startsWith('lambda:')),
    );
    expect(invokes).toEqual([
      expect.objectContaining({
        Action: 'lambda:InvokeFunction',
        Resource: { 'Fn::GetAtt': [functionId('Scale'), 'Arn'] },
      }),
    ]);
    const admission = template.findResources('AWS::Lambda::Function')[functionId('Admission')];
    expect(admission?.Properties.Environment.Variables.BERTH_SCALE_FUNCTION).toEqual({
      Ref: functionId('Scale'),
    });
  });

  it('conditions every mutating EC2 call on berth ENIs on the cluster tag', () => {
    for (const construct of ['Eni', 'NodeIps']) {
      for (const statement of statementsOf(construct)) {
        const onEnis = JSON.stringify(statement.Resource).includes(':network-interface/*');
        if (onEnis)
          expect(JSON.stringify(statement.Condition)).toMatch(
            /berth.dev\/cluster|ec2:CreateAction/,
          );
      }
    }
  });

  it('puts every function role that talks to the cluster into the berth Kubernetes group through an access entry', () => {
    template.resourceCountIs('AWS::EKS::AccessEntry', 6);
    for (const construct of ['Admission', 'Repair', 'Scale', 'Eni', 'NodeIps']) {
      template.hasResourceProperties('AWS::EKS::AccessEntry', {
        ClusterName: 'games',
        PrincipalArn: { 'Fn::GetAtt': [roleId(construct), 'Arn'] },
        KubernetesGroups: ['berth'],
        Type: 'STANDARD',
      });
    }
  });

  it('alarms on caller-facing errors and throttles, webhook 5XX answers and latency, and dead letters', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm') as Resources);
    const metricNames = alarms.map((alarm) => alarm.Properties.MetricName ?? 'expression');
    // Errors where a caller waits; a failed pass or event lands in the dead-letter queue.
    const errors = alarms.filter((alarm) => alarm.Properties.MetricName === 'Errors');
    expect(errors.map((alarm) => String(alarm.Properties.AlarmDescription))).toEqual([
      'berth (games): the node-ips function failed',
    ]);
    // The webhook's failed invocations and its own 500s and 503s, and the capacity API's: their
    // function URLs' 5XX answers. No alarm counts 4XX: a refused caller (403) is not a fault.
    const answered = alarms.filter((alarm) => alarm.Properties.MetricName === 'Url5xxCount');
    expect(answered.map((alarm) => alarm.Properties)).toEqual(
      ['Admission', 'Capacity'].map((construct) =>
        expect.objectContaining({
          Namespace: 'AWS/Lambda',
          Statistic: 'Sum',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId(construct) } }],
        }),
      ),
    );
    expect(metricNames.some((name) => String(name).includes('4xx'))).toBe(false);
    const throttled = alarms.filter((alarm) => alarm.Properties.MetricName === 'Throttles');
    expect(throttled.map((alarm) => String(alarm.Properties.AlarmDescription)).sort()).toEqual([
      'berth (games): the admission function was throttled',
      'berth (games): the capacity function was throttled',
      'berth (games): the node-ips function was throttled',
    ]);
    // One dead-letter queue: failed passes, undelivered events and settle tasks alike.
    expect(
      metricNames.filter((name) => name === 'ApproximateNumberOfMessagesVisible'),
    ).toHaveLength(1);
    // The settle lag is plotted: every repair pass finishes a release its queue left.
    expect(metricNames).not.toContain('ApproximateAgeOfOldestMessage');
    // The node IP API's own 500s and 503s (its 503s for a busy pool are not 5XX-alarmed).
    expect(metricNames.filter((name) => name === 'InternalErrors')).toHaveLength(1);
    expect(metricNames).toContain('Duration');
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([
        { Ref: expect.stringMatching(/^MonitoringAlarmTopic/) },
      ]);
    }
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('sends every failed pass to the dead-letter queue, so one alarm metric watches them all', () => {
    const configs = Object.values(
      template.findResources('AWS::Lambda::EventInvokeConfig') as Resources,
    );
    const onFailure = configs.map((config) =>
      JSON.stringify(
        (config.Properties.DestinationConfig as { OnFailure?: { Destination?: unknown } })
          ?.OnFailure?.Destination,
      ),
    );
    expect(onFailure).toHaveLength(3);
    for (const destination of onFailure) expect(destination).toMatch(/DeadLetterQueue/);
    expect(configs.map((config) => config.Properties.MaximumRetryAttempts)).toEqual([0, 0, 0]);
  });

  it('keeps the billed alarm metrics to one per fault: 8 for the stack and 4 for its cluster', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm') as Resources);
    // CloudWatch bills each metric an alarm watches, every month.
    const billed = alarms.reduce(
      (sum, alarm) =>
        sum +
        (alarm.Properties.MetricName
          ? 1
          : (alarm.Properties.Metrics as { MetricStat?: unknown }[]).filter((m) => m.MetricStat)
              .length),
      0,
    );
    expect(billed).toBe(12);
    const descriptions = alarms.map((alarm) => String(alarm.Properties.AlarmDescription));
    // Table throttles and full-range denials are plotted, not alarmed (see the monitoring).
    expect(descriptions.some((text) => text.includes('DynamoDB throttled'))).toBe(false);
    expect(descriptions.some((text) => text.includes('denied because a range is full'))).toBe(
      false,
    );
  });

  it('feeds the settle function from an encrypted SQS queue with a dead-letter queue, and lets admission send to it', () => {
    const queues = template.findResources('AWS::SQS::Queue') as Resources;
    const settle = Object.entries(queues).find(([id]) => /^SettleQueue[0-9A-F]{8}$/.test(id));
    expect(settle?.[1].Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      RedrivePolicy: {
        maxReceiveCount: 5,
        deadLetterTargetArn: {
          'Fn::GetAtt': [expect.stringMatching(/^DeadLetterQueue/), 'Arn'],
        },
      },
      VisibilityTimeout: 180,
    });
    // The stack's one dead-letter queue, kept longer than the settle queue's day.
    expect(Object.keys(queues)).toHaveLength(2);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^SettleQueue[0-9A-F]{8}$'), 'Arn'] },
      FunctionName: { Ref: Match.stringLikeRegexp('^SettleFunction') },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const functions = Object.values(template.findResources('AWS::Lambda::Function') as Resources);
    const withQueue = functions.filter(
      (fn) =>
        (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)
          ?.Variables?.BERTH_SETTLE_QUEUE !== undefined,
    );
    expect(withQueue).toHaveLength(2);
    const policies = Object.entries(template.findResources('AWS::IAM::Policy') as Resources);
    const admissionPolicy = policies.find(([id]) => id.startsWith('AdmissionRole'))?.[1];
    expect(JSON.stringify(admissionPolicy?.Properties.PolicyDocument)).toContain('sqs:SendMessage');
  });

  it('reserves and caps the admission function concurrency, and no other function', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function') as Resources);
    const reserved = functions
      .map((fn) => fn.Properties.ReservedConcurrentExecutions)
      .filter((value) => value !== undefined);
    expect(reserved).toEqual([50]);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^berth admission webhook'),
      ReservedConcurrentExecutions: 50,
    });
  });

  it('sends alarms over TLS to a topic without a key of its own unless asked, acknowledging SNS2', () => {
    const [topic] = Object.values(template.findResources('AWS::SNS::Topic') as Resources);
    expect(topic?.Properties.KmsMasterKeyId).toBeUndefined();
    template.resourceCountIs('AWS::KMS::Key', 0);
    // SNS2 is acknowledged with its reason: the cdk-nag test above finds no open finding.
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('opens the dashboard on its three questions: running out, repair findings, warm ENI pools', () => {
    const [dashboard] = Object.values(
      template.findResources('AWS::CloudWatch::Dashboard') as Resources,
    );
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);
    const titles = [...body.matchAll(/\\"title\\":\\"([^\\]+)\\"/g)].map((m) => m[1]);
    expect(titles.slice(0, 3)).toEqual([
      'Are we running out? (% of each range used)',
      'Did repair find anything? (leaks freed, findings)',
      'Are ENI pools warm? (IPs after each pass)',
    ]);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm') as Resources);
    const descriptions = alarms.map((alarm) => String(alarm.Properties.AlarmDescription));
    // What only the dashboard needs is read from the passes' log lines, paid per look.
    expect(body).toContain("filter message = 'range usage'");
    expect(body).toContain("filter message = 'eni pass'");
    for (const text of [
      'a range (10.100.0.0/16, 30000-32767) is over 90% used',
      'the repair pass freed leaked values',
      "ENI passes found berth's EC2 rate budget spent",
    ]) {
      expect(descriptions.some((d) => d.endsWith(text))).toBe(true);
    }
    const nearlyFull = alarms.find((a) =>
      String(a.Properties.AlarmDescription).includes('10.100.0.0/16'),
    );
    expect(nearlyFull?.Properties.Threshold).toBe(90);
    const query = JSON.stringify(nearlyFull?.Properties);
    for (const part of ['"MetricName":"RangeUsedPercent"', '{"Name":"cluster","Value":"games"}'])
      expect(query).toContain(part);
    // The fullest range's use: one alarm metric whatever the number of ranges.
    expect(query).not.toContain('"Name":"range"');
  });

  it("logs JSON from every function, with Lambda's own lines only at WARN", () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function') as Resources);
    expect(functions.map((fn) => fn.Properties.LoggingConfig)).toEqual(
      Array(7).fill({
        LogFormat: 'JSON',
        SystemLogLevel: 'WARN',
        ApplicationLogLevel: 'INFO',
        LogGroup: expect.anything(),
      }),
    );
  });

  it('lets every function pass tracing through, recording only what its caller samples, loading no tracer', () => {
    const modes = Object.fromEntries(
      ['Admission', 'NodeIps', 'Capacity', 'Settle', 'Repair', 'Scale', 'Eni'].map((construct) => {
        const fn = (template.findResources('AWS::Lambda::Function') as Resources)[
          functionId(construct)
        ];
        if (!fn) throw new Error(`no function ${construct}`);
        const { TracingConfig, Environment } = fn.Properties as {
          TracingConfig: { Mode: string };
          Environment: { Variables: Record<string, unknown> };
        };
        return [construct, `${TracingConfig.Mode} ${Environment.Variables.BERTH_TRACING}`];
      }),
    );
    expect(modes).toEqual({
      Admission: 'PassThrough pass-through',
      NodeIps: 'PassThrough pass-through',
      Capacity: 'PassThrough pass-through',
      Settle: 'PassThrough pass-through',
      Repair: 'PassThrough pass-through',
      Scale: 'PassThrough pass-through',
      Eni: 'PassThrough pass-through',
    });
  });

  it('outputs the webhook base URL, the secret ARN, the node IPs and capacity URLs, the table name and its claim on the cluster', () => {
    const outputs = template.findOutputs('*');
    expect(Object.keys(outputs).sort()).toEqual(
      [
        'AlarmTopicArn',
        'CapacityUrl',
        'ClusterClaim',
        'NodeIpsUrl',
        'TableName',
        'WebhookBaseUrl',
        'WebhookSecretArn',
      ].sort(),
    );
    // Export names are unique in an account and Region: no second stack can serve the cluster.
    expect(outputs.ClusterClaim?.Export).toEqual({ Name: 'berth-cluster-games' });
    expect(outputs.WebhookBaseUrl?.Value).toEqual({
      'Fn::Join': [
        '',
        [
          { 'Fn::GetAtt': [expect.stringMatching(/^AdmissionFunctionFunctionUrl/), 'FunctionUrl'] },
          'admission/',
        ],
      ],
    });
    expect(outputs.WebhookSecretArn?.Value).toEqual({
      Ref: expect.stringMatching(/^WebhookSecret/),
    });
    expect(outputs.TableName?.Value).toEqual({ Ref: expect.stringMatching(/^Table/) });
    expect(outputs.CapacityUrl?.Value).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^CapacityFunctionFunctionUrl/), 'FunctionUrl'],
    });
  });
});

/**
 * The stack of a cluster with public fronts: the fronts function, its queue and pass, and its
 * ELBv2 and Global Accelerator permissions, scoped to the configured load balancers and
 * accelerator. stack.test.ts synthesizes a config without fronts: six functions, two queues,
 * three schedules, none of what is here.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { cfnLint, synthStack, type ValidationReport } from '../support/synth.js';
import * as roles from '../support/template-roles.js';
import { actionsOf, type Resources } from '../support/template-roles.js';

const NLB_A =
  'arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/games-a/0123456789abcdef';
const NLB_B =
  'arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/games-b/fedcba9876543210';
const ACCELERATOR = 'arn:aws:globalaccelerator::123456789012:accelerator/1234abcd-5678';
const ENDPOINT_GROUP = `${ACCELERATOR}/listener/0123abcd/endpoint-group/ab88888e`;

const CONFIG = {
  hostPortRanges: { default: '7000-8000', accelerated: '9000-9099' },
  fronts: {
    nlb: { loadBalancers: [NLB_A, NLB_B] },
    accelerator: { endpointGroupArn: ENDPOINT_GROUP, range: 'accelerated' },
  },
};

let template: Template;
let report: ValidationReport;
let file: string;

const roleId = (construct: string) => roles.roleId(template, construct);
const statementsOf = (construct: string) => roles.statementsOf(template, construct);

/** The resources each action of a role is granted on. */
function grants(construct: string): Map<string, unknown[]> {
  const byAction = new Map<string, unknown[]>();
  for (const statement of statementsOf(construct)) {
    for (const action of [statement.Action].flat()) {
      byAction.set(action, [...(byAction.get(action) ?? []), ...[statement.Resource].flat()]);
    }
  }
  return byAction;
}

function frontsFunction(): { id: string; properties: Record<string, unknown> } {
  const entries = Object.entries(template.findResources('AWS::Lambda::Function') as Resources);
  const found = entries.filter(([id]) => id.startsWith('FrontsFunction'));
  expect(found).toHaveLength(1);
  const [id, resource] = found[0] ?? ['', { Properties: {} }];
  return { id, properties: resource.Properties };
}

beforeAll(() => {
  ({ template, report, file } = synthStack(CONFIG, { cluster: 'games' }));
}, 600_000);

describe('BerthStack with public fronts', () => {
  it('passes cdk-nag with every finding acknowledged, and cfn-lint', () => {
    const nag = report.pluginReports.find((plugin) => plugin.pluginName === 'AwsSolutions');
    expect(nag?.violations).toEqual([]);
    expect(nag?.conclusion).toBe('success');
    expect(() => cfnLint(file)).not.toThrow();
  });

  it('adds the fronts function, on Node.js 24 arm64, killed after 90 s, with the config and the queue', () => {
    template.resourceCountIs('AWS::Lambda::Function', 8);
    const { properties } = frontsFunction();
    expect(properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Timeout: 90,
      MemorySize: 512,
    });
    const variables = (properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(JSON.parse(String(variables.BERTH_CONFIG))).toEqual({ ...CONFIG, cluster: 'games' });
    expect(variables.BERTH_FRONTS_QUEUE).toEqual({
      Ref: expect.stringMatching(/^FrontsQueue[0-9A-F]{8}$/),
    });
  });

  it('feeds it from an encrypted, TLS-only queue in batches of 100 gathered for 1 s, redriving to the dead-letter queue', () => {
    const queues = template.findResources('AWS::SQS::Queue') as Resources;
    expect(Object.keys(queues)).toHaveLength(3);
    const [queueId, queue] =
      Object.entries(queues).find(([id]) => /^FrontsQueue[0-9A-F]{8}$/.test(id)) ?? [];
    expect(queue?.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      // Six times the function's timeout.
      VisibilityTimeout: 540,
      MessageRetentionPeriod: 86_400,
      RedrivePolicy: {
        maxReceiveCount: 5,
        deadLetterTargetArn: { 'Fn::GetAtt': [expect.stringMatching(/^DeadLetterQueue/), 'Arn'] },
      },
    });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: queueId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
      FunctionName: { Ref: frontsFunction().id },
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
  });

  it('lets admission and the fronts function, and no other, put work on the fronts queue', () => {
    const senders = ['Admission', 'Settle', 'Repair', 'Scale', 'Eni', 'NodeIps', 'Fronts'].filter(
      (construct) =>
        statementsOf(construct).some(
          (statement) =>
            [statement.Action].flat().includes('sqs:SendMessage') &&
            JSON.stringify(statement.Resource).includes('FrontsQueue'),
        ),
    );
    expect(senders).toEqual(['Admission', 'Fronts']);
    const admission = Object.entries(template.findResources('AWS::Lambda::Function') as Resources)
      .filter(([id]) => id.startsWith('AdmissionFunction'))
      .map(([, fn]) => fn.Properties.Environment as { Variables: Record<string, unknown> });
    expect(admission[0]?.Variables.BERTH_FRONTS_QUEUE).toBeDefined();
  });

  it('runs the fronts pass every minute, delivered to the same function with its failures dead-lettered', () => {
    const { id } = frontsFunction();
    const schedules = Object.values(
      template.findResources('AWS::Scheduler::Schedule') as Resources,
    );
    expect(schedules).toHaveLength(4);
    const pass = schedules.find(
      (schedule) =>
        (schedule.Properties.Target as { Arn: { 'Fn::GetAtt': string[] } }).Arn['Fn::GetAtt'][0] ===
        id,
    );
    expect(pass?.Properties.ScheduleExpression).toBe('rate(1 minute)');
    const target = pass?.Properties.Target as { Input: string; DeadLetterConfig: unknown };
    expect(JSON.parse(target.Input)).toMatchObject({ pass: 'fronts' });
    expect(target.DeadLetterConfig).toBeDefined();
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: id },
      MaximumRetryAttempts: 0,
    });
  });

  it('scopes the fronts function to the pool: listeners on its load balancers, berth-* target groups, Describe on *', () => {
    const byAction = grants('Fronts');
    const listeners = [
      'arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/net/games-a/0123456789abcdef/*',
      'arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/net/games-b/fedcba9876543210/*',
    ];
    expect(byAction.get('elasticloadbalancing:CreateListener')).toEqual([
      NLB_A,
      NLB_B,
      ...listeners,
    ]);
    expect(byAction.get('elasticloadbalancing:DeleteListener')).toEqual(listeners);
    const targetGroups = [
      'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/berth-*/*',
    ];
    for (const action of [
      'CreateTargetGroup',
      'DeleteTargetGroup',
      'RegisterTargets',
      'DeregisterTargets',
    ]) {
      expect(byAction.get(`elasticloadbalancing:${action}`)).toEqual(targetGroups);
    }
    // The tags CreateListener and CreateTargetGroup set on what they create.
    expect(byAction.get('elasticloadbalancing:AddTags')?.sort()).toEqual(
      [...listeners, ...targetGroups].sort(),
    );
    for (const action of [
      'DescribeLoadBalancers',
      'DescribeListeners',
      'DescribeTargetGroups',
      'DescribeTags',
      'DescribeTargetHealth',
    ]) {
      expect(byAction.get(`elasticloadbalancing:${action}`)).toEqual(['*']);
    }
    // No action wildcard, no other load balancing action.
    const elb = [...byAction.keys()].filter((action) => action.startsWith('elasticloadbalancing:'));
    expect(elb).toHaveLength(12);
    expect(elb.some((action) => action.includes('*'))).toBe(false);
  });

  it('scopes its Global Accelerator calls to the configured accelerator and endpoint group', () => {
    const byAction = grants('Fronts');
    for (const action of ['DescribeCustomRoutingAccelerator', 'ListCustomRoutingPortMappings']) {
      expect(byAction.get(`globalaccelerator:${action}`)).toEqual([ACCELERATOR]);
    }
    for (const action of [
      'AllowCustomRoutingTraffic',
      'DenyCustomRoutingTraffic',
      'DescribeCustomRoutingEndpointGroup',
    ]) {
      expect(byAction.get(`globalaccelerator:${action}`)).toEqual([ACCELERATOR, ENDPOINT_GROUP]);
    }
    expect(byAction.get('globalaccelerator:ListCustomRoutingPortMappingsByDestination')).toEqual([
      '*',
    ]);
    const accelerator = [...byAction.keys()].filter((a) => a.startsWith('globalaccelerator:'));
    expect(accelerator).toHaveLength(6);
  });

  it('gives admission the pool reads only, and no other function any front permission', () => {
    expect(
      actionsOf(statementsOf('Admission')).filter((action) =>
        /^(elasticloadbalancing|globalaccelerator):/.test(action),
      ),
    ).toEqual([
      'elasticloadbalancing:DescribeLoadBalancers',
      'elasticloadbalancing:DescribeListeners',
    ]);
    for (const construct of ['Settle', 'Repair', 'Scale', 'Eni', 'NodeIps']) {
      expect(
        actionsOf(statementsOf(construct)).some((action) =>
          /^(elasticloadbalancing|globalaccelerator):/.test(action),
        ),
      ).toBe(false);
    }
  });

  it('lets the fronts function reach the cluster through its own access entry', () => {
    template.resourceCountIs('AWS::EKS::AccessEntry', 7);
    template.hasResourceProperties('AWS::EKS::AccessEntry', {
      ClusterName: 'games',
      PrincipalArn: { 'Fn::GetAtt': [roleId('Fronts'), 'Arn'] },
      KubernetesGroups: ['berth'],
    });
  });
});

describe('BerthStack making its custom routing accelerator (-c accelerator=true)', () => {
  const { fronts: _given, ...rest } = CONFIG;
  const config = { ...rest, fronts: { accelerator: { range: 'accelerated' } } };
  let made: Template;
  let madeReport: ValidationReport;
  let madeFile: string;

  beforeAll(() => {
    ({
      template: made,
      report: madeReport,
      file: madeFile,
    } = synthStack(config, {
      cluster: 'games',
      accelerator: 'true',
      acceleratorSubnets: 'subnet-0a1b,subnet-0c2d',
    }));
  }, 600_000);

  it('passes cdk-nag with every finding acknowledged, and cfn-lint', () => {
    const nag = madeReport.pluginReports.find((plugin) => plugin.pluginName === 'AwsSolutions');
    expect(nag?.violations).toEqual([]);
    expect(() => cfnLint(madeFile)).not.toThrow();
  });

  it('makes the accelerator with a polling custom resource: the config range as destinations, the subnets as endpoints', () => {
    const resources = Object.values(
      made.findResources('Custom::CustomRoutingAccelerator') as Resources,
    );
    expect(resources).toHaveLength(1);
    expect(resources[0]?.Properties).toMatchObject({
      Name: 'berth-games',
      ListenerFromPort: 1024,
      ListenerToPort: 65535,
      DestinationFromPort: 9000,
      DestinationToPort: 9099,
      EndpointGroupRegion: { Ref: 'AWS::Region' },
      SubnetIds: ['subnet-0a1b', 'subnet-0c2d'],
    });
    // The provider's waiter polls isComplete (a Step Functions state machine).
    made.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    expect(template.findResources('Custom::CustomRoutingAccelerator')).toEqual({});
  });

  it("puts the endpoint group it made into the functions' config and the stack's outputs", () => {
    const accelerator = Object.keys(made.findResources('Custom::CustomRoutingAccelerator'))[0];
    const endpointGroup = { 'Fn::GetAtt': [accelerator, 'EndpointGroupArn'] };
    const functions = Object.values(
      made.findResources('AWS::Lambda::Function') as Resources,
    ).filter((fn) => String(fn.Properties.Description).startsWith('berth '));
    const berthFunctions = functions.filter(
      (fn) =>
        (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)
          ?.Variables?.BERTH_CONFIG !== undefined,
    );
    expect(berthFunctions).toHaveLength(8);
    for (const fn of berthFunctions) {
      const join = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables
        .BERTH_CONFIG as { 'Fn::Join': [string, unknown[]] };
      const parts = join['Fn::Join'][1];
      expect(parts).toContainEqual(endpointGroup);
      const rendered = parts.map((part) => (typeof part === 'string' ? part : 'ARN')).join('');
      expect(JSON.parse(rendered)).toEqual({
        ...config,
        cluster: 'games',
        fronts: { accelerator: { range: 'accelerated', endpointGroupArn: 'ARN' } },
      });
    }
    const outputs = made.findOutputs('*');
    expect(outputs.AcceleratorEndpointGroupArn?.Value).toEqual(endpointGroup);
    expect(outputs.AcceleratorIpAddresses?.Value).toEqual({
      'Fn::GetAtt': [accelerator, 'IpAddresses'],
    });
  });

  it('scopes the fronts function to the accelerator it made, and gives it no load balancing', () => {
    const accelerator = Object.keys(made.findResources('Custom::CustomRoutingAccelerator'))[0];
    const endpointGroup = { 'Fn::GetAtt': [accelerator, 'EndpointGroupArn'] };
    const statements = roles.statementsOf(made, 'Fronts');
    const allow = statements.find((statement) =>
      [statement.Action].flat().includes('globalaccelerator:AllowCustomRoutingTraffic'),
    );
    expect(allow?.Resource).toEqual([
      { 'Fn::Select': [0, { 'Fn::Split': ['/listener/', endpointGroup] }] },
      endpointGroup,
    ]);
    expect(actionsOf(statements).some((action) => action.startsWith('elasticloadbalancing:'))).toBe(
      false,
    );
  });
});

describe('BerthStack for two clusters, one of them fronted', () => {
  it("runs that cluster's fronts pass and gives the fronts function its cluster only", () => {
    const { template: two, report: twoReport } = synthStack(
      {
        clusters: {
          'games-a': { fronts: { nlb: { loadBalancers: [NLB_A] } } },
          'games-b': {},
        },
      },
      { clusters: 'games-a,games-b' },
    );
    expect(twoReport.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    const frontsId = roles.functionId(two, 'Fronts');
    const passes = Object.values(two.findResources('AWS::Scheduler::Schedule') as Resources)
      .map(
        (schedule) =>
          schedule.Properties.Target as { Arn: { 'Fn::GetAtt': string[] }; Input: string },
      )
      .filter((target) => target.Arn['Fn::GetAtt'][0] === frontsId)
      .map((target) => JSON.parse(target.Input));
    expect(passes).toEqual([
      { pass: 'fronts', cluster: 'games-a', scheduledTime: '<aws.scheduler.scheduled-time>' },
    ]);
    const frontsRole = { 'Fn::GetAtt': [roles.roleId(two, 'Fronts'), 'Arn'] };
    const entries = Object.values(two.findResources('AWS::EKS::AccessEntry') as Resources)
      .filter(
        (entry) => JSON.stringify(entry.Properties.PrincipalArn) === JSON.stringify(frontsRole),
      )
      .map((entry) => entry.Properties.ClusterName);
    expect(entries).toEqual(['games-a']);
  }, 300_000);
});

describe('BerthStack with NLB fronts in private subnets', () => {
  it('runs the fronts function there too and adds an ELBv2 endpoint for the pool calls', () => {
    const { template: inVpc, report: vpcReport } = synthStack(
      { fronts: { nlb: { loadBalancers: [NLB_A] } } },
      { cluster: 'games', vpc: 'vpc-0abc1234', subnets: 'subnet-0aaa1111' },
    );
    expect(vpcReport.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    const fronts = (inVpc.findResources('AWS::Lambda::Function') as Resources)[
      roles.functionId(inVpc, 'Fronts')
    ];
    expect(fronts?.Properties.VpcConfig).toMatchObject({ SubnetIds: ['subnet-0aaa1111'] });
    const endpoints = Object.values(inVpc.findResources('AWS::EC2::VPCEndpoint') as Resources).map(
      (endpoint) => JSON.stringify(endpoint.Properties.ServiceName),
    );
    expect(endpoints).toHaveLength(8);
    expect(endpoints.some((name) => name.includes('.elasticloadbalancing"'))).toBe(true);
  }, 300_000);
});

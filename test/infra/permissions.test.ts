import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { scheduleMinutes } from '../../infra/constructs/pass-schedule.js';
import {
  eniNetworkPermissions,
  nodePoolPermissions,
  type PermissionSet,
} from '../../infra/constructs/permissions.js';

interface StatementJson {
  Sid?: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** A resolved value as text: `Fn::Join`s are joined, the partition read as `aws`. */
function flatten(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(flatten);
  if (typeof value !== 'object' || value === null) return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join) {
    return join[1]
      .map((part) => {
        if (typeof part === 'string') return part;
        if ((part as { Ref?: string }).Ref === 'AWS::Partition') return 'aws';
        return JSON.stringify(part);
      })
      .join(join[0]);
  }
  return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, flatten(member)]));
}

function statementsOf(stack: Stack, permissions: PermissionSet): StatementJson[] {
  return permissions.statements.map(
    (statement) => flatten(stack.resolve(statement.toStatementJson())) as StatementJson,
  );
}

const actionsOf = (statement: StatementJson) => [statement.Action].flat();
const resourcesOf = (statement: StatementJson) => [statement.Resource].flat().map(String);

function testStack(): Stack {
  return new Stack(new App(), 'Permissions', {
    env: { account: '111122223333', region: 'eu-west-1' },
  });
}

describe('eniNetworkPermissions', () => {
  const stack = testStack();
  const statements = statementsOf(stack, eniNetworkPermissions(stack, ['games']));
  const eniArn = 'arn:aws:ec2:eu-west-1:111122223333:network-interface/*';

  it('conditions every action on berth ENIs on the cluster tag', () => {
    const onEnis = statements.filter((statement) => resourcesOf(statement).includes(eniArn));
    expect(onEnis.length).toBeGreaterThan(0);
    for (const statement of onEnis) {
      const condition = JSON.stringify(statement.Condition ?? {});
      expect(condition).toMatch(
        /"aws:ResourceTag\/berth.dev\/cluster":"games"|"aws:RequestTag\/berth.dev\/cluster":"games"|"ec2:CreateAction":"CreateNetworkInterface"/,
      );
    }
  });

  it('creates ENIs only with the cluster tag in the request', () => {
    const create = statements.find(
      (statement) =>
        actionsOf(statement).includes('ec2:CreateNetworkInterface') &&
        resourcesOf(statement).includes(eniArn),
    );
    expect(create?.Condition).toEqual({
      StringEquals: { 'aws:RequestTag/berth.dev/cluster': 'games' },
    });
  });

  it('lets berth retag only its own ENIs, never with the cluster tag', () => {
    const retag = statements.find((statement) => statement.Sid === 'RetagOwnEni');
    expect(retag?.Condition).toEqual({
      StringEquals: { 'aws:ResourceTag/berth.dev/cluster': 'games' },
      'ForAllValues:StringEquals': {
        'aws:TagKeys': ['berth.dev/node', 'berth.dev/instance', 'berth.dev/created-at'],
      },
    });
  });

  it('grants every EC2 call of the Ec2Network adapter and nothing else', () => {
    const actions = new Set(statements.flatMap(actionsOf));
    expect([...actions].sort()).toEqual(
      [
        'ec2:AssignPrivateIpAddresses',
        'ec2:AttachNetworkInterface',
        'ec2:CreateNetworkInterface',
        'ec2:CreateTags',
        'ec2:DeleteNetworkInterface',
        'ec2:DescribeInstanceTypes',
        'ec2:DescribeInstances',
        'ec2:DescribeNetworkInterfaces',
        'ec2:DescribeSubnets',
        'ec2:DetachNetworkInterface',
        'ec2:ModifyNetworkInterfaceAttribute',
        'ec2:UnassignPrivateIpAddresses',
      ].sort(),
    );
  });

  it('uses the resource * for Describe calls only', () => {
    for (const statement of statements.filter((s) => resourcesOf(s).includes('*'))) {
      expect(actionsOf(statement).every((action) => action.startsWith('ec2:Describe'))).toBe(true);
    }
  });
});

describe('nodePoolPermissions', () => {
  it.each([{ type: 'none' as const }, { type: 'karpenter' as const, name: 'game-servers' }])(
    'grants no AWS scaling permission for a $type pool',
    (pool) => {
      const stack = testStack();
      expect(nodePoolPermissions(stack, 'games', pool)).toEqual({
        statements: [],
        acknowledgements: [],
      });
    },
  );

  it('scopes an Auto Scaling group pool to the named group', () => {
    const stack = testStack();
    const statements = statementsOf(
      stack,
      nodePoolPermissions(stack, 'games', { type: 'asg', name: 'game-asg' }),
    );
    const scale = statements.find((statement) =>
      actionsOf(statement).includes('autoscaling:SetDesiredCapacity'),
    );
    expect(actionsOf(scale ?? { Action: [], Resource: [] })).toEqual([
      'autoscaling:SetDesiredCapacity',
      'autoscaling:TerminateInstanceInAutoScalingGroup',
    ]);
    expect(scale?.Resource).toBe(
      'arn:aws:autoscaling:eu-west-1:111122223333:autoScalingGroup:*:autoScalingGroupName/game-asg',
    );
  });

  it('scopes an EKS node group pool to the node group and its tagged Auto Scaling groups', () => {
    const stack = testStack();
    const statements = statementsOf(
      stack,
      nodePoolPermissions(stack, 'games', { type: 'eks-nodegroup', name: 'game-nodes' }),
    );
    const nodegroup = statements.find((statement) =>
      actionsOf(statement).includes('eks:UpdateNodegroupConfig'),
    );
    expect(nodegroup?.Resource).toBe(
      'arn:aws:eks:eu-west-1:111122223333:nodegroup/games/game-nodes/*',
    );
    const terminate = statements.find((statement) =>
      actionsOf(statement).includes('autoscaling:TerminateInstanceInAutoScalingGroup'),
    );
    expect(terminate?.Condition).toEqual({
      StringEquals: {
        'autoscaling:ResourceTag/eks:cluster-name': 'games',
        'autoscaling:ResourceTag/eks:nodegroup-name': 'game-nodes',
      },
    });
    expect(statements.flatMap(actionsOf)).not.toContain('autoscaling:SetDesiredCapacity');
  });

  it('gives a reason for every finding it acknowledges', () => {
    const stack = testStack();
    for (const pool of [
      { type: 'asg' as const, name: 'a' },
      { type: 'eks-nodegroup' as const, name: 'n' },
    ]) {
      for (const acknowledgement of nodePoolPermissions(stack, 'games', pool).acknowledgements) {
        expect(acknowledgement.id).toMatch(/^AwsSolutions::AwsSolutions-IAM5\[Resource::.+\]$/);
        expect(acknowledgement.reason.length).toBeGreaterThan(30);
      }
    }
  });
});

describe('scheduleMinutes', () => {
  it('rounds an interval up to whole minutes, at least one', () => {
    expect([1, 59, 60, 61, 90, 180].map(scheduleMinutes)).toEqual([1, 1, 1, 2, 2, 3]);
  });
});

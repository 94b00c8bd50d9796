/** The fronts function's permissions as data, without synthesizing a stack. */
import { describe, expect, it } from 'vitest';
import {
  acceleratorOf,
  frontsPermissions,
  listenersOf,
  poolReadPermissions,
} from '../../infra/constructs/fronts-permissions.js';

const NLB_EU =
  'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/games-eu/0123456789abcdef';
const NLB_US =
  'arn:aws:elasticloadbalancing:us-east-1:111122223333:loadbalancer/net/games-us/fedcba9876543210';
const GROUP =
  'arn:aws:globalaccelerator::111122223333:accelerator/abcd-1234/listener/0123/endpoint-group/4567';

const json = (set: ReturnType<typeof frontsPermissions>) =>
  set.statements.map(
    (statement) => statement.toStatementJson() as { Sid: string; Resource: unknown },
  );

describe('frontsPermissions', () => {
  it('grants nothing without a front, and no load balancing without a pool', () => {
    expect(frontsPermissions({ loadBalancerArns: [], endpointGroupArns: [] })).toEqual({
      statements: [],
      acknowledgements: [],
    });
    const accelerator = frontsPermissions({ loadBalancerArns: [], endpointGroupArns: [GROUP] });
    expect(JSON.stringify(json(accelerator))).not.toContain('elasticloadbalancing');
  });

  it("scopes target groups to berth-* in each pool member's Region, and listeners to each member", () => {
    const set = frontsPermissions({ loadBalancerArns: [NLB_EU, NLB_US], endpointGroupArns: [] });
    const bySid = Object.fromEntries(json(set).map((statement) => [statement.Sid, statement]));
    expect(bySid.ManageBerthTargetGroups?.Resource).toEqual([
      'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/berth-*/*',
      'arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/berth-*/*',
    ]);
    expect(bySid.ManagePoolListeners?.Resource).toEqual([
      'arn:aws:elasticloadbalancing:eu-west-1:111122223333:listener/net/games-eu/0123456789abcdef/*',
      'arn:aws:elasticloadbalancing:us-east-1:111122223333:listener/net/games-us/fedcba9876543210/*',
    ]);
    // Each wildcard it grants is acknowledged with its own finding id.
    const ids = set.acknowledgements.map((ack) => ack.id);
    expect(ids).toEqual(
      expect.arrayContaining([
        `AwsSolutions::AwsSolutions-IAM5[Resource::${listenersOf(NLB_EU)}]`,
        `AwsSolutions::AwsSolutions-IAM5[Resource::${listenersOf(NLB_US)}]`,
        'AwsSolutions::AwsSolutions-IAM5[Resource::arn:aws:elasticloadbalancing:us-east-1:111122223333:targetgroup/berth-*/*]',
      ]),
    );
  });

  it('reads the accelerator of an endpoint group from its ARN', () => {
    expect(acceleratorOf(GROUP)).toBe(
      'arn:aws:globalaccelerator::111122223333:accelerator/abcd-1234',
    );
  });
});

describe('poolReadPermissions', () => {
  it('reads load balancers and listeners only', () => {
    const [statement] = poolReadPermissions().statements.map((s) => s.toStatementJson());
    expect(statement).toMatchObject({
      Action: [
        'elasticloadbalancing:DescribeLoadBalancers',
        'elasticloadbalancing:DescribeListeners',
      ],
      Resource: '*',
    });
  });
});

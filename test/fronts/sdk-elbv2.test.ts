/**
 * What moto cannot show of `SdkElbv2Api` (it pages neither listeners nor target groups, and
 * keeps no listener of a protocol berth does not use): pages handed on by NextMarker, listeners
 * and target groups berth did not make left out of its listings, and no call for no ARN.
 */
import {
  DescribeListenersCommand,
  DescribeTargetGroupsCommand,
  ElasticLoadBalancingV2Client,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { SdkElbv2Api } from '../../shared/fronts/sdk-elbv2.js';

const elbMock = mockClient(ElasticLoadBalancingV2Client);
const api = () => new SdkElbv2Api(new ElasticLoadBalancingV2Client({ region: 'eu-west-1' }));

const NLB = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/pool-a/1';
const TG = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/berth-1/1';

describe('SdkElbv2Api beyond moto', () => {
  beforeEach(() => {
    elbMock.reset();
  });
  // The worker's later files share this client class (isolate is off): give its send back.
  afterAll(() => {
    elbMock.restore();
  });

  it("hands a listing's NextMarker on, and answers no marker on the last page", async () => {
    elbMock
      .on(DescribeListenersCommand, { LoadBalancerArn: NLB })
      .resolvesOnce({
        Listeners: [
          {
            ListenerArn: `${NLB}/l1`,
            LoadBalancerArn: NLB,
            Port: 20_000,
            Protocol: 'UDP',
            DefaultActions: [{ Type: 'forward', TargetGroupArn: TG }],
          },
        ],
        NextMarker: 'm2',
      })
      .resolvesOnce({
        Listeners: [
          {
            ListenerArn: `${NLB}/l2`,
            LoadBalancerArn: NLB,
            Port: 20_001,
            Protocol: 'TCP',
            // The weighted form of a forward action names its group in ForwardConfig.
            DefaultActions: [
              { Type: 'forward', ForwardConfig: { TargetGroups: [{ TargetGroupArn: TG }] } },
            ],
          },
        ],
      });
    const first = await api().describeListeners(NLB);
    expect(first.nextMarker).toBe('m2');
    const second = await api().describeListeners(NLB, first.nextMarker);
    expect(second).toEqual({
      items: [
        {
          arn: `${NLB}/l2`,
          loadBalancerArn: NLB,
          port: 20_001,
          protocol: 'TCP',
          targetGroupArn: TG,
        },
      ],
    });
    expect(elbMock.commandCalls(DescribeListenersCommand).map((c) => c.args[0].input)).toEqual([
      { LoadBalancerArn: NLB, PageSize: 400 },
      { LoadBalancerArn: NLB, PageSize: 400, Marker: 'm2' },
    ]);
  });

  it('asks nothing for no ARN, where ELBv2 would list every load balancer of the account', async () => {
    expect(await api().describeLoadBalancers([])).toEqual([]);
    expect((await api().describeTags([])).size).toBe(0);
    expect(elbMock.calls()).toHaveLength(0);
  });

  it('leaves out listeners and target groups of protocols berth never makes', async () => {
    elbMock.on(DescribeListenersCommand).resolves({
      Listeners: [
        {
          ListenerArn: `${NLB}/tls`,
          LoadBalancerArn: NLB,
          Port: 443,
          Protocol: 'TLS',
          DefaultActions: [{ Type: 'forward', TargetGroupArn: TG }],
        },
      ],
    });
    elbMock.on(DescribeTargetGroupsCommand).resolves({
      TargetGroups: [
        { TargetGroupArn: TG, TargetGroupName: 'web', Protocol: 'HTTP', Port: 80, VpcId: 'vpc-1' },
        {
          TargetGroupArn: `${TG}x`,
          TargetGroupName: 'berth-1',
          Protocol: 'UDP',
          Port: 7777,
          VpcId: 'vpc-1',
          LoadBalancerArns: [NLB],
        },
      ],
      NextMarker: 'm2',
    });
    expect((await api().describeListeners(NLB)).items).toEqual([]);
    expect(await api().describeTargetGroups({})).toEqual({
      items: [
        {
          arn: `${TG}x`,
          name: 'berth-1',
          protocol: 'UDP',
          port: 7777,
          vpcId: 'vpc-1',
          loadBalancerArns: [NLB],
        },
      ],
      nextMarker: 'm2',
    });
  });
});

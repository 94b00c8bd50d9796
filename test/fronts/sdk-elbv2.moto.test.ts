/**
 * What only `SdkElbv2Api` promises, checked on the requests moto's ELBv2 receives: one SDK
 * attempt, target groups of type ip, forward actions, and pages of 400 from a marker (moto pages
 * only load balancers). The results and refusals it shares with the fake ELBv2 are
 * `test/contracts/elbv2.contract.ts`, run over moto too.
 */
import { CreateSubnetCommand, CreateVpcCommand, EC2Client } from '@aws-sdk/client-ec2';
import {
  CreateLoadBalancerCommand,
  DescribeTargetGroupsCommand,
  ElasticLoadBalancingV2Client,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { elbv2Client, SdkElbv2Api } from '../../shared/fronts/sdk-elbv2.js';
import { type MotoServer, startMoto, unmocked } from '../support/moto-server.js';

let moto: MotoServer;
let client: ElasticLoadBalancingV2Client;
let api: SdkElbv2Api;
/** The form bodies of every ELBv2 request sent, in order. */
const sent: string[] = [];
let vpcId: string;
let nlbArn: string;

/** Creates what berth is given, not what it makes: a VPC with a subnet, and an NLB in it. */
async function givenNetworkLoadBalancer(name: string): Promise<string> {
  const out = await client.send(
    new CreateLoadBalancerCommand({
      Name: name,
      Type: 'network',
      Scheme: 'internet-facing',
      Subnets: [subnetId],
    }),
  );
  const arn = out.LoadBalancers?.[0]?.LoadBalancerArn;
  if (!arn) throw new Error('moto created no load balancer');
  return arn;
}
let subnetId: string;

beforeAll(async () => {
  unmocked(EC2Client, ElasticLoadBalancingV2Client);
  moto = await startMoto();
  const ec2 = new EC2Client(moto.clientConfig);
  const vpc = await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }));
  vpcId = vpc.Vpc?.VpcId ?? '';
  const subnet = await ec2.send(
    new CreateSubnetCommand({
      VpcId: vpcId,
      CidrBlock: '10.0.1.0/24',
      AvailabilityZone: 'us-east-1a',
    }),
  );
  subnetId = subnet.Subnet?.SubnetId ?? '';
  client = new ElasticLoadBalancingV2Client({ ...moto.clientConfig, maxAttempts: 1 });
  client.middlewareStack.add(
    (next) => async (args) => {
      const body = (args.request as { body?: unknown }).body;
      if (typeof body === 'string') sent.push(body);
      return next(args);
    },
    { step: 'finalizeRequest', name: 'recordBody' },
  );
  api = new SdkElbv2Api(client);
  nlbArn = await givenNetworkLoadBalancer('pool-a');
});

afterAll(async () => {
  await moto?.stop();
});

/** The last request of an action, decoded. */
function lastRequest(action: string): URLSearchParams {
  const body = [...sent].reverse().find((b) => new URLSearchParams(b).get('Action') === action);
  if (!body) throw new Error(`no ${action} was sent`);
  return new URLSearchParams(body);
}

describe('SdkElbv2Api over moto', () => {
  it('builds a client with one SDK attempt, leaving retries to the budget', async () => {
    expect(await elbv2Client('us-east-1').config.maxAttempts()).toBe(1);
  });

  it('makes target groups of type ip and listeners that forward to them', async () => {
    const group = await api.createTargetGroup({
      name: 'berth-7f3a9c2e41',
      protocol: 'UDP',
      port: 7777,
      vpcId,
      healthCheck: { protocol: 'HTTP', port: 10256, path: '/healthz' },
      tags: [],
    });
    // The target is the pod's node address and host port: a target group of type ip.
    const [sdkGroup] =
      (await client.send(new DescribeTargetGroupsCommand({ TargetGroupArns: [group.arn] })))
        .TargetGroups ?? [];
    expect(sdkGroup?.TargetType).toBe('ip');
    // A UDP game port answers no check: the group checks the node's health port instead.
    expect(sdkGroup).toMatchObject({
      HealthCheckProtocol: 'HTTP',
      HealthCheckPort: '10256',
      HealthCheckPath: '/healthz',
    });
    expect(group.healthCheck).toEqual({ protocol: 'HTTP', port: 10256, path: '/healthz' });
    const listener = await api.createListener({
      loadBalancerArn: nlbArn,
      port: 20_000,
      protocol: 'UDP',
      targetGroupArn: group.arn,
      tags: [],
    });
    expect(lastRequest('CreateListener').get('DefaultActions.member.1.Type')).toBe('forward');
    await api.deleteListener(listener.arn);
    await api.deleteTargetGroup(group.arn);
  });

  it('lists every target group of the account, and asks for pages of 400 from a marker', async () => {
    await api.describeTargetGroups({});
    expect(lastRequest('DescribeTargetGroups').get('PageSize')).toBe('400');
    expect(lastRequest('DescribeTargetGroups').has('Names.member.1')).toBe(false);
    await api.describeTargetGroups({}, 'page-2');
    expect(lastRequest('DescribeTargetGroups').get('Marker')).toBe('page-2');
    await api.describeListeners(nlbArn, 'page-3');
    expect(lastRequest('DescribeListeners').get('Marker')).toBe('page-3');
    expect(lastRequest('DescribeListeners').get('PageSize')).toBe('400');
  });
});

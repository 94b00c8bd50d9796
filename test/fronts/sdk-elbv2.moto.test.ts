/**
 * `SdkElbv2Api` against moto's ELBv2 through the real SDK client: every call berth makes, on the
 * wire and back, with the errors the SDK raises classified as berth classifies them. moto keeps
 * no 50-listener limit, answers a repeated create with a duplicate instead of the existing
 * resource, and pages only load balancers: those behaviours are the fakes' to model, and the
 * listing pages are checked on the request moto receives.
 */
import { CreateSubnetCommand, CreateVpcCommand, EC2Client } from '@aws-sdk/client-ec2';
import {
  CreateLoadBalancerCommand,
  DescribeTargetGroupsCommand,
  ElasticLoadBalancingV2Client,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isDuplicateTargetGroupName,
  isNotFound,
  isResourceInUse,
} from '../../shared/aws/error-codes.js';
import { elbv2Client, SdkElbv2Api } from '../../shared/fronts/sdk-elbv2.js';
import { type MotoServer, startMoto, unmocked } from '../support/moto-server.js';

const BERTH_TAG = { key: 'berth.dev/cluster', value: 'games' };

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

  it("describes the pool's load balancers, and fails LoadBalancerNotFound for a gone one", async () => {
    const [nlb] = await api.describeLoadBalancers([nlbArn]);
    expect(nlb).toMatchObject({ arn: nlbArn, vpcId, state: 'active' });
    expect(nlb?.dnsName).toMatch(/^pool-a-.*\.elb\.amazonaws\.com$/);
    const failure = await api.describeLoadBalancers([`${nlbArn}0`]).catch((e: unknown) => e);
    expect(isNotFound(failure)).toBe(true);
  });

  it('makes a game port its front, end to end, and takes it down again', async () => {
    const group = await api.createTargetGroup({
      name: 'berth-7f3a9c2e41',
      protocol: 'UDP',
      port: 7777,
      vpcId,
      tags: [BERTH_TAG],
    });
    expect(group).toMatchObject({
      name: 'berth-7f3a9c2e41',
      protocol: 'UDP',
      port: 7777,
      vpcId,
      loadBalancerArns: [],
    });
    // The target is the pod's node address and host port: a target group of type ip.
    const [sdkGroup] =
      (await client.send(new DescribeTargetGroupsCommand({ TargetGroupArns: [group.arn] })))
        .TargetGroups ?? [];
    expect(sdkGroup?.TargetType).toBe('ip');

    await api.registerTargets(group.arn, [{ ip: '10.0.1.17', port: 7777 }]);
    expect(await api.describeTargets(group.arn)).toEqual([{ ip: '10.0.1.17', port: 7777 }]);

    const listener = await api.createListener({
      loadBalancerArn: nlbArn,
      port: 20_000,
      protocol: 'UDP',
      targetGroupArn: group.arn,
      tags: [BERTH_TAG],
    });
    expect(listener).toEqual({
      arn: expect.stringContaining(':listener/'),
      loadBalancerArn: nlbArn,
      port: 20_000,
      protocol: 'UDP',
      targetGroupArn: group.arn,
    });
    expect(lastRequest('CreateListener').get('DefaultActions.member.1.Type')).toBe('forward');

    expect((await api.describeListeners(nlbArn)).items).toContainEqual(listener);
    const { items: named } = await api.describeTargetGroups({ names: [group.name] });
    expect(named).toEqual([{ ...group, loadBalancerArns: [nlbArn] }]);
    const tags = await api.describeTags([listener.arn, group.arn]);
    expect(tags.get(listener.arn)).toEqual([BERTH_TAG]);
    expect(tags.get(group.arn)).toEqual([BERTH_TAG]);

    // The release order: the listener first, for ELBv2 keeps a group a listener forwards to.
    const inUse = await api.deleteTargetGroup(group.arn).catch((e: unknown) => e);
    expect(isResourceInUse(inUse)).toBe(true);
    await api.deleteListener(listener.arn);
    expect(isNotFound(await api.deleteListener(listener.arn).catch((e: unknown) => e))).toBe(true);
    expect((await api.describeListeners(nlbArn)).items).not.toContainEqual(listener);
    await api.deregisterTargets(group.arn, [{ ip: '10.0.1.17', port: 7777 }]);
    expect(await api.describeTargets(group.arn)).toEqual([]);
    await api.deleteTargetGroup(group.arn);
    const gone = await api.deleteTargetGroup(group.arn).catch((e: unknown) => e);
    expect(isNotFound(gone)).toBe(true);
    const unnamed = await api
      .describeTargetGroups({ names: [group.name] })
      .catch((e: unknown) => e);
    expect(isNotFound(unnamed)).toBe(true);
  });

  it('carries TCP_UDP through a target group and a listener', async () => {
    const group = await api.createTargetGroup({
      name: 'berth-both',
      protocol: 'TCP_UDP',
      port: 7778,
      vpcId,
      tags: [],
    });
    const listener = await api.createListener({
      loadBalancerArn: nlbArn,
      port: 20_001,
      protocol: 'TCP_UDP',
      targetGroupArn: group.arn,
      tags: [],
    });
    expect([group.protocol, listener.protocol]).toEqual(['TCP_UDP', 'TCP_UDP']);
    await api.deleteListener(listener.arn);
    await api.deleteTargetGroup(group.arn);
  });

  it('raises the SDK error of a name taken with other settings, classified', async () => {
    await api.createTargetGroup({ name: 'berth-taken', protocol: 'UDP', port: 1, vpcId, tags: [] });
    const failure = await api
      .createTargetGroup({ name: 'berth-taken', protocol: 'TCP', port: 2, vpcId, tags: [] })
      .catch((e: unknown) => e);
    expect(isDuplicateTargetGroupName(failure)).toBe(true);
  });

  it('lists every target group of the account, and asks for pages of 400 from a marker', async () => {
    const { items } = await api.describeTargetGroups({});
    expect(items.map((g) => g.name)).toContain('berth-taken');
    expect(lastRequest('DescribeTargetGroups').get('PageSize')).toBe('400');
    expect(lastRequest('DescribeTargetGroups').has('Names.member.1')).toBe(false);
    await api.describeTargetGroups({}, 'page-2');
    expect(lastRequest('DescribeTargetGroups').get('Marker')).toBe('page-2');
    await api.describeListeners(nlbArn, 'page-3');
    expect(lastRequest('DescribeListeners').get('Marker')).toBe('page-3');
    expect(lastRequest('DescribeListeners').get('PageSize')).toBe('400');
  });
});

/** The fake ELBv2 and `SdkElbv2Api` over moto's ELBv2 (through the real SDK client), held to one contract. */
import { CreateSubnetCommand, CreateVpcCommand, EC2Client } from '@aws-sdk/client-ec2';
import {
  CreateLoadBalancerCommand,
  ElasticLoadBalancingV2Client,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { SdkElbv2Api } from '../../shared/fronts/sdk-elbv2.js';
import { FakeElbv2 } from '../../sim/fakes/elbv2.js';
import { startMoto, unmocked } from '../support/moto-server.js';
import { elbv2Contract } from './elbv2.contract.js';

/** Buckets no contract case drains: throttling is the fake's to model, not the contract's. */
const UNMETERED = { capacity: 1_000_000, refillPerSecond: 1_000_000 };

elbv2Contract('FakeElbv2', async () => {
  const api = new FakeElbv2({
    now: () => Date.now(),
    buckets: { describe: UNMETERED, registration: UNMETERED, mutating: UNMETERED },
  });
  api.addVpc('vpc-1', '10.0.0.0/16');
  const { arn } = api.addLoadBalancer({ name: 'pool-a', vpcId: 'vpc-1' });
  return { api, vpcId: 'vpc-1', nlbArn: arn, stop: async () => {} };
});

elbv2Contract('SdkElbv2Api over moto', async () => {
  unmocked(EC2Client, ElasticLoadBalancingV2Client);
  const moto = await startMoto();
  const ec2 = new EC2Client(moto.clientConfig);
  const vpc = await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }));
  const vpcId = vpc.Vpc?.VpcId ?? '';
  const subnet = await ec2.send(
    new CreateSubnetCommand({
      VpcId: vpcId,
      CidrBlock: '10.0.1.0/24',
      AvailabilityZone: 'us-east-1a',
    }),
  );
  const client = new ElasticLoadBalancingV2Client({ ...moto.clientConfig, maxAttempts: 1 });
  const created = await client.send(
    new CreateLoadBalancerCommand({
      Name: 'pool-a',
      Type: 'network',
      Scheme: 'internet-facing',
      Subnets: [subnet.Subnet?.SubnetId ?? ''],
    }),
  );
  const nlbArn = created.LoadBalancers?.[0]?.LoadBalancerArn;
  if (!nlbArn) throw new Error('moto created no load balancer');
  return {
    api: new SdkElbv2Api(client),
    vpcId,
    nlbArn,
    stop: async () => {
      client.destroy();
      ec2.destroy();
      await moto.stop();
    },
  };
});

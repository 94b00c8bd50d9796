/** The fake EC2 and `SdkEc2Network` over moto's EC2 (through the real SDK client), held to one contract. */
import {
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import { SdkEc2Network } from '../../shared/ec2/sdk-ec2-network.js';
import { EC2_DEFAULT_BUCKETS, FakeEc2 } from '../../sim/fakes/ec2.js';
import { startMoto, unmocked } from '../support/moto-server.js';
import { ec2NetworkContract, SUBNET_CIDR } from './ec2-network.contract.js';

ec2NetworkContract('FakeEc2', async () => {
  // Buckets no contract case drains: throttling is the fake's to model, not the contract's.
  const buckets = Object.fromEntries(
    Object.keys(EC2_DEFAULT_BUCKETS).map((action) => [
      action,
      { capacity: 1_000_000, refillPerSecond: 1_000_000 },
    ]),
  );
  const api = new FakeEc2({ now: () => Date.now(), buckets });
  api.addSubnet('subnet-1', SUBNET_CIDR, 'us-east-1a');
  return { api, subnetId: 'subnet-1', securityGroupId: 'sg-1', stop: async () => {} };
});

ec2NetworkContract('SdkEc2Network over moto', async () => {
  unmocked(EC2Client);
  const moto = await startMoto();
  const client = new EC2Client({ ...moto.clientConfig, maxAttempts: 1 });
  const vpc = await client.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }));
  const vpcId = vpc.Vpc?.VpcId ?? '';
  const subnet = await client.send(
    new CreateSubnetCommand({
      VpcId: vpcId,
      CidrBlock: SUBNET_CIDR,
      AvailabilityZone: 'us-east-1a',
    }),
  );
  const group = await client.send(
    new CreateSecurityGroupCommand({ GroupName: 'game', Description: 'game', VpcId: vpcId }),
  );
  return {
    api: new SdkEc2Network(client),
    subnetId: subnet.Subnet?.SubnetId ?? '',
    securityGroupId: group.GroupId ?? '',
    stop: async () => {
      client.destroy();
      await moto.stop();
    },
  };
});

import {
  AssignPrivateIpAddressesCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  CreateTagsCommand,
  DeleteNetworkInterfaceCommand,
  DescribeInstancesCommand,
  DescribeInstanceTypesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  DetachNetworkInterfaceCommand,
  EC2Client,
  ModifyNetworkInterfaceAttributeCommand,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { isNotFound } from '../../shared/aws/error-codes.js';
import { allNetworkInterfaces } from '../../shared/ec2/network.js';
import { ec2Client, SdkEc2Network } from '../../shared/ec2/sdk-ec2-network.js';

const ec2Mock = mockClient(EC2Client);
const network = () => new SdkEc2Network(new EC2Client({ region: 'us-east-1' }));

const sdkEni = {
  NetworkInterfaceId: 'eni-1',
  SubnetId: 'subnet-1',
  Status: 'in-use' as const,
  PrivateIpAddress: '10.0.0.5',
  MacAddress: '0a:1b:2c:3d:4e:5f',
  PrivateIpAddresses: [
    { PrivateIpAddress: '10.0.0.5', Primary: true },
    { PrivateIpAddress: '10.0.0.6', Primary: false },
    { PrivateIpAddress: '10.0.0.7', Primary: false },
  ],
  Ipv4Prefixes: [{ Ipv4Prefix: '10.0.0.32/28' }],
  Attachment: {
    AttachmentId: 'eni-attach-1',
    InstanceId: 'i-1',
    DeviceIndex: 1,
    Status: 'attached' as const,
    DeleteOnTermination: true,
  },
  TagSet: [{ Key: 'berth.dev/cluster', Value: 'c' }],
  Groups: [{ GroupId: 'sg-1' }],
};

describe('SdkEc2Network', () => {
  beforeEach(() => {
    ec2Mock.reset();
  });

  it('builds a client with one SDK attempt, leaving retries to the budget', async () => {
    expect(await ec2Client('us-east-1').config.maxAttempts()).toBe(1);
  });

  it('describes instances by filter, page by page, with their attached ENIs and addresses', async () => {
    ec2Mock
      .on(DescribeInstancesCommand)
      .resolvesOnce({
        Reservations: [
          {
            Instances: [
              {
                InstanceId: 'i-1',
                InstanceType: 'c5.large',
                State: { Name: 'running' },
                SubnetId: 'subnet-1',
                Placement: { AvailabilityZone: 'us-east-1a' },
                SecurityGroups: [{ GroupId: 'sg-1' }],
                NetworkInterfaces: [
                  {
                    NetworkInterfaceId: 'eni-0',
                    SubnetId: 'subnet-1',
                    MacAddress: '0a:00:00:00:00:01',
                    PrivateIpAddress: '10.0.0.4',
                    PrivateIpAddresses: [
                      { PrivateIpAddress: '10.0.0.4', Primary: true },
                      { PrivateIpAddress: '10.0.0.9', Primary: false },
                    ],
                    Ipv4Prefixes: [{ Ipv4Prefix: '10.0.0.16/28' }],
                    Attachment: { AttachmentId: 'eni-attach-0', DeviceIndex: 0 },
                  },
                  {
                    NetworkInterfaceId: 'eni-1',
                    SubnetId: 'subnet-1',
                    MacAddress: '0a:00:00:00:00:02',
                    PrivateIpAddresses: [{ PrivateIpAddress: '10.0.0.5', Primary: true }],
                    Attachment: { AttachmentId: 'eni-attach-1', DeviceIndex: 1 },
                  },
                ],
              },
            ],
          },
        ],
        NextToken: 'more',
      })
      .resolvesOnce({ Reservations: [] });
    const instances = await network().describeInstances(['i-1', 'i-gone']);
    expect(instances).toEqual([
      {
        instanceId: 'i-1',
        instanceType: 'c5.large',
        state: 'running',
        subnetId: 'subnet-1',
        availabilityZone: 'us-east-1a',
        securityGroupIds: ['sg-1'],
        networkInterfaces: [
          {
            eniId: 'eni-0',
            deviceIndex: 0,
            attachmentId: 'eni-attach-0',
            subnetId: 'subnet-1',
            primaryIp: '10.0.0.4',
            macAddress: '0a:00:00:00:00:01',
            secondaryIps: ['10.0.0.9'],
            ipv4Prefixes: ['10.0.0.16/28'],
          },
          {
            eniId: 'eni-1',
            deviceIndex: 1,
            attachmentId: 'eni-attach-1',
            subnetId: 'subnet-1',
            primaryIp: '10.0.0.5',
            macAddress: '0a:00:00:00:00:02',
            secondaryIps: [],
            ipv4Prefixes: [],
          },
        ],
      },
    ]);
    const calls = ec2Mock.commandCalls(DescribeInstancesCommand);
    expect(calls[0]?.args[0].input).toEqual({
      Filters: [{ Name: 'instance-id', Values: ['i-1', 'i-gone'] }],
      MaxResults: 1000,
      NextToken: undefined,
    });
    expect(calls[1]?.args[0].input.NextToken).toBe('more');
  });

  it('leaves out an attached ENI whose device index DescribeInstances does not give, rather than read it as the primary', async () => {
    ec2Mock.on(DescribeInstancesCommand).resolves({
      Reservations: [
        {
          Instances: [
            {
              InstanceId: 'i-1',
              State: { Name: 'running' },
              NetworkInterfaces: [{ NetworkInterfaceId: 'eni-x', Attachment: {} }],
            },
          ],
        },
      ],
    });
    const [instance] = await network().describeInstances(['i-1']);
    expect(instance?.networkInterfaces).toEqual([]);
  });

  it('reads ENI and IPv4 limits from DescribeInstanceTypes, and prefix delegation from Nitro', async () => {
    ec2Mock.on(DescribeInstanceTypesCommand).resolves({
      InstanceTypes: [
        {
          InstanceType: 'm5.xlarge',
          Hypervisor: 'nitro',
          NetworkInfo: { MaximumNetworkInterfaces: 4, Ipv4AddressesPerInterface: 15 },
        },
        {
          InstanceType: 'c4.large',
          Hypervisor: 'xen',
          NetworkInfo: { MaximumNetworkInterfaces: 3, Ipv4AddressesPerInterface: 10 },
        },
      ],
    });
    expect(await network().describeInstanceTypes(['m5.xlarge', 'c4.large'])).toEqual([
      {
        instanceType: 'm5.xlarge',
        maxNetworkInterfaces: 4,
        ipv4PerInterface: 15,
        prefixDelegation: true,
      },
      {
        instanceType: 'c4.large',
        maxNetworkInterfaces: 3,
        ipv4PerInterface: 10,
        prefixDelegation: false,
      },
    ]);
    expect(ec2Mock.commandCalls(DescribeInstanceTypesCommand)[0]?.args[0].input).toEqual({
      InstanceTypes: ['m5.xlarge', 'c4.large'],
    });
  });

  it('describes subnets with their CIDR and free address count', async () => {
    ec2Mock.on(DescribeSubnetsCommand).resolves({
      Subnets: [
        {
          SubnetId: 'subnet-1',
          CidrBlock: '10.0.0.0/24',
          AvailabilityZone: 'us-east-1a',
          AvailableIpAddressCount: 200,
        },
      ],
    });
    expect(await network().describeSubnets(['subnet-1'])).toEqual([
      {
        subnetId: 'subnet-1',
        cidr: '10.0.0.0/24',
        availabilityZone: 'us-east-1a',
        availableIpCount: 200,
      },
    ]);
  });

  it('sends filters and pagination on DescribeNetworkInterfaces and maps secondaries', async () => {
    ec2Mock
      .on(DescribeNetworkInterfacesCommand)
      .resolvesOnce({ NetworkInterfaces: [sdkEni], NextToken: 'p2' })
      .resolvesOnce({
        NetworkInterfaces: [
          { ...sdkEni, NetworkInterfaceId: 'eni-2', Attachment: undefined, Status: 'available' },
        ],
      });
    const seen = [];
    for await (const eni of allNetworkInterfaces(network(), {
      filters: { 'tag:berth.dev/cluster': ['c'] },
    })) {
      seen.push(eni);
    }
    expect(seen[0]).toEqual({
      eniId: 'eni-1',
      subnetId: 'subnet-1',
      status: 'in-use',
      primaryIp: '10.0.0.5',
      macAddress: '0a:1b:2c:3d:4e:5f',
      secondaryIps: ['10.0.0.6', '10.0.0.7'],
      ipv4Prefixes: ['10.0.0.32/28'],
      attachment: {
        attachmentId: 'eni-attach-1',
        instanceId: 'i-1',
        deviceIndex: 1,
        status: 'attached',
        deleteOnTermination: true,
      },
      tags: [{ key: 'berth.dev/cluster', value: 'c' }],
      securityGroupIds: ['sg-1'],
    });
    expect(seen[1]).toMatchObject({ eniId: 'eni-2', status: 'available' });
    expect(seen[1]?.attachment).toBeUndefined();
    const calls = ec2Mock.commandCalls(DescribeNetworkInterfacesCommand);
    expect(calls.map((c) => c.args[0].input)).toEqual([
      {
        Filters: [{ Name: 'tag:berth.dev/cluster', Values: ['c'] }],
        MaxResults: 1000,
        NextToken: undefined,
      },
      {
        Filters: [{ Name: 'tag:berth.dev/cluster', Values: ['c'] }],
        MaxResults: 1000,
        NextToken: 'p2',
      },
    ]);
  });

  it('creates an ENI with its ClientToken, tags at creation and secondary count', async () => {
    ec2Mock.on(CreateNetworkInterfaceCommand).resolves({
      NetworkInterface: { ...sdkEni, Status: 'available', Attachment: undefined },
    });
    const eni = await network().createNetworkInterface({
      subnetId: 'subnet-1',
      securityGroupIds: ['sg-1'],
      secondaryIpCount: 2,
      description: 'berth c node-a',
      tags: [{ key: 'berth.dev/node', value: 'node-a' }],
      clientToken: 'berth-token',
    });
    expect(eni.secondaryIps).toEqual(['10.0.0.6', '10.0.0.7']);
    expect(ec2Mock.commandCalls(CreateNetworkInterfaceCommand)[0]?.args[0].input).toEqual({
      SubnetId: 'subnet-1',
      Groups: ['sg-1'],
      Description: 'berth c node-a',
      SecondaryPrivateIpAddressCount: 2,
      TagSpecifications: [
        { ResourceType: 'network-interface', Tags: [{ Key: 'berth.dev/node', Value: 'node-a' }] },
      ],
      ClientToken: 'berth-token',
    });
  });

  it('attaches, sets DeleteOnTermination, assigns and unassigns with the SDK shapes', async () => {
    ec2Mock.on(AttachNetworkInterfaceCommand).resolves({ AttachmentId: 'eni-attach-9' });
    ec2Mock.on(ModifyNetworkInterfaceAttributeCommand).resolves({});
    ec2Mock.on(AssignPrivateIpAddressesCommand).resolves({
      AssignedPrivateIpAddresses: [
        { PrivateIpAddress: '10.0.0.8' },
        { PrivateIpAddress: '10.0.0.9' },
      ],
    });
    ec2Mock.on(UnassignPrivateIpAddressesCommand).resolves({});
    const ec2 = network();
    expect(
      await ec2.attachNetworkInterface({ eniId: 'eni-1', instanceId: 'i-1', deviceIndex: 2 }),
    ).toEqual({
      attachmentId: 'eni-attach-9',
    });
    await ec2.setDeleteOnTermination({ eniId: 'eni-1', attachmentId: 'eni-attach-9' });
    expect(await ec2.assignPrivateIpAddresses({ eniId: 'eni-1', count: 2 })).toEqual([
      '10.0.0.8',
      '10.0.0.9',
    ]);
    await ec2.unassignPrivateIpAddresses({ eniId: 'eni-1', ips: ['10.0.0.8'] });
    expect(ec2Mock.commandCalls(AttachNetworkInterfaceCommand)[0]?.args[0].input).toEqual({
      NetworkInterfaceId: 'eni-1',
      InstanceId: 'i-1',
      DeviceIndex: 2,
    });
    expect(ec2Mock.commandCalls(ModifyNetworkInterfaceAttributeCommand)[0]?.args[0].input).toEqual({
      NetworkInterfaceId: 'eni-1',
      Attachment: { AttachmentId: 'eni-attach-9', DeleteOnTermination: true },
    });
    expect(ec2Mock.commandCalls(AssignPrivateIpAddressesCommand)[0]?.args[0].input).toEqual({
      NetworkInterfaceId: 'eni-1',
      SecondaryPrivateIpAddressCount: 2,
    });
    expect(ec2Mock.commandCalls(UnassignPrivateIpAddressesCommand)[0]?.args[0].input).toEqual({
      NetworkInterfaceId: 'eni-1',
      PrivateIpAddresses: ['10.0.0.8'],
    });
  });

  it('delegates and gives back /28 prefixes through the address calls', async () => {
    ec2Mock.on(AssignPrivateIpAddressesCommand).resolves({
      AssignedIpv4Prefixes: [{ Ipv4Prefix: '10.0.0.48/28' }, { Ipv4Prefix: '10.0.0.64/28' }],
    });
    ec2Mock.on(UnassignPrivateIpAddressesCommand).resolves({});
    ec2Mock.on(CreateNetworkInterfaceCommand).resolves({ NetworkInterface: sdkEni });
    const ec2 = network();
    expect(await ec2.assignIpv4Prefixes({ eniId: 'eni-1', count: 2 })).toEqual([
      '10.0.0.48/28',
      '10.0.0.64/28',
    ]);
    await ec2.unassignIpv4Prefixes({ eniId: 'eni-1', prefixes: ['10.0.0.48/28'] });
    await ec2.createNetworkInterface({
      subnetId: 'subnet-1',
      securityGroupIds: ['sg-1'],
      secondaryIpCount: 0,
      ipv4PrefixCount: 1,
      description: 'berth c node-a',
      tags: [],
      clientToken: 'berth-token',
    });
    expect(ec2Mock.commandCalls(AssignPrivateIpAddressesCommand)[0]?.args[0].input).toEqual({
      NetworkInterfaceId: 'eni-1',
      Ipv4PrefixCount: 2,
    });
    expect(ec2Mock.commandCalls(UnassignPrivateIpAddressesCommand)[0]?.args[0].input).toEqual({
      NetworkInterfaceId: 'eni-1',
      Ipv4Prefixes: ['10.0.0.48/28'],
    });
    const create = ec2Mock.commandCalls(CreateNetworkInterfaceCommand)[0]?.args[0].input;
    expect(create?.Ipv4PrefixCount).toBe(1);
    expect(create?.SecondaryPrivateIpAddressCount).toBeUndefined();
  });

  it('detaches, deletes and tags', async () => {
    ec2Mock.on(DetachNetworkInterfaceCommand).resolves({});
    ec2Mock.on(DeleteNetworkInterfaceCommand).resolves({});
    ec2Mock.on(CreateTagsCommand).resolves({});
    const ec2 = network();
    await ec2.detachNetworkInterface({ attachmentId: 'eni-attach-1' });
    await ec2.deleteNetworkInterface({ eniId: 'eni-1' });
    await ec2.createTags({ resourceIds: ['eni-1'], tags: [{ key: 'k', value: 'v' }] });
    expect(ec2Mock.commandCalls(DetachNetworkInterfaceCommand)[0]?.args[0].input).toEqual({
      AttachmentId: 'eni-attach-1',
    });
    expect(ec2Mock.commandCalls(DeleteNetworkInterfaceCommand)[0]?.args[0].input).toEqual({
      NetworkInterfaceId: 'eni-1',
    });
    expect(ec2Mock.commandCalls(CreateTagsCommand)[0]?.args[0].input).toEqual({
      Resources: ['eni-1'],
      Tags: [{ Key: 'k', Value: 'v' }],
    });
  });

  it('passes EC2 errors through for classification', async () => {
    const error = Object.assign(new Error('gone'), { name: 'InvalidNetworkInterfaceID.NotFound' });
    ec2Mock.on(DeleteNetworkInterfaceCommand).rejects(error);
    const failure = await network()
      .deleteNetworkInterface({ eniId: 'eni-x' })
      .catch((e: unknown) => e);
    expect(isNotFound(failure)).toBe(true);
  });
});

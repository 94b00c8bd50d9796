/**
 * `SdkCustomRoutingApi` against a mocked SDK client (moto has no custom routing): the exact
 * commands and inputs berth sends, and how the answers map to berth's shapes, pages included.
 */
import {
  AllowCustomRoutingTrafficCommand,
  DenyCustomRoutingTrafficCommand,
  DescribeCustomRoutingAcceleratorCommand,
  DescribeCustomRoutingEndpointGroupCommand,
  GlobalAcceleratorClient,
  ListCustomRoutingPortMappingsByDestinationCommand,
  ListCustomRoutingPortMappingsCommand,
} from '@aws-sdk/client-global-accelerator';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { isNotFound, isTransient } from '../../shared/aws/error-codes.js';
import { MAX_MAPPINGS_PER_PAGE } from '../../shared/fronts/accelerator.js';
import {
  ACCELERATOR_API_REGION,
  acceleratorClient,
  SdkCustomRoutingApi,
} from '../../shared/fronts/sdk-accelerator.js';

const gaMock = mockClient(GlobalAcceleratorClient);
const api = () => new SdkCustomRoutingApi(new GlobalAcceleratorClient({ region: 'us-west-2' }));

const ACCELERATOR = 'arn:aws:globalaccelerator::111122223333:accelerator/a1';
const GROUP = `${ACCELERATOR}/listener/l1/endpoint-group/g1`;

describe('SdkCustomRoutingApi', () => {
  beforeEach(() => {
    gaMock.reset();
  });
  // The worker's later files share this client class (isolate is off): give its send back.
  afterAll(() => {
    gaMock.restore();
  });

  it('builds its client in us-west-2, where the API is served, with one SDK attempt', async () => {
    const client = acceleratorClient();
    expect(ACCELERATOR_API_REGION).toBe('us-west-2');
    expect(await client.config.region()).toBe('us-west-2');
    expect(await client.config.maxAttempts()).toBe(1);
  });

  it('describes the accelerator: every static address, its DNS name, its deployment', async () => {
    gaMock.on(DescribeCustomRoutingAcceleratorCommand, { AcceleratorArn: ACCELERATOR }).resolves({
      Accelerator: {
        AcceleratorArn: ACCELERATOR,
        IpSets: [{ IpFamily: 'IPv4', IpAddresses: ['198.51.100.1', '198.51.100.2'] }],
        DnsName: 'a0123456789abcdef.awsglobalaccelerator.com',
        Status: 'IN_PROGRESS',
      },
    });
    expect(await api().describeAccelerator(ACCELERATOR)).toEqual({
      arn: ACCELERATOR,
      ipAddresses: ['198.51.100.1', '198.51.100.2'],
      dnsName: 'a0123456789abcdef.awsglobalaccelerator.com',
      status: 'IN_PROGRESS',
    });
  });

  it('describes the endpoint group: its destination range, protocols and subnets', async () => {
    gaMock.on(DescribeCustomRoutingEndpointGroupCommand, { EndpointGroupArn: GROUP }).resolves({
      EndpointGroup: {
        EndpointGroupArn: GROUP,
        EndpointGroupRegion: 'eu-west-1',
        DestinationDescriptions: [{ FromPort: 7000, ToPort: 7999, Protocols: ['UDP', 'TCP'] }],
        EndpointDescriptions: [{ EndpointId: 'subnet-1' }, { EndpointId: 'subnet-2' }],
      },
    });
    expect(await api().describeEndpointGroup(GROUP)).toEqual({
      arn: GROUP,
      fromPort: 7000,
      toPort: 7999,
      protocols: ['UDP', 'TCP'],
      subnetIds: ['subnet-1', 'subnet-2'],
    });
  });

  it("lists an endpoint group's mappings in pages of 20,000, handing the token on", async () => {
    gaMock
      .on(ListCustomRoutingPortMappingsCommand, {
        AcceleratorArn: ACCELERATOR,
        EndpointGroupArn: GROUP,
      })
      .resolvesOnce({
        PortMappings: [
          {
            AcceleratorPort: 10_000,
            EndpointGroupArn: GROUP,
            EndpointId: 'subnet-1',
            DestinationSocketAddress: { IpAddress: '10.0.1.4', Port: 7000 },
            Protocols: ['UDP'],
            DestinationTrafficState: 'DENY',
          },
        ],
        NextToken: 'token-2',
      })
      .resolvesOnce({
        PortMappings: [
          {
            AcceleratorPort: 10_001,
            EndpointGroupArn: GROUP,
            EndpointId: 'subnet-1',
            DestinationSocketAddress: { IpAddress: '10.0.1.4', Port: 7001 },
            Protocols: ['UDP', 'TCP'],
            DestinationTrafficState: 'ALLOW',
          },
        ],
      });
    const first = await api().listPortMappings(ACCELERATOR, GROUP);
    expect(first).toEqual({
      mappings: [
        {
          acceleratorPort: 10_000,
          endpointGroupArn: GROUP,
          endpointId: 'subnet-1',
          destinationAddress: '10.0.1.4',
          destinationPort: 7000,
          protocols: ['UDP'],
          trafficState: 'DENY',
        },
      ],
      nextToken: 'token-2',
    });
    const second = await api().listPortMappings(ACCELERATOR, GROUP, first.nextToken);
    expect(second.nextToken).toBeUndefined();
    expect(second.mappings[0]).toMatchObject({ acceleratorPort: 10_001, trafficState: 'ALLOW' });
    expect(
      gaMock.commandCalls(ListCustomRoutingPortMappingsCommand).map((c) => c.args[0].input),
    ).toEqual([
      { AcceleratorArn: ACCELERATOR, EndpointGroupArn: GROUP, MaxResults: MAX_MAPPINGS_PER_PAGE },
      {
        AcceleratorArn: ACCELERATOR,
        EndpointGroupArn: GROUP,
        MaxResults: MAX_MAPPINGS_PER_PAGE,
        NextToken: 'token-2',
      },
    ]);
  });

  it("lists one destination's mappings by subnet and address, its public port and state", async () => {
    gaMock.on(ListCustomRoutingPortMappingsByDestinationCommand).resolves({
      DestinationPortMappings: [
        {
          AcceleratorArn: ACCELERATOR,
          AcceleratorSocketAddresses: [
            { IpAddress: '198.51.100.1', Port: 10_042 },
            { IpAddress: '198.51.100.2', Port: 10_042 },
          ],
          EndpointGroupArn: GROUP,
          EndpointId: 'subnet-1',
          EndpointGroupRegion: 'eu-west-1',
          DestinationSocketAddress: { IpAddress: '10.0.1.4', Port: 7042 },
          IpAddressType: 'IPV4',
          DestinationTrafficState: 'ALLOW',
        },
      ],
      NextToken: 'more',
    });
    expect(await api().listPortMappingsByDestination('subnet-1', '10.0.1.4', 'from')).toEqual({
      mappings: [
        {
          acceleratorPort: 10_042,
          endpointGroupArn: GROUP,
          endpointId: 'subnet-1',
          destinationAddress: '10.0.1.4',
          destinationPort: 7042,
          protocols: [],
          trafficState: 'ALLOW',
        },
      ],
      nextToken: 'more',
    });
    expect(
      gaMock.commandCalls(ListCustomRoutingPortMappingsByDestinationCommand)[0]?.args[0].input,
    ).toEqual({
      EndpointId: 'subnet-1',
      DestinationAddress: '10.0.1.4',
      MaxResults: MAX_MAPPINGS_PER_PAGE,
      NextToken: 'from',
    });
  });

  it('allows and denies every address times every port of a batch in one call each', async () => {
    gaMock.on(AllowCustomRoutingTrafficCommand).resolves({});
    gaMock.on(DenyCustomRoutingTrafficCommand).resolves({});
    const batch = {
      endpointGroupArn: GROUP,
      endpointId: 'subnet-1',
      addresses: ['10.0.1.4', '10.0.1.5'],
      ports: [7000, 7001, 7002],
    };
    await api().allowTraffic(batch);
    await api().denyTraffic({ ...batch, ports: [7002] });
    expect(
      gaMock.commandCalls(AllowCustomRoutingTrafficCommand).map((c) => c.args[0].input),
    ).toEqual([
      {
        EndpointGroupArn: GROUP,
        EndpointId: 'subnet-1',
        DestinationAddresses: ['10.0.1.4', '10.0.1.5'],
        DestinationPorts: [7000, 7001, 7002],
      },
    ]);
    expect(gaMock.commandCalls(DenyCustomRoutingTrafficCommand)[0]?.args[0].input).toEqual({
      EndpointGroupArn: GROUP,
      EndpointId: 'subnet-1',
      DestinationAddresses: ['10.0.1.4', '10.0.1.5'],
      DestinationPorts: [7002],
    });
  });

  it("opens an address's whole range by leaving the ports out, never the whole subnet", async () => {
    gaMock.on(AllowCustomRoutingTrafficCommand).resolves({});
    await api().allowTraffic({
      endpointGroupArn: GROUP,
      endpointId: 'subnet-1',
      addresses: ['10.0.1.4'],
    });
    const [input] = gaMock
      .commandCalls(AllowCustomRoutingTrafficCommand)
      .map((c) => c.args[0].input);
    expect(input).toEqual({
      EndpointGroupArn: GROUP,
      EndpointId: 'subnet-1',
      DestinationAddresses: ['10.0.1.4'],
    });
    expect(input).not.toHaveProperty('AllowAllTrafficToEndpoint');
  });

  it("passes the service's errors through, classified by their code", async () => {
    const fault = (name: string) => Object.assign(new Error(name), { name, $fault: 'server' });
    gaMock
      .on(AllowCustomRoutingTrafficCommand)
      .rejectsOnce(fault('EndpointGroupNotFoundException'))
      .rejectsOnce(fault('InternalServiceErrorException'));
    const batch = { endpointGroupArn: GROUP, endpointId: 'subnet-1', addresses: ['10.0.1.4'] };
    expect(
      isNotFound(
        await api()
          .allowTraffic(batch)
          .catch((e: unknown) => e),
      ),
    ).toBe(true);
    expect(
      isTransient(
        await api()
          .allowTraffic(batch)
          .catch((e: unknown) => e),
      ),
    ).toBe(true);
  });
});

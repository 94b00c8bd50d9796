/**
 * The `CustomRoutingApi` adapter over `@aws-sdk/client-global-accelerator`: SDK shapes in,
 * berth's shapes out. It neither retries nor rate-limits (wrap it in `BudgetedCustomRoutingApi`);
 * build the client with `acceleratorClient()`. SDK errors pass through: `shared/aws/error-codes.ts`
 * classifies them.
 */
import {
  AllowCustomRoutingTrafficCommand,
  type CustomRoutingDestinationTrafficState,
  DenyCustomRoutingTrafficCommand,
  DescribeCustomRoutingAcceleratorCommand,
  DescribeCustomRoutingEndpointGroupCommand,
  GlobalAcceleratorClient,
  ListCustomRoutingPortMappingsByDestinationCommand,
  ListCustomRoutingPortMappingsCommand,
  type PortMapping as SdkPortMapping,
} from '@aws-sdk/client-global-accelerator';
import {
  type CustomRoutingAccelerator,
  type CustomRoutingApi,
  type CustomRoutingEndpointGroup,
  type CustomRoutingProtocol,
  type DestinationBatch,
  type DestinationTrafficState,
  MAX_MAPPINGS_PER_PAGE,
  type MappingPage,
  type PortMapping,
} from './accelerator.js';

/**
 * Where the Global Accelerator API is served, whatever the Region of the accelerator's endpoints:
 * "all Global Accelerator API operations must be run in the US West (Oregon) (us-west-2) Region"
 * (Global Accelerator Developer Guide, "Quotas for AWS Global Accelerator"; the service's one
 * endpoint, globalaccelerator.amazonaws.com, is listed under us-west-2 in the AWS General
 * Reference, "AWS Global Accelerator endpoints and quotas").
 */
export const ACCELERATOR_API_REGION = 'us-west-2';

/**
 * A Global Accelerator client for berth, always in us-west-2, with one SDK attempt per call:
 * `BudgetedCustomRoutingApi` retries throttling itself, paying each attempt from the budget.
 */
export function acceleratorClient(): GlobalAcceleratorClient {
  return new GlobalAcceleratorClient({ region: ACCELERATOR_API_REGION, maxAttempts: 1 });
}

/** `CustomRoutingApi` over the AWS SDK. */
export class SdkCustomRoutingApi implements CustomRoutingApi {
  readonly #client: GlobalAcceleratorClient;

  constructor(client: GlobalAcceleratorClient) {
    this.#client = client;
  }

  async describeAccelerator(acceleratorArn: string): Promise<CustomRoutingAccelerator> {
    const out = await this.#client.send(
      new DescribeCustomRoutingAcceleratorCommand({ AcceleratorArn: acceleratorArn }),
    );
    const accelerator = out.Accelerator;
    return {
      arn: accelerator?.AcceleratorArn ?? acceleratorArn,
      ipAddresses: (accelerator?.IpSets ?? []).flatMap((set) => set.IpAddresses ?? []),
      dnsName: accelerator?.DnsName ?? '',
      // Anything but a settled deployment is a change still under way.
      status: accelerator?.Status === 'DEPLOYED' ? 'DEPLOYED' : 'IN_PROGRESS',
    };
  }

  async describeEndpointGroup(endpointGroupArn: string): Promise<CustomRoutingEndpointGroup> {
    const out = await this.#client.send(
      new DescribeCustomRoutingEndpointGroupCommand({ EndpointGroupArn: endpointGroupArn }),
    );
    const group = out.EndpointGroup;
    // berth's endpoint group has one destination range, its host port range for accelerator
    // fronts; a group given more is read by its first, so berth never allows a port outside it.
    const [range] = group?.DestinationDescriptions ?? [];
    return {
      arn: group?.EndpointGroupArn ?? endpointGroupArn,
      fromPort: range?.FromPort ?? 0,
      toPort: range?.ToPort ?? 0,
      protocols: toProtocols(range?.Protocols),
      subnetIds: (group?.EndpointDescriptions ?? []).flatMap((endpoint) =>
        endpoint.EndpointId ? [endpoint.EndpointId] : [],
      ),
    };
  }

  async listPortMappings(
    acceleratorArn: string,
    endpointGroupArn: string,
    nextToken?: string,
  ): Promise<MappingPage> {
    const out = await this.#client.send(
      new ListCustomRoutingPortMappingsCommand({
        AcceleratorArn: acceleratorArn,
        EndpointGroupArn: endpointGroupArn,
        MaxResults: MAX_MAPPINGS_PER_PAGE,
        ...(nextToken ? { NextToken: nextToken } : {}),
      }),
    );
    return mappingPage((out.PortMappings ?? []).map(toPortMapping), out.NextToken);
  }

  async listPortMappingsByDestination(
    endpointId: string,
    destinationAddress: string,
    nextToken?: string,
  ): Promise<MappingPage> {
    const out = await this.#client.send(
      new ListCustomRoutingPortMappingsByDestinationCommand({
        EndpointId: endpointId,
        DestinationAddress: destinationAddress,
        MaxResults: MAX_MAPPINGS_PER_PAGE,
        ...(nextToken ? { NextToken: nextToken } : {}),
      }),
    );
    const mappings = (out.DestinationPortMappings ?? []).map(
      (mapping): PortMapping => ({
        // Every static address of the accelerator maps the destination on the same port.
        acceleratorPort: mapping.AcceleratorSocketAddresses?.[0]?.Port ?? 0,
        endpointGroupArn: mapping.EndpointGroupArn ?? '',
        endpointId: mapping.EndpointId ?? endpointId,
        destinationAddress: mapping.DestinationSocketAddress?.IpAddress ?? destinationAddress,
        destinationPort: mapping.DestinationSocketAddress?.Port ?? 0,
        // A destination's mappings carry no protocols (API reference, "DestinationPortMapping"):
        // the endpoint group's are the ones `describeEndpointGroup` reads.
        protocols: [],
        trafficState: toTrafficState(mapping.DestinationTrafficState),
      }),
    );
    return mappingPage(mappings, out.NextToken);
  }

  async allowTraffic(batch: DestinationBatch): Promise<void> {
    await this.#client.send(new AllowCustomRoutingTrafficCommand(toTrafficRequest(batch)));
  }

  async denyTraffic(batch: DestinationBatch): Promise<void> {
    await this.#client.send(new DenyCustomRoutingTrafficCommand(toTrafficRequest(batch)));
  }
}

/**
 * Every address of the batch times every port listed, or times the endpoint group's whole range
 * when no port is: `DestinationPorts` absent (never `AllowAllTrafficToEndpoint`, which would open
 * the whole subnet).
 */
function toTrafficRequest(batch: DestinationBatch) {
  return {
    EndpointGroupArn: batch.endpointGroupArn,
    EndpointId: batch.endpointId,
    DestinationAddresses: [...batch.addresses],
    ...(batch.ports ? { DestinationPorts: [...batch.ports] } : {}),
  };
}

function mappingPage(mappings: readonly PortMapping[], nextToken: string | undefined): MappingPage {
  return { mappings, ...(nextToken ? { nextToken } : {}) };
}

function toPortMapping(mapping: SdkPortMapping): PortMapping {
  return {
    acceleratorPort: mapping.AcceleratorPort ?? 0,
    endpointGroupArn: mapping.EndpointGroupArn ?? '',
    endpointId: mapping.EndpointId ?? '',
    destinationAddress: mapping.DestinationSocketAddress?.IpAddress ?? '',
    destinationPort: mapping.DestinationSocketAddress?.Port ?? 0,
    protocols: toProtocols(mapping.Protocols),
    trafficState: toTrafficState(mapping.DestinationTrafficState),
  };
}

function toProtocols(protocols: readonly string[] | undefined): CustomRoutingProtocol[] {
  return (protocols ?? []).filter((p): p is CustomRoutingProtocol => p === 'TCP' || p === 'UDP');
}

/** A destination receives traffic only once allowed: anything but ALLOW is denied. */
function toTrafficState(
  state: CustomRoutingDestinationTrafficState | undefined,
): DestinationTrafficState {
  return state === 'ALLOW' ? 'ALLOW' : 'DENY';
}

/**
 * The Global Accelerator custom routing calls berth makes, and only those. A custom routing
 * accelerator maps each of its public ports onto one destination (a private address and port)
 * of an endpoint subnet; the mapping is fixed once the subnet is an endpoint, so berth reads it
 * once per subnet and keeps it, and a destination receives traffic only once it is allowed.
 * Allow and deny take lists: one call covers every address listed times every port listed
 * (Global Accelerator API reference, "AllowCustomRoutingTraffic").
 *
 * Inputs and outputs are berth's own shapes; the SDK adapter, the rate-budget decorator and the
 * test fake all implement this one interface.
 */

/** Whether a destination receives traffic. */
export type DestinationTrafficState = 'ALLOW' | 'DENY';

/** A transport protocol of a custom routing destination. */
export type CustomRoutingProtocol = 'TCP' | 'UDP';

/** One accelerator port and the destination it reaches. */
export interface PortMapping {
  readonly acceleratorPort: number;
  readonly endpointGroupArn: string;
  /** The endpoint: a VPC subnet id. */
  readonly endpointId: string;
  readonly destinationAddress: string;
  readonly destinationPort: number;
  readonly protocols: readonly CustomRoutingProtocol[];
  readonly trafficState: DestinationTrafficState;
}

/** A custom routing accelerator as berth needs it. */
export interface CustomRoutingAccelerator {
  readonly arn: string;
  /** The static public addresses: a player dials one of them and the mapped port. */
  readonly ipAddresses: readonly string[];
  readonly dnsName: string;
  /** `IN_PROGRESS` after a change until it is `DEPLOYED`. */
  readonly status: 'DEPLOYED' | 'IN_PROGRESS';
}

/** An endpoint group: its destination port range and its subnets. */
export interface CustomRoutingEndpointGroup {
  readonly arn: string;
  readonly fromPort: number;
  readonly toPort: number;
  readonly protocols: readonly CustomRoutingProtocol[];
  readonly subnetIds: readonly string[];
}

/** What `allowTraffic` and `denyTraffic` take: every address times every port. */
export interface DestinationBatch {
  readonly endpointGroupArn: string;
  /** The subnet. */
  readonly endpointId: string;
  /** At most 100 (the API's limit). */
  readonly addresses: readonly string[];
  /** At most 100 (the API's limit); absent means the endpoint group's whole port range. */
  readonly ports?: readonly number[];
}

/** One page of a listing; `nextToken` is absent on the last page. */
export interface MappingPage {
  readonly mappings: readonly PortMapping[];
  readonly nextToken?: string;
}

/** The calls berth makes. */
export interface CustomRoutingApi {
  describeAccelerator(acceleratorArn: string): Promise<CustomRoutingAccelerator>;
  describeEndpointGroup(endpointGroupArn: string): Promise<CustomRoutingEndpointGroup>;
  /** One page (at most 20,000 mappings) of an endpoint group's mappings, in accelerator port order. */
  listPortMappings(
    acceleratorArn: string,
    endpointGroupArn: string,
    nextToken?: string,
  ): Promise<MappingPage>;
  /** One page of the mappings of one destination address in a subnet: its traffic states. */
  listPortMappingsByDestination(
    endpointId: string,
    destinationAddress: string,
    nextToken?: string,
  ): Promise<MappingPage>;
  allowTraffic(batch: DestinationBatch): Promise<void>;
  denyTraffic(batch: DestinationBatch): Promise<void>;
}

/** The action names, as the API and the budget know them. */
export const ACCELERATOR_ACTIONS = {
  describeAccelerator: 'DescribeCustomRoutingAccelerator',
  describeEndpointGroup: 'DescribeCustomRoutingEndpointGroup',
  listPortMappings: 'ListCustomRoutingPortMappings',
  listPortMappingsByDestination: 'ListCustomRoutingPortMappingsByDestination',
  allowTraffic: 'AllowCustomRoutingTraffic',
  denyTraffic: 'DenyCustomRoutingTraffic',
} as const satisfies Record<keyof CustomRoutingApi, string>;

/** One of the Global Accelerator actions berth calls. */
export type AcceleratorAction = (typeof ACCELERATOR_ACTIONS)[keyof typeof ACCELERATOR_ACTIONS];

/** At most this many addresses, and this many ports, in one allow or deny call. */
export const MAX_DESTINATIONS_PER_CALL = 100;
/** At most this many mappings on one page of a listing. */
export const MAX_MAPPINGS_PER_PAGE = 20_000;

/**
 * The EC2 calls berth makes, and only those (Karpenter's `pkg/aws/sdk.go` shape). Inputs and
 * outputs are berth's own shapes, so the domain never sees an SDK type; the SDK adapter, the
 * rate-budget decorator and the test fake all implement this one interface.
 */
import { formatIp, parseCidr } from '../net/ip.js';

/** Tag keys berth puts on every ENI it creates (at creation, so no ENI is ever untagged). */
export const BERTH_TAGS = {
  cluster: 'berth.dev/cluster',
  node: 'berth.dev/node',
  instance: 'berth.dev/instance',
  createdAt: 'berth.dev/created-at',
} as const;

/**
 * The VPC CNI's opt-out tag: its ipamd takes over every ENI on a node without it, so berth's
 * ENIs carry it on nodes where aws-node still runs.
 */
export const VPC_CNI_NO_MANAGE_TAG = {
  key: 'node.k8s.amazonaws.com/no_manage',
  value: 'true',
} as const;

/** One EC2 tag. */
export interface Ec2Tag {
  readonly key: string;
  readonly value: string;
}

/** An ENI attachment as EC2 reports it. */
export interface Ec2Attachment {
  readonly attachmentId: string;
  readonly instanceId: string;
  readonly deviceIndex: number;
  readonly status: 'attaching' | 'attached' | 'detaching' | 'detached';
  readonly deleteOnTermination: boolean;
}

/** A network interface as berth needs it. */
export interface Ec2NetworkInterface {
  readonly eniId: string;
  readonly subnetId: string;
  /** `available` (not attached), `in-use`, or a transitional state. */
  readonly status: 'available' | 'in-use' | 'attaching' | 'detaching' | 'associated';
  readonly primaryIp: string;
  /** The interface's MAC address: how a node finds the link that is this ENI. */
  readonly macAddress: string;
  /** Secondary private IPv4 addresses only (never the primary). */
  readonly secondaryIps: readonly string[];
  /** Delegated IPv4 prefixes (`a.b.c.d/28`): 16 addresses each, assigned and unassigned whole. */
  readonly ipv4Prefixes: readonly string[];
  readonly attachment?: Ec2Attachment;
  readonly tags: readonly Ec2Tag[];
  readonly securityGroupIds: readonly string[];
}

/** EC2 instance lifecycle states, in lifecycle order. */
export const INSTANCE_STATES = [
  'pending',
  'running',
  'shutting-down',
  'terminated',
  'stopping',
  'stopped',
] as const;

/** EC2 instance lifecycle states. */
export type InstanceState = (typeof INSTANCE_STATES)[number];

const INSTANCE_STATE_SET: ReadonlySet<string> = new Set(INSTANCE_STATES);

/** Whether a string is one of EC2's instance states. */
export function isInstanceState(value: unknown): value is InstanceState {
  return typeof value === 'string' && INSTANCE_STATE_SET.has(value);
}

/**
 * An ENI attached to an instance, as DescribeInstances reports it (`NetworkInterfaces`): its
 * attachment and addresses, not its tags.
 */
export interface Ec2InstanceInterface
  extends Pick<
    Ec2NetworkInterface,
    'eniId' | 'subnetId' | 'primaryIp' | 'macAddress' | 'secondaryIps' | 'ipv4Prefixes'
  > {
  /** 0: the instance's primary ENI, which EC2 never detaches from it. */
  readonly deviceIndex: number;
  readonly attachmentId: string;
}

/** An instance as berth needs it: type, placement, state and attached ENIs. */
export interface Ec2Instance {
  readonly instanceId: string;
  readonly instanceType: string;
  readonly state: InstanceState;
  readonly subnetId: string;
  readonly availabilityZone: string;
  readonly securityGroupIds: readonly string[];
  /** The attached ENIs; the one at device index 0 is the primary ENI. */
  readonly networkInterfaces: readonly Ec2InstanceInterface[];
}

/** The instance's primary ENI (device index 0), as DescribeInstances showed it. */
export function primaryInterfaceOf(instance: Ec2Instance): Ec2InstanceInterface | undefined {
  return instance.networkInterfaces.find((eni) => eni.deviceIndex === 0);
}

/** The ENI and IPv4 limits of an instance type (DescribeInstanceTypes `NetworkInfo`). */
export interface InstanceTypeLimits {
  readonly instanceType: string;
  readonly maxNetworkInterfaces: number;
  /** IPv4 addresses per ENI, the ENI's primary address included. */
  readonly ipv4PerInterface: number;
  /**
   * Whether ENIs on this type take /28 prefixes (Nitro instances only). A prefix then takes one
   * of the `ipv4PerInterface - 1` secondary slots, as a secondary address does.
   */
  readonly prefixDelegation: boolean;
}

/** Addresses in one delegated IPv4 prefix (a /28). */
export const IPV4_PREFIX_SIZE = 16;

/** The 16 addresses of a delegated `a.b.c.d/28`, every one a pod's to use. */
export function prefixAddresses(prefix: string): string[] {
  const block = parseCidr(prefix);
  if (block?.family !== 'IPv4' || block.hostBits !== 4) {
    throw new RangeError(`not an IPv4 /28 prefix: ${prefix}`);
  }
  return Array.from({ length: IPV4_PREFIX_SIZE }, (_, i) =>
    formatIp({ family: 'IPv4', value: block.network + BigInt(i) }),
  );
}

/** Every pod address EC2 shows on an ENI: its secondary addresses and those of its prefixes. */
export function podAddressesOf(
  eni: Pick<Ec2NetworkInterface, 'secondaryIps' | 'ipv4Prefixes'>,
): Map<string, string | undefined> {
  const addresses = new Map<string, string | undefined>();
  for (const ip of eni.secondaryIps) addresses.set(ip, undefined);
  for (const prefix of eni.ipv4Prefixes) {
    for (const ip of prefixAddresses(prefix)) addresses.set(ip, prefix);
  }
  return addresses;
}

/** A subnet: its CIDR and how many addresses EC2 can still hand out. */
export interface Ec2Subnet {
  readonly subnetId: string;
  readonly cidr: string;
  readonly availabilityZone: string;
  readonly availableIpCount: number;
}

/** One page of DescribeNetworkInterfaces. */
export interface NetworkInterfacePage {
  readonly interfaces: readonly Ec2NetworkInterface[];
  readonly nextToken?: string;
}

/**
 * A DescribeNetworkInterfaces query. Always filtered (EC2's cheaper 100/20 bucket applies to
 * filtered or paginated calls only); keys are EC2 filter names such as `tag:berth.dev/cluster`,
 * `status` or `attachment.instance-id`.
 */
export interface NetworkInterfaceQuery {
  readonly filters: Readonly<Record<string, readonly string[]>>;
  readonly pageSize?: number;
  readonly nextToken?: string;
}

/** CreateNetworkInterface input: tags are applied atomically with the ENI. */
export interface CreateNetworkInterfaceInput {
  readonly subnetId: string;
  readonly securityGroupIds: readonly string[];
  readonly secondaryIpCount: number;
  /** /28 prefixes to delegate at creation instead of addresses (EC2 takes one or the other). */
  readonly ipv4PrefixCount?: number;
  readonly description: string;
  readonly tags: readonly Ec2Tag[];
  /** Persisted before the call, so a retry after a crash gets the same ENI, not a second one. */
  readonly clientToken: string;
}

/** The EC2 API surface of berth's ENI pools. Errors are the SDK's, classified by `shared/aws/error-codes.ts`. */
export interface Ec2Network {
  describeInstances(instanceIds: readonly string[]): Promise<readonly Ec2Instance[]>;
  describeInstanceTypes(instanceTypes: readonly string[]): Promise<readonly InstanceTypeLimits[]>;
  describeSubnets(subnetIds: readonly string[]): Promise<readonly Ec2Subnet[]>;
  describeNetworkInterfaces(query: NetworkInterfaceQuery): Promise<NetworkInterfacePage>;
  createNetworkInterface(input: CreateNetworkInterfaceInput): Promise<Ec2NetworkInterface>;
  attachNetworkInterface(input: {
    readonly eniId: string;
    readonly instanceId: string;
    readonly deviceIndex: number;
  }): Promise<{ readonly attachmentId: string }>;
  /** ModifyNetworkInterfaceAttribute with `Attachment.DeleteOnTermination = true`. */
  setDeleteOnTermination(input: {
    readonly eniId: string;
    readonly attachmentId: string;
  }): Promise<void>;
  /** Assigns `count` secondary IPs in one call; answers the newly assigned ones. */
  assignPrivateIpAddresses(input: {
    readonly eniId: string;
    readonly count: number;
  }): Promise<readonly string[]>;
  unassignPrivateIpAddresses(input: {
    readonly eniId: string;
    readonly ips: readonly string[];
  }): Promise<void>;
  /**
   * AssignPrivateIpAddresses with `Ipv4PrefixCount`: delegates `count` /28 prefixes in one call;
   * answers the new prefixes. A subnet with no free aligned /28 refuses with
   * `InsufficientCidrBlocks`, however many single addresses it has left.
   */
  assignIpv4Prefixes(input: {
    readonly eniId: string;
    readonly count: number;
  }): Promise<readonly string[]>;
  /** UnassignPrivateIpAddresses with `Ipv4Prefixes`: gives whole prefixes back. */
  unassignIpv4Prefixes(input: {
    readonly eniId: string;
    readonly prefixes: readonly string[];
  }): Promise<void>;
  detachNetworkInterface(input: { readonly attachmentId: string }): Promise<void>;
  deleteNetworkInterface(input: { readonly eniId: string }): Promise<void>;
  createTags(input: {
    readonly resourceIds: readonly string[];
    readonly tags: readonly Ec2Tag[];
  }): Promise<void>;
}

/** The EC2 action name of each `Ec2Network` method, for budgets, metrics and logs. */
export const EC2_ACTIONS = {
  describeInstances: 'DescribeInstances',
  describeInstanceTypes: 'DescribeInstanceTypes',
  describeSubnets: 'DescribeSubnets',
  describeNetworkInterfaces: 'DescribeNetworkInterfaces',
  createNetworkInterface: 'CreateNetworkInterface',
  attachNetworkInterface: 'AttachNetworkInterface',
  setDeleteOnTermination: 'ModifyNetworkInterfaceAttribute',
  assignPrivateIpAddresses: 'AssignPrivateIpAddresses',
  unassignPrivateIpAddresses: 'UnassignPrivateIpAddresses',
  assignIpv4Prefixes: 'AssignPrivateIpAddresses',
  unassignIpv4Prefixes: 'UnassignPrivateIpAddresses',
  detachNetworkInterface: 'DetachNetworkInterface',
  deleteNetworkInterface: 'DeleteNetworkInterface',
  createTags: 'CreateTags',
} as const satisfies Record<keyof Ec2Network, string>;

/** An EC2 action berth calls. */
export type Ec2Action = (typeof EC2_ACTIONS)[keyof typeof EC2_ACTIONS];

/** Every ENI matching the query, page by page (one budgeted call per page). */
export async function* allNetworkInterfaces(
  ec2: Ec2Network,
  query: Omit<NetworkInterfaceQuery, 'nextToken'>,
): AsyncIterable<Ec2NetworkInterface> {
  let nextToken: string | undefined;
  do {
    const page = await ec2.describeNetworkInterfaces({ ...query, nextToken });
    yield* page.interfaces;
    nextToken = page.nextToken;
  } while (nextToken);
}

/** The value of a tag, if present. */
export function tagValue(tags: readonly Ec2Tag[], key: string): string | undefined {
  return tags.find((tag) => tag.key === key)?.value;
}

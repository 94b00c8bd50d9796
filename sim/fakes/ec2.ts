/**
 * A faithful in-memory EC2 for berth's `Ec2Network` (Karpenter's `pkg/fake/ec2api.go` idea):
 * instance types with their real ENI/IPv4 limits, subnets with finite addresses (AWS reserves
 * the first four and the last one), /28 prefix delegation on Nitro types (a prefix is an aligned
 * block of 16 free addresses and takes one secondary slot; a subnet whose free addresses are
 * scattered has none to give: `InsufficientCidrBlocks`), the real error codes, a token bucket per action with EC2's
 * default sizes and refill, asynchronous detach, ClientToken idempotency on create, and an
 * optional eventual-consistency lag on DescribeNetworkInterfaces. Tests steer it with injected
 * errors, a throttle rate and instance launches/terminations; it records every call.
 */
import {
  type CreateNetworkInterfaceInput,
  type Ec2Action,
  type Ec2Attachment,
  type Ec2Instance,
  type Ec2Network,
  type Ec2NetworkInterface,
  type Ec2Subnet,
  type Ec2Tag,
  type InstanceState,
  type InstanceTypeLimits,
  type NetworkInterfacePage,
  type NetworkInterfaceQuery,
  prefixAddresses,
} from '../../shared/ec2/network.js';
import {
  type BucketSpec,
  type BucketState,
  fullBucket,
  takeTokens,
} from '../../shared/ec2/token-bucket.js';
import { formatIp, parseCidr } from '../../shared/net/ip.js';
import { ownValueOf } from '../../shared/vocabulary/opaque.js';

/** Addresses per delegated prefix, and so the alignment of a /28 inside its subnet. */
const BLOCK = 16;

/**
 * Real limits (reference §2.10 and DescribeInstanceTypes): max ENIs × IPv4 per ENI; every type
 * here is Nitro (prefix delegation) but the Xen c4.large.
 */
export const INSTANCE_TYPES: Readonly<Record<string, InstanceTypeLimits>> = {
  't3.small': {
    instanceType: 't3.small',
    maxNetworkInterfaces: 3,
    ipv4PerInterface: 4,
    prefixDelegation: true,
  },
  't3.medium': {
    instanceType: 't3.medium',
    maxNetworkInterfaces: 3,
    ipv4PerInterface: 6,
    prefixDelegation: true,
  },
  'm5.large': {
    instanceType: 'm5.large',
    maxNetworkInterfaces: 3,
    ipv4PerInterface: 10,
    prefixDelegation: true,
  },
  'c5.large': {
    instanceType: 'c5.large',
    maxNetworkInterfaces: 3,
    ipv4PerInterface: 10,
    prefixDelegation: true,
  },
  'm5.xlarge': {
    instanceType: 'm5.xlarge',
    maxNetworkInterfaces: 4,
    ipv4PerInterface: 15,
    prefixDelegation: true,
  },
  'c5.4xlarge': {
    instanceType: 'c5.4xlarge',
    maxNetworkInterfaces: 8,
    ipv4PerInterface: 30,
    prefixDelegation: true,
  },
  'm5.24xlarge': {
    instanceType: 'm5.24xlarge',
    maxNetworkInterfaces: 15,
    ipv4PerInterface: 50,
    prefixDelegation: true,
  },
  'c4.large': {
    instanceType: 'c4.large',
    maxNetworkInterfaces: 3,
    ipv4PerInterface: 10,
    prefixDelegation: false,
  },
};

/** EC2's default buckets per action (reference §3.1), for filtered/paginated Describe calls. */
export const EC2_DEFAULT_BUCKETS: Readonly<Record<Ec2Action, BucketSpec>> = {
  DescribeInstances: { capacity: 100, refillPerSecond: 20 },
  DescribeInstanceTypes: { capacity: 100, refillPerSecond: 20 },
  DescribeSubnets: { capacity: 100, refillPerSecond: 20 },
  DescribeNetworkInterfaces: { capacity: 100, refillPerSecond: 20 },
  AssignPrivateIpAddresses: { capacity: 100, refillPerSecond: 5 },
  UnassignPrivateIpAddresses: { capacity: 100, refillPerSecond: 5 },
  CreateNetworkInterface: { capacity: 100, refillPerSecond: 5 },
  DeleteNetworkInterface: { capacity: 100, refillPerSecond: 5 },
  ModifyNetworkInterfaceAttribute: { capacity: 100, refillPerSecond: 5 },
  AttachNetworkInterface: { capacity: 50, refillPerSecond: 5 },
  DetachNetworkInterface: { capacity: 50, refillPerSecond: 5 },
  CreateTags: { capacity: 100, refillPerSecond: 10 },
};

/** Actions that change state (the benchmark's "mutating calls"). */
export const MUTATING_ACTIONS: ReadonlySet<Ec2Action> = new Set([
  'CreateNetworkInterface',
  'AttachNetworkInterface',
  'ModifyNetworkInterfaceAttribute',
  'AssignPrivateIpAddresses',
  'UnassignPrivateIpAddresses',
  'DetachNetworkInterface',
  'DeleteNetworkInterface',
  'CreateTags',
]);

/** An error shaped like the SDK's: `name` and `Code` are the EC2 error code. */
export class FakeEc2Error extends Error {
  readonly Code: string;
  readonly $fault = 'client';
  constructor(code: string, message: string) {
    super(message);
    this.name = code;
    this.Code = code;
  }
}

/** One call the fake answered (or refused). */
export interface FakeCall {
  readonly action: Ec2Action;
  readonly at: number;
  readonly outcome: 'ok' | 'error';
  readonly code?: string;
}

interface Subnet {
  readonly subnetId: string;
  readonly cidr: string;
  readonly availabilityZone: string;
  readonly network: bigint;
  /** Addresses in the subnet; offsets are plain numbers (a VPC subnet is at most a /16). */
  readonly size: number;
  /** Single addresses are handed out in order from here, then from `released`. */
  next: number;
  /** Released offsets, reused oldest first (a queue: `released[releasedHead]` is next). */
  readonly released: number[];
  releasedHead: number;
  /** Offsets in use: by an ENI (primary, secondary or prefix) or by another tenant. */
  readonly used: Set<number>;
  /** Offsets taken per /28 block, AWS's reserved addresses included: a prefix needs a 0. */
  readonly blockUse: Map<number, number>;
  /** Prefix-type CIDR reservations, as offset ranges [start, end). */
  readonly prefixReservations: { readonly start: number; readonly end: number }[];
}

interface Attachment {
  attachmentId: string;
  instanceId: string;
  deviceIndex: number;
  deleteOnTermination: boolean;
  /** Detach requested: the ENI becomes `available` at this time. */
  detachAt?: number;
}

interface Eni {
  readonly eniId: string;
  readonly subnetId: string;
  readonly primaryIp: string;
  readonly macAddress: string;
  readonly secondaryIps: string[];
  readonly prefixes: string[];
  readonly securityGroupIds: readonly string[];
  tags: Ec2Tag[];
  attachment?: Attachment;
  readonly primaryOfInstance: boolean;
}

interface Instance {
  readonly instanceId: string;
  readonly instanceType: string;
  state: InstanceState;
  readonly subnetId: string;
  readonly availabilityZone: string;
  readonly securityGroupIds: readonly string[];
}

/** Options of the fake. */
export interface FakeEc2Options {
  readonly now: () => number;
  /** Uniform in [0, 1): drives the throttle rate. */
  readonly random?: () => number;
  /** DescribeNetworkInterfaces shows the state as it was this long ago. */
  readonly describeLagMs?: number;
  /** How long a detach takes before the ENI is `available`. */
  readonly detachDelayMs?: number;
  /** Override EC2's buckets (e.g. to model other tenants using the account). */
  readonly buckets?: Partial<Record<Ec2Action, BucketSpec>>;
  /** Keep a call log (off in the benchmark, which only needs counts). */
  readonly recordCalls?: boolean;
}

/** The fake EC2 account and Region. */
export class FakeEc2 implements Ec2Network {
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #detachDelayMs: number;
  readonly #describeLagMs: number;
  readonly #buckets = new Map<Ec2Action, BucketState>();
  readonly #bucketSpecs: Record<Ec2Action, BucketSpec>;
  readonly #subnets = new Map<string, Subnet>();
  readonly #instances = new Map<string, Instance>();
  readonly #enis = new Map<string, Eni>();
  readonly #tokens = new Map<string, { eniId: string; params: string }>();
  readonly #history = new Map<string, { at: number; view: Ec2NetworkInterface | undefined }[]>();
  readonly #injected: { action: Ec2Action; code: string; message: string }[] = [];
  readonly #recordCalls: boolean;
  #seq = 0;
  /** Probability that any call is answered `RequestLimitExceeded` before it does anything. */
  throttleRate = 0;
  /** Every call, when `recordCalls` is on. */
  readonly calls: FakeCall[] = [];
  /** Calls per action, ok or not. */
  readonly counts = new Map<Ec2Action, number>();
  /** Calls refused with RequestLimitExceeded. */
  throttled = 0;

  constructor(options: FakeEc2Options) {
    this.#now = options.now;
    this.#random = options.random ?? Math.random;
    this.#detachDelayMs = options.detachDelayMs ?? 1_000;
    this.#describeLagMs = options.describeLagMs ?? 0;
    this.#bucketSpecs = { ...EC2_DEFAULT_BUCKETS, ...options.buckets };
    this.#recordCalls = options.recordCalls ?? true;
  }

  // ---- world building -------------------------------------------------------------------------

  /** Adds a subnet; its usable addresses are the CIDR minus AWS's five reserved ones. */
  addSubnet(subnetId: string, cidr: string, availabilityZone = 'us-east-1a'): void {
    const block = parseCidr(cidr);
    if (block?.family !== 'IPv4') throw new Error(`bad subnet CIDR ${cidr}`);
    const size = 2 ** block.hostBits;
    // The network address, the VPC router, DNS, a reserved one and the broadcast address.
    const blockUse = new Map<number, number>([[0, 4]]);
    const last = Math.floor((size - 1) / BLOCK);
    blockUse.set(last, (blockUse.get(last) ?? 0) + 1);
    this.#subnets.set(subnetId, {
      subnetId,
      cidr,
      availabilityZone,
      network: block.network,
      size,
      next: 4,
      released: [],
      releasedHead: 0,
      used: new Set(),
      blockUse,
      prefixReservations: [],
    });
  }

  /**
   * A prefix-type subnet CIDR reservation (CreateSubnetCidrReservation, ReservationType
   * `prefix`): EC2 delegates /28s from it and assigns no single address (secondary, an ENI's
   * primary, another tenant's) inside it. Addresses already in use there stay in use (Amazon VPC
   * User Guide, "Subnet CIDR reservations"). Assumed: a prefix is delegated from a reservation
   * while one has a whole free /28, else from the rest of the subnet.
   */
  reservePrefixes(subnetId: string, cidr: string): void {
    const subnet = this.#subnet(subnetId);
    const block = parseCidr(cidr);
    const start = block ? Number(block.network - subnet.network) : -1;
    if (!block || start < 0 || start % BLOCK !== 0 || start + 2 ** block.hostBits > subnet.size) {
      throw new Error(`reservation ${cidr} is not an aligned block of subnet ${subnetId}`);
    }
    subnet.prefixReservations.push({ start, end: start + 2 ** block.hostBits });
  }

  /**
   * Other tenants hold `utilization` of the subnet's usable addresses, each picked at random by
   * `random` among the free ones outside any prefix reservation. Answers the addresses taken,
   * which `releaseForeign` gives back.
   */
  occupyAtRandom(subnetId: string, utilization: number, random: () => number): string[] {
    const subnet = this.#subnet(subnetId);
    const candidates: number[] = [];
    for (let offset = 4; offset < subnet.size - 1; offset++) {
      if (!subnet.used.has(offset) && !this.#inPrefixReservation(subnet, offset)) {
        candidates.push(offset);
      }
    }
    const want = Math.min(candidates.length, Math.round(utilization * (subnet.size - 5)));
    const taken: string[] = [];
    // A partial Fisher-Yates shuffle: the first `want` candidates, uniformly.
    for (let i = 0; i < want; i++) {
      const j = i + Math.floor(random() * (candidates.length - i));
      const offset = candidates[j] ?? 0;
      candidates[j] = candidates[i] ?? 0;
      this.#take(subnet, offset);
      taken.push(this.#ipAt(subnet, offset));
    }
    return taken;
  }

  /**
   * Other tenants of the subnet (Lambda functions, load balancers, other clusters' ENIs) take one
   * address in `share` of its /28 blocks, spread by `random`: the subnet keeps most of its free
   * addresses but few whole /28s, as in VPC CNI issue #2749. Answers the addresses taken, which
   * `releaseForeign` gives back.
   */
  scatterForeign(subnetId: string, share: number, random: () => number): string[] {
    const subnet = this.#subnet(subnetId);
    const taken: string[] = [];
    for (let block = 0; block * BLOCK < subnet.size; block++) {
      if ((subnet.blockUse.get(block) ?? 0) > 0 || random() >= share) continue;
      const offset = block * BLOCK + Math.floor(random() * BLOCK);
      this.#take(subnet, offset);
      taken.push(this.#ipAt(subnet, offset));
    }
    return taken;
  }

  /**
   * Other tenants take every free address of the subnet but `leave` (a subnet running dry).
   * Answers the addresses taken, which `releaseForeign` gives back.
   */
  occupyForeign(subnetId: string, leave: number): string[] {
    const subnet = this.#subnet(subnetId);
    const want = Math.max(0, this.freeAddresses(subnetId) - leave);
    return this.#allocate(subnet, want);
  }

  /** Another tenant lets addresses go (see `scatterForeign`). */
  releaseForeign(subnetId: string, ips: readonly string[]): void {
    const subnet = this.#subnet(subnetId);
    for (const ip of ips) this.#free(subnet, ip);
  }

  /** Whole /28 blocks the subnet could still delegate. */
  freePrefixes(subnetId: string): number {
    const subnet = this.#subnet(subnetId);
    let free = 0;
    for (let block = 0; block * BLOCK < subnet.size; block++) {
      if ((subnet.blockUse.get(block) ?? 0) === 0) free++;
    }
    return free;
  }

  /** Launches a running instance with its primary ENI (device 0, deleted on termination). */
  launchInstance(input: {
    instanceType: string;
    subnetId: string;
    securityGroupIds?: readonly string[];
    instanceId?: string;
  }): string {
    const subnet = this.#subnet(input.subnetId);
    if (!ownValueOf(INSTANCE_TYPES, input.instanceType))
      throw new Error(`unknown type ${input.instanceType}`);
    const instanceId = input.instanceId ?? `i-${this.#hex(17)}`;
    this.#instances.set(instanceId, {
      instanceId,
      instanceType: input.instanceType,
      state: 'running',
      subnetId: subnet.subnetId,
      availabilityZone: subnet.availabilityZone,
      securityGroupIds: input.securityGroupIds ?? ['sg-0123456789abcdef0'],
    });
    const [primaryIp] = this.#allocate(subnet, 1);
    const eni: Eni = {
      eniId: `eni-${this.#hex(17)}`,
      subnetId: subnet.subnetId,
      primaryIp: primaryIp ?? '',
      macAddress: this.#mac(),
      secondaryIps: [],
      prefixes: [],
      securityGroupIds: input.securityGroupIds ?? ['sg-0123456789abcdef0'],
      tags: [],
      attachment: {
        attachmentId: `eni-attach-${this.#hex(17)}`,
        instanceId,
        deviceIndex: 0,
        deleteOnTermination: true,
      },
      primaryOfInstance: true,
    };
    this.#enis.set(eni.eniId, eni);
    this.#snapshot(eni.eniId);
    return instanceId;
  }

  /**
   * Another owner (the VPC CNI before berth served the node, an operator) assigns `count`
   * secondary addresses to the instance's primary ENI, every slot it has left by default.
   * Answers them.
   */
  occupyPrimary(instanceId: string, count?: number): string[] {
    const eni = [...this.#enis.values()].find(
      (e) => e.primaryOfInstance && e.attachment?.instanceId === instanceId,
    );
    if (!eni) throw new Error(`no primary ENI on ${instanceId}`);
    const ips = this.#allocate(
      this.#subnet(eni.subnetId),
      count ?? this.#slotLimit(eni) - slotsUsed(eni),
    );
    eni.secondaryIps.push(...ips);
    this.#snapshot(eni.eniId);
    return ips;
  }

  /**
   * Puts back an ENI as a record of an earlier world says it was (an upgrade test's table): its
   * id, addresses, prefixes, MAC and tags, attached as given. Its addresses are taken from its
   * subnet (one already in use is refused), and the ids the fake makes later never repeat its.
   */
  restoreInterface(
    input: Pick<
      Ec2NetworkInterface,
      | 'eniId'
      | 'subnetId'
      | 'primaryIp'
      | 'macAddress'
      | 'secondaryIps'
      | 'ipv4Prefixes'
      | 'securityGroupIds'
      | 'tags'
    > & { readonly attachment: Pick<Ec2Attachment, 'attachmentId' | 'instanceId' | 'deviceIndex'> },
  ): void {
    const subnet = this.#subnet(input.subnetId);
    const addresses = [
      input.primaryIp,
      ...input.secondaryIps,
      ...input.ipv4Prefixes.flatMap(prefixAddresses),
    ];
    for (const ip of addresses) {
      const offset = this.#offsetOf(subnet, ip);
      if (offset === undefined || subnet.used.has(offset)) {
        throw new Error(`${ip} of ${input.eniId} is not free in ${input.subnetId}`);
      }
      this.#take(subnet, offset);
    }
    for (const id of [input.eniId, input.attachment.attachmentId]) this.#passId(id);
    this.#enis.set(input.eniId, {
      eniId: input.eniId,
      subnetId: input.subnetId,
      primaryIp: input.primaryIp,
      macAddress: input.macAddress,
      secondaryIps: [...input.secondaryIps],
      prefixes: [...input.ipv4Prefixes],
      securityGroupIds: input.securityGroupIds,
      tags: [...input.tags],
      attachment: { ...input.attachment, deleteOnTermination: true },
      primaryOfInstance: false,
    });
    this.#snapshot(input.eniId);
  }

  /** An instance's state; undefined for one never launched. */
  instanceState(instanceId: string): InstanceState | undefined {
    return this.#instances.get(instanceId)?.state;
  }

  /** Terminates an instance: ENIs marked DeleteOnTermination go, the others become `available`. */
  terminateInstance(instanceId: string): void {
    const instance = this.#instances.get(instanceId);
    if (!instance) return;
    instance.state = 'terminated';
    for (const eni of [...this.#enis.values()]) {
      if (eni.attachment?.instanceId !== instanceId) continue;
      if (eni.attachment.deleteOnTermination) this.#destroy(eni);
      else {
        eni.attachment = undefined;
        this.#snapshot(eni.eniId);
      }
    }
  }

  /** Makes the next call of `action` fail with `code` (queued; each injection fails one call). */
  failNext(action: Ec2Action, code: string, message = `injected ${code}`): void {
    this.#injected.push({ action, code, message });
  }

  /** Free addresses left in a subnet. */
  freeAddresses(subnetId: string): number {
    const subnet = this.#subnet(subnetId);
    return subnet.size - 5 - subnet.used.size;
  }

  /** The current (not lagged) view of every ENI. */
  allInterfaces(): Ec2NetworkInterface[] {
    return [...this.#enis.values()].map((eni) => this.#view(eni));
  }

  /** The current view of one instance and its attached ENIs, if it was launched. */
  instance(instanceId: string): Ec2Instance | undefined {
    const instance = this.#instances.get(instanceId);
    if (!instance) return undefined;
    const attached = [...this.#enis.values()].filter((eni) => {
      this.#settle(eni);
      return eni.attachment?.instanceId === instanceId;
    });
    return this.#instanceView(instance, attached);
  }

  /** The current view of one ENI, if it exists. */
  networkInterface(eniId: string): Ec2NetworkInterface | undefined {
    const eni = this.#enis.get(eniId);
    if (eni) this.#settle(eni);
    return eni ? this.#view(eni) : undefined;
  }

  /** Mutating calls made so far. */
  mutatingCalls(): number {
    let total = 0;
    for (const [action, count] of this.counts) if (MUTATING_ACTIONS.has(action)) total += count;
    return total;
  }

  // ---- Ec2Network -----------------------------------------------------------------------------

  async describeInstances(instanceIds: readonly string[]): Promise<readonly Ec2Instance[]> {
    this.#enter('DescribeInstances');
    const found: Ec2Instance[] = [];
    // One sweep over the ENIs indexes them by instance (Describe of a whole fleet stays linear).
    const attached = new Map<string, Eni[]>();
    for (const eni of this.#enis.values()) {
      this.#settle(eni);
      const owner = eni.attachment?.instanceId;
      if (owner === undefined) continue;
      const list = attached.get(owner) ?? [];
      list.push(eni);
      attached.set(owner, list);
    }
    for (const id of instanceIds) {
      const instance = this.#instances.get(id);
      if (instance) found.push(this.#instanceView(instance, attached.get(id) ?? []));
    }
    return this.#ok('DescribeInstances', found);
  }

  async describeInstanceTypes(
    instanceTypes: readonly string[],
  ): Promise<readonly InstanceTypeLimits[]> {
    this.#enter('DescribeInstanceTypes');
    const found: InstanceTypeLimits[] = [];
    for (const type of instanceTypes) {
      const limits = ownValueOf(INSTANCE_TYPES, type);
      if (!limits) {
        this.#fail(
          'DescribeInstanceTypes',
          'InvalidInstanceType',
          `The following supplied instance types do not exist: [${type}]`,
        );
      } else found.push(limits);
    }
    return this.#ok('DescribeInstanceTypes', found);
  }

  async describeSubnets(subnetIds: readonly string[]): Promise<readonly Ec2Subnet[]> {
    this.#enter('DescribeSubnets');
    const found: Ec2Subnet[] = [];
    for (const id of subnetIds) {
      const subnet = this.#subnets.get(id);
      if (!subnet) continue;
      found.push({
        subnetId: id,
        cidr: subnet.cidr,
        availabilityZone: subnet.availabilityZone,
        availableIpCount: this.freeAddresses(id),
      });
    }
    return this.#ok('DescribeSubnets', found);
  }

  async describeNetworkInterfaces(query: NetworkInterfaceQuery): Promise<NetworkInterfacePage> {
    this.#enter('DescribeNetworkInterfaces');
    const pageSize = query.pageSize ?? 1000;
    if (pageSize < 5 || pageSize > 1000) {
      this.#fail(
        'DescribeNetworkInterfaces',
        'InvalidParameterValue',
        `MaxResults must be between 5 and 1000`,
      );
    }
    const views = this.#visibleInterfaces().filter((eni) => matches(eni, query.filters));
    const start = query.nextToken ? Number(query.nextToken) : 0;
    const page = views.slice(start, start + pageSize);
    const end = start + page.length;
    return this.#ok('DescribeNetworkInterfaces', {
      interfaces: page,
      ...(end < views.length ? { nextToken: String(end) } : {}),
    });
  }

  async createNetworkInterface(input: CreateNetworkInterfaceInput): Promise<Ec2NetworkInterface> {
    this.#enter('CreateNetworkInterface');
    const params = JSON.stringify([
      input.subnetId,
      [...input.securityGroupIds].sort(),
      input.secondaryIpCount,
      input.ipv4PrefixCount ?? 0,
      input.description,
      input.tags,
    ]);
    const earlier = this.#tokens.get(input.clientToken);
    if (earlier) {
      if (earlier.params !== params) {
        this.#fail(
          'CreateNetworkInterface',
          'IdempotentParameterMismatch',
          'The client token you have provided is associated with a resource that has different parameters',
        );
      }
      const eni = this.#enis.get(earlier.eniId);
      if (eni) {
        this.#settle(eni);
        return this.#ok('CreateNetworkInterface', this.#view(eni));
      }
    }
    const subnet = this.#subnets.get(input.subnetId);
    if (!subnet) {
      this.#fail(
        'CreateNetworkInterface',
        'InvalidSubnetID.NotFound',
        `The subnet ID '${input.subnetId}' does not exist`,
      );
    }
    if (input.secondaryIpCount < 0 || input.secondaryIpCount > 49) {
      this.#fail(
        'CreateNetworkInterface',
        'InvalidParameterValue',
        'SecondaryPrivateIpAddressCount out of range',
      );
    }
    const prefixCount = input.ipv4PrefixCount ?? 0;
    if (prefixCount > 0 && input.secondaryIpCount > 0) {
      this.#fail(
        'CreateNetworkInterface',
        'InvalidParameterCombination',
        'You cannot specify a count of IPv4 prefixes together with a count of private IPv4 addresses',
      );
    }
    if (prefixCount < 0 || prefixCount > 49) {
      this.#fail('CreateNetworkInterface', 'InvalidParameterValue', 'Ipv4PrefixCount out of range');
    }
    if (this.freeAddresses(subnet.subnetId) < 1 + input.secondaryIpCount) {
      this.#fail(
        'CreateNetworkInterface',
        'InsufficientFreeAddressesInSubnet',
        `There are not enough free addresses in subnet '${subnet.subnetId}' to satisfy the requested number of instances.`,
      );
    }
    // Prefixes first: a refused create must leave the subnet as it found it.
    const prefixes = this.#allocatePrefixes(subnet, prefixCount);
    if (prefixes.length < prefixCount) {
      for (const prefix of prefixes) this.#freePrefix(subnet, prefix);
      this.#fail(
        'CreateNetworkInterface',
        'InsufficientCidrBlocks',
        'The specified subnet does not have enough free cidr blocks to satisfy the request.',
      );
    }
    const [primaryIp, ...secondaryIps] = this.#allocateAll(
      'CreateNetworkInterface',
      subnet,
      1 + input.secondaryIpCount,
      () => {
        for (const prefix of prefixes) this.#freePrefix(subnet, prefix);
      },
    );
    const eni: Eni = {
      eniId: `eni-${this.#hex(17)}`,
      subnetId: subnet.subnetId,
      primaryIp: primaryIp ?? '',
      macAddress: this.#mac(),
      secondaryIps,
      prefixes,
      securityGroupIds: input.securityGroupIds,
      tags: [...input.tags],
      primaryOfInstance: false,
    };
    this.#enis.set(eni.eniId, eni);
    this.#tokens.set(input.clientToken, { eniId: eni.eniId, params });
    this.#snapshot(eni.eniId);
    return this.#ok('CreateNetworkInterface', this.#view(eni));
  }

  async attachNetworkInterface(input: {
    eniId: string;
    instanceId: string;
    deviceIndex: number;
  }): Promise<{ attachmentId: string }> {
    const action = 'AttachNetworkInterface';
    this.#enter(action);
    const eni = this.#eni(action, input.eniId);
    const instance = this.#instances.get(input.instanceId);
    if (!instance || instance.state === 'terminated') {
      this.#fail(
        action,
        'InvalidInstanceID.NotFound',
        `The instance ID '${input.instanceId}' does not exist`,
      );
    }
    if (instance.state !== 'running' && instance.state !== 'stopped') {
      this.#fail(
        action,
        'IncorrectInstanceState',
        `The instance '${instance.instanceId}' is not in a valid state`,
      );
    }
    if (eni.attachment) {
      // EC2's own answer to attaching an attached interface.
      this.#fail(action, 'InvalidNetworkInterface.InUse', `Interface: [${eni.eniId}] in use.`);
    }
    const attached = [...this.#enis.values()].filter((other) => {
      this.#settle(other);
      return other.attachment?.instanceId === instance.instanceId;
    });
    const limits = INSTANCE_TYPES[instance.instanceType];
    if (attached.length >= (limits?.maxNetworkInterfaces ?? 1)) {
      this.#fail(
        action,
        'AttachmentLimitExceeded',
        `Interface count ${attached.length + 1} exceeds the limit for ${instance.instanceType}`,
      );
    }
    if (attached.some((other) => other.attachment?.deviceIndex === input.deviceIndex)) {
      this.#fail(
        action,
        'InvalidParameterValue',
        `Instance '${instance.instanceId}' already has an interface attached at device index '${input.deviceIndex}'.`,
      );
    }
    if (slotsUsed(eni) > (limits?.ipv4PerInterface ?? 1)) {
      this.#fail(
        action,
        'PrivateIpAddressLimitExceeded',
        `Number of private addresses on ${eni.eniId} exceeds the limit for ${instance.instanceType}`,
      );
    }
    const attachmentId = `eni-attach-${this.#hex(17)}`;
    eni.attachment = {
      attachmentId,
      instanceId: instance.instanceId,
      deviceIndex: input.deviceIndex,
      deleteOnTermination: false,
    };
    this.#snapshot(eni.eniId);
    return this.#ok(action, { attachmentId });
  }

  async setDeleteOnTermination(input: { eniId: string; attachmentId: string }): Promise<void> {
    const action = 'ModifyNetworkInterfaceAttribute';
    this.#enter(action);
    const eni = this.#eni(action, input.eniId);
    if (eni.attachment?.attachmentId !== input.attachmentId || eni.attachment.detachAt) {
      this.#fail(
        action,
        'InvalidAttachmentID.NotFound',
        `The attachment ID '${input.attachmentId}' does not exist`,
      );
    }
    eni.attachment.deleteOnTermination = true;
    this.#snapshot(eni.eniId);
    this.#ok(action, undefined);
  }

  async assignPrivateIpAddresses(input: {
    eniId: string;
    count: number;
  }): Promise<readonly string[]> {
    const action = 'AssignPrivateIpAddresses';
    this.#enter(action);
    const eni = this.#eni(action, input.eniId);
    if (input.count < 1) {
      this.#fail(
        action,
        'InvalidParameterValue',
        'SecondaryPrivateIpAddressCount must be positive',
      );
    }
    this.#requireSlots(action, eni, input.count);
    const subnet = this.#subnet(eni.subnetId);
    if (this.freeAddresses(subnet.subnetId) < input.count) {
      this.#fail(
        action,
        'InsufficientFreeAddressesInSubnet',
        `There are not enough free addresses in subnet '${subnet.subnetId}'.`,
      );
    }
    const ips = this.#allocateAll(action, subnet, input.count);
    eni.secondaryIps.push(...ips);
    this.#snapshot(eni.eniId);
    return this.#ok(action, ips);
  }

  async unassignPrivateIpAddresses(input: {
    eniId: string;
    ips: readonly string[];
  }): Promise<void> {
    const action = 'UnassignPrivateIpAddresses';
    this.#enter(action);
    const eni = this.#eni(action, input.eniId);
    for (const ip of input.ips) {
      if (ip === eni.primaryIp) {
        this.#fail(
          action,
          'InvalidParameterValue',
          `The primary address ${ip} cannot be unassigned`,
        );
      }
    }
    this.#unassign(action, eni, eni.secondaryIps, input.ips, 'addresses', (subnet, ip) =>
      this.#free(subnet, ip),
    );
  }

  async assignIpv4Prefixes(input: { eniId: string; count: number }): Promise<readonly string[]> {
    const action = 'AssignPrivateIpAddresses';
    this.#enter(action);
    const eni = this.#eni(action, input.eniId);
    if (input.count < 1) {
      this.#fail(action, 'InvalidParameterValue', 'Ipv4PrefixCount must be positive');
    }
    const instance = eni.attachment ? this.#instances.get(eni.attachment.instanceId) : undefined;
    if (instance && !INSTANCE_TYPES[instance.instanceType]?.prefixDelegation) {
      this.#fail(
        action,
        'InvalidParameterValue',
        `Prefix delegation is not supported for instance type ${instance.instanceType}`,
      );
    }
    this.#requireSlots(action, eni, input.count);
    const subnet = this.#subnet(eni.subnetId);
    const prefixes = this.#allocatePrefixes(subnet, input.count);
    if (prefixes.length < input.count) {
      for (const prefix of prefixes) this.#freePrefix(subnet, prefix);
      this.#fail(
        action,
        'InsufficientCidrBlocks',
        'The specified subnet does not have enough free cidr blocks to satisfy the request.',
      );
    }
    eni.prefixes.push(...prefixes);
    this.#snapshot(eni.eniId);
    return this.#ok(action, prefixes);
  }

  async unassignIpv4Prefixes(input: { eniId: string; prefixes: readonly string[] }): Promise<void> {
    const action = 'UnassignPrivateIpAddresses';
    this.#enter(action);
    const eni = this.#eni(action, input.eniId);
    this.#unassign(action, eni, eni.prefixes, input.prefixes, 'prefixes', (subnet, prefix) =>
      this.#freePrefix(subnet, prefix),
    );
  }

  /**
   * UnassignPrivateIpAddresses' common part: every item must be on the ENI (else nothing
   * changes), then each leaves `held` and goes back to the subnet.
   */
  #unassign(
    action: Ec2Action,
    eni: Eni,
    held: string[],
    items: readonly string[],
    what: 'addresses' | 'prefixes',
    free: (subnet: Subnet, item: string) => void,
  ): void {
    if (items.some((item) => !held.includes(item))) {
      this.#fail(
        action,
        'InvalidParameterValue',
        `Some of the specified ${what} are not assigned to interface ${eni.eniId}`,
      );
    }
    const subnet = this.#subnet(eni.subnetId);
    for (const item of items) {
      held.splice(held.indexOf(item), 1);
      free(subnet, item);
    }
    this.#snapshot(eni.eniId);
    this.#ok(action, undefined);
  }

  async detachNetworkInterface(input: { attachmentId: string }): Promise<void> {
    const action = 'DetachNetworkInterface';
    this.#enter(action);
    const eni = [...this.#enis.values()].find(
      (e) => e.attachment?.attachmentId === input.attachmentId,
    );
    if (!eni?.attachment || eni.attachment.detachAt !== undefined) {
      this.#fail(
        action,
        'InvalidAttachmentID.NotFound',
        `The attachment ID '${input.attachmentId}' does not exist`,
      );
    }
    if (eni.primaryOfInstance) {
      this.#fail(
        action,
        'OperationNotPermitted',
        'The primary network interface cannot be detached',
      );
    }
    eni.attachment.detachAt = this.#now() + this.#detachDelayMs;
    this.#snapshot(eni.eniId);
    this.#ok(action, undefined);
  }

  async deleteNetworkInterface(input: { eniId: string }): Promise<void> {
    const action = 'DeleteNetworkInterface';
    this.#enter(action);
    const eni = this.#eni(action, input.eniId);
    this.#settle(eni);
    if (eni.attachment) {
      this.#fail(
        action,
        'InvalidParameterValue',
        `Network interface '${eni.eniId}' is currently in use.`,
      );
    }
    this.#destroy(eni);
    this.#ok(action, undefined);
  }

  async createTags(input: {
    resourceIds: readonly string[];
    tags: readonly Ec2Tag[];
  }): Promise<void> {
    const action = 'CreateTags';
    this.#enter(action);
    const enis = input.resourceIds.map((id) => this.#eni(action, id));
    for (const eni of enis) {
      const keys = new Set(input.tags.map((tag) => tag.key));
      eni.tags = [...eni.tags.filter((tag) => !keys.has(tag.key)), ...input.tags];
      this.#snapshot(eni.eniId);
    }
    this.#ok(action, undefined);
  }

  // ---- internals ------------------------------------------------------------------------------

  /** Throttling, then injected failures: both refuse the call before it changes anything. */
  #enter(action: Ec2Action): void {
    this.counts.set(action, (this.counts.get(action) ?? 0) + 1);
    const spec = this.#bucketSpecs[action];
    const now = this.#now();
    const outcome = takeTokens(spec, this.#buckets.get(action) ?? fullBucket(spec, now), now);
    this.#buckets.set(action, outcome.state);
    if (!outcome.granted || (this.throttleRate > 0 && this.#random() < this.throttleRate)) {
      this.throttled++;
      this.#fail(action, 'RequestLimitExceeded', 'Request limit exceeded.');
    }
    const index = this.#injected.findIndex((e) => e.action === action);
    const injected = index >= 0 ? this.#injected.splice(index, 1)[0] : undefined;
    if (injected) this.#fail(action, injected.code, injected.message);
  }

  #ok<T>(action: Ec2Action, value: T): T {
    if (this.#recordCalls) this.calls.push({ action, at: this.#now(), outcome: 'ok' });
    return value;
  }

  #fail(action: Ec2Action, code: string, message: string): never {
    if (this.#recordCalls) this.calls.push({ action, at: this.#now(), outcome: 'error', code });
    throw new FakeEc2Error(code, message);
  }

  #eni(action: Ec2Action, eniId: string): Eni {
    const eni = this.#enis.get(eniId);
    if (!eni) {
      this.#fail(
        action,
        'InvalidNetworkInterfaceID.NotFound',
        `The networkInterface ID '${eniId}' does not exist`,
      );
    }
    this.#settle(eni);
    return eni;
  }

  #subnet(subnetId: string): Subnet {
    const subnet = this.#subnets.get(subnetId);
    if (!subnet) throw new FakeEc2Error('InvalidSubnetID.NotFound', `no subnet ${subnetId}`);
    return subnet;
  }

  /** Completes a detach whose time has come. */
  #settle(eni: Eni): void {
    const detachAt = eni.attachment?.detachAt;
    if (detachAt !== undefined && this.#now() >= detachAt) {
      eni.attachment = undefined;
      this.#snapshot(eni.eniId);
    }
  }

  /** Refuses `count` more slots (addresses or prefixes) than the ENI's instance type allows. */
  #requireSlots(action: Ec2Action, eni: Eni, count: number): void {
    if (slotsUsed(eni) + count > this.#slotLimit(eni)) {
      this.#fail(
        action,
        'PrivateIpAddressLimitExceeded',
        `Number of private addresses will exceed limit.`,
      );
    }
  }

  /** Secondary slots of the ENI's instance type (50, EC2's most, while unattached). */
  #slotLimit(eni: Eni): number {
    const instance = eni.attachment ? this.#instances.get(eni.attachment.instanceId) : undefined;
    return instance ? (INSTANCE_TYPES[instance.instanceType]?.ipv4PerInterface ?? 50) : 50;
  }

  #destroy(eni: Eni): void {
    const subnet = this.#subnet(eni.subnetId);
    for (const ip of [eni.primaryIp, ...eni.secondaryIps]) this.#free(subnet, ip);
    for (const prefix of eni.prefixes) this.#freePrefix(subnet, prefix);
    this.#enis.delete(eni.eniId);
    this.#snapshot(eni.eniId);
  }

  /** Single addresses: released ones oldest first, then never used ones in order. */
  #allocate(subnet: Subnet, count: number): string[] {
    const out: string[] = [];
    while (out.length < count) {
      let offset: number | undefined;
      while (offset === undefined && subnet.releasedHead < subnet.released.length) {
        const candidate = subnet.released[subnet.releasedHead++];
        // A released address may have gone into a prefix or to another tenant since.
        if (
          candidate !== undefined &&
          !subnet.used.has(candidate) &&
          !this.#inPrefixReservation(subnet, candidate)
        ) {
          offset = candidate;
        }
      }
      while (offset === undefined && subnet.next < subnet.size - 1) {
        const candidate = subnet.next++;
        if (!subnet.used.has(candidate) && !this.#inPrefixReservation(subnet, candidate)) {
          offset = candidate;
        }
      }
      if (subnet.releasedHead > 1024 && subnet.releasedHead * 2 > subnet.released.length) {
        subnet.released.splice(0, subnet.releasedHead);
        subnet.releasedHead = 0;
      }
      if (offset === undefined) break;
      this.#take(subnet, offset);
      out.push(this.#ipAt(subnet, offset));
    }
    return out;
  }

  /**
   * `count` single addresses, or none and the call refused: the free addresses left may all lie
   * in a prefix reservation. `undo` gives back what the call took before.
   */
  #allocateAll(action: Ec2Action, subnet: Subnet, count: number, undo?: () => void): string[] {
    const ips = this.#allocate(subnet, count);
    if (ips.length < count) {
      for (const ip of ips) this.#free(subnet, ip);
      undo?.();
      this.#fail(
        action,
        'InsufficientFreeAddressesInSubnet',
        `There are not enough free addresses in subnet '${subnet.subnetId}'.`,
      );
    }
    return ips;
  }

  /**
   * Whole aligned /28 blocks, lowest first, those of a prefix reservation before the rest; fewer
   * than `count` when the subnet has no more.
   */
  #allocatePrefixes(subnet: Subnet, count: number): string[] {
    const out: string[] = [];
    const ranges = [...subnet.prefixReservations, { start: 0, end: subnet.size }];
    for (const { start, end } of ranges) {
      for (let block = start / BLOCK; out.length < count && block * BLOCK < end; block++) {
        if ((subnet.blockUse.get(block) ?? 0) > 0) continue;
        for (let offset = block * BLOCK; offset < (block + 1) * BLOCK; offset++) {
          this.#take(subnet, offset);
        }
        out.push(`${this.#ipAt(subnet, block * BLOCK)}/28`);
      }
    }
    return out;
  }

  #inPrefixReservation(subnet: Subnet, offset: number): boolean {
    return subnet.prefixReservations.some(({ start, end }) => offset >= start && offset < end);
  }

  #take(subnet: Subnet, offset: number): void {
    subnet.used.add(offset);
    const block = Math.floor(offset / BLOCK);
    subnet.blockUse.set(block, (subnet.blockUse.get(block) ?? 0) + 1);
  }

  #free(subnet: Subnet, ip: string): void {
    const offset = this.#offsetOf(subnet, ip);
    if (offset === undefined || !subnet.used.delete(offset)) return;
    const block = Math.floor(offset / BLOCK);
    const left = (subnet.blockUse.get(block) ?? 1) - 1;
    if (left > 0) subnet.blockUse.set(block, left);
    else subnet.blockUse.delete(block);
    subnet.released.push(offset);
  }

  #freePrefix(subnet: Subnet, prefix: string): void {
    const block = parseCidr(prefix);
    if (!block) return;
    for (let i = 0; i < BLOCK; i++) {
      this.#free(subnet, formatIp({ family: 'IPv4', value: block.network + BigInt(i) }));
    }
  }

  #ipAt(subnet: Subnet, offset: number): string {
    return formatIp({ family: 'IPv4', value: subnet.network + BigInt(offset) });
  }

  #offsetOf(subnet: Subnet, ip: string): number | undefined {
    const parsed = parseCidr(`${ip}/32`);
    return parsed ? Number(parsed.network - subnet.network) : undefined;
  }

  #view(eni: Eni): Ec2NetworkInterface {
    const attachment = eni.attachment;
    return {
      eniId: eni.eniId,
      subnetId: eni.subnetId,
      status: attachment
        ? attachment.detachAt !== undefined
          ? 'detaching'
          : 'in-use'
        : 'available',
      primaryIp: eni.primaryIp,
      macAddress: eni.macAddress,
      secondaryIps: [...eni.secondaryIps],
      ipv4Prefixes: [...eni.prefixes],
      ...(attachment
        ? {
            attachment: {
              attachmentId: attachment.attachmentId,
              instanceId: attachment.instanceId,
              deviceIndex: attachment.deviceIndex,
              status: attachment.detachAt !== undefined ? 'detaching' : 'attached',
              deleteOnTermination: attachment.deleteOnTermination,
            },
          }
        : {}),
      tags: [...eni.tags],
      securityGroupIds: eni.securityGroupIds,
    };
  }

  #instanceView(instance: Instance, attached: readonly Eni[]): Ec2Instance {
    return {
      instanceId: instance.instanceId,
      instanceType: instance.instanceType,
      state: instance.state,
      subnetId: instance.subnetId,
      availabilityZone: instance.availabilityZone,
      securityGroupIds: instance.securityGroupIds,
      networkInterfaces: attached.map((eni) => ({
        eniId: eni.eniId,
        deviceIndex: eni.attachment?.deviceIndex ?? 0,
        attachmentId: eni.attachment?.attachmentId ?? '',
        subnetId: eni.subnetId,
        primaryIp: eni.primaryIp,
        macAddress: eni.macAddress,
        secondaryIps: [...eni.secondaryIps],
        ipv4Prefixes: [...eni.prefixes],
      })),
    };
  }

  #snapshot(eniId: string): void {
    if (this.#describeLagMs <= 0) return;
    const eni = this.#enis.get(eniId);
    const list = this.#history.get(eniId) ?? [];
    list.push({ at: this.#now(), view: eni ? this.#view(eni) : undefined });
    this.#history.set(eniId, list);
  }

  /** What Describe shows: the present, or with a lag, each ENI as it was `describeLagMs` ago. */
  #visibleInterfaces(): Ec2NetworkInterface[] {
    for (const eni of this.#enis.values()) this.#settle(eni);
    if (this.#describeLagMs <= 0) {
      return [...this.#enis.values()].map((eni) => this.#view(eni));
    }
    const horizon = this.#now() - this.#describeLagMs;
    const views: Ec2NetworkInterface[] = [];
    for (const [eniId, list] of this.#history) {
      let shown: Ec2NetworkInterface | undefined;
      let kept = 0;
      list.forEach((entry, i) => {
        if (entry.at <= horizon) {
          shown = entry.view;
          kept = i;
        }
      });
      // Entries older than the one shown can never be shown again.
      if (kept > 0) list.splice(0, kept);
      if (list.length === 1 && list[0]?.view === undefined && (list[0]?.at ?? 0) <= horizon) {
        this.#history.delete(eniId);
      }
      if (shown) views.push(shown);
    }
    return views;
  }

  #hex(length: number): string {
    this.#seq++;
    return this.#seq.toString(16).padStart(length, '0');
  }

  /** Moves the id sequence past `id` when it is one of the fake's shape (`eni-<hex>`). */
  #passId(id: string): void {
    const hex = /-([0-9a-f]+)$/.exec(id)?.[1];
    if (hex !== undefined) this.#seq = Math.max(this.#seq, Number.parseInt(hex, 16));
  }

  /** A locally administered unicast MAC, as EC2 gives every interface (`0a:…`, 6 octets). */
  #mac(): string {
    const octets = this.#hex(10).match(/../g) ?? [];
    return ['0a', ...octets].join(':');
  }
}

/** Slots an ENI fills against its type's IPv4 limit: its primary, each address, each prefix. */
function slotsUsed(eni: Eni): number {
  return 1 + eni.secondaryIps.length + eni.prefixes.length;
}

/** EC2 filter semantics for the filters berth uses: values OR'ed, filters AND'ed. */
function matches(
  eni: Ec2NetworkInterface,
  filters: Readonly<Record<string, readonly string[]>>,
): boolean {
  return Object.entries(filters).every(([name, values]) => {
    if (name.startsWith('tag:')) {
      const key = name.slice(4);
      return eni.tags.some((tag) => tag.key === key && values.includes(tag.value));
    }
    switch (name) {
      case 'tag-key':
        return eni.tags.some((tag) => values.includes(tag.key));
      case 'status':
        return values.includes(eni.status);
      case 'attachment.instance-id':
        return eni.attachment !== undefined && values.includes(eni.attachment.instanceId);
      case 'subnet-id':
        return values.includes(eni.subnetId);
      case 'network-interface-id':
        return values.includes(eni.eniId);
      default:
        throw new FakeEc2Error('InvalidParameterValue', `The filter '${name}' is invalid`);
    }
  });
}

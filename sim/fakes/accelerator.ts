/**
 * A faithful in-memory Global Accelerator custom routing for berth's `CustomRoutingApi`: an
 * accelerator with a listener port range, endpoint groups with a destination port range and VPC
 * subnet endpoints, the static port mappings between them, destinations allowed and denied in
 * batches, and the accelerator's deployment status.
 *
 * Behaviour modelled (AWS Global Accelerator Developer Guide, "How custom routing accelerators
 * work" and its example; API Reference, "AddCustomRoutingEndpoints", "AllowCustomRoutingTraffic",
 * "ListCustomRoutingPortMappings"):
 * - Adding a subnet maps every destination of it, each usable address (the subnet minus the five
 *   addresses AWS reserves, which are not mapped) times each destination port, onto one listener
 *   port each; the mappings never change. The guide's example maps them in order (first address,
 *   first port → first listener port) but says the real order is not predictable: the fake maps
 *   in order, or shuffled within the subnet's block with `mappingOrder: 'shuffled'`, so a caller
 *   cannot lean on the order. A subnet added later takes the next listener ports and leaves the
 *   others' mappings alone; a subnet removed loses its mappings (ListCustomRoutingPortMappings).
 * - Too few listener ports left for a subnet's destinations → `LimitExceededException`; a subnet
 *   outside /28–/17 (Developer Guide, "Guidelines and restrictions for custom routing
 *   accelerators") → `InvalidArgumentException`. The API reference's sizing note ("a /24 requires
 *   at least 255 ports" per destination port) and the guide's example (251 per /24) disagree; the
 *   fake needs a port per mapped destination, as the example has.
 * - Every destination starts denied. Allow/Deny take addresses × ports (at most 100 of each;
 *   no ports = the group's whole range); an address not mapped in the subnet, a port outside the
 *   group's range or a subnet not in the group → `InvalidArgumentException`; an unknown group →
 *   `EndpointGroupNotFoundException`. A change shows in the listings at once and puts the
 *   accelerator `IN_PROGRESS` for `deployDelayMs`; a destination carries (or stops carrying)
 *   traffic only once its change is deployed.
 * - Listings: pages of at most 20,000 mappings in accelerator port order; a bad token →
 *   `InvalidNextTokenException`; ListCustomRoutingPortMappingsByDestination of a subnet that is
 *   no endpoint → `EndpointNotFoundException`.
 *
 * Throttling: no published Global Accelerator API rate was found (its SDK models no throttling
 * error). The fake answers `ThrottlingException` ("Rate exceeded"), the JSON protocol's
 * throttling code the SDK retries, from assumed, conservative buckets: reads 10 refilled at 5 per
 * second, Allow/Deny 5 refilled at 1 per second; pass `buckets` to change them.
 */

import type { BucketSpec } from '../../shared/ec2/token-bucket.js';
import {
  type AcceleratorAction,
  type CustomRoutingAccelerator,
  type CustomRoutingApi,
  type CustomRoutingEndpointGroup,
  type CustomRoutingProtocol,
  type DestinationBatch,
  type DestinationTrafficState,
  MAX_DESTINATIONS_PER_CALL,
  MAX_MAPPINGS_PER_PAGE,
  type MappingPage,
  type PortMapping,
} from '../../shared/fronts/accelerator.js';
import { formatIp, parseCidr, parseIp } from '../../shared/net/ip.js';
import { ApiGate, type FakeApiCall, FakeAwsError } from './api-gate.js';

/** The buckets the fake meters Global Accelerator's actions by. */
export type AcceleratorActionClass = 'read' | 'mutate';

/** Which bucket each action draws from. */
export const ACCELERATOR_ACTION_CLASS: Readonly<Record<AcceleratorAction, AcceleratorActionClass>> =
  {
    DescribeCustomRoutingAccelerator: 'read',
    DescribeCustomRoutingEndpointGroup: 'read',
    ListCustomRoutingPortMappings: 'read',
    ListCustomRoutingPortMappingsByDestination: 'read',
    AllowCustomRoutingTraffic: 'mutate',
    DenyCustomRoutingTraffic: 'mutate',
  };

/** The fake's default buckets: assumed, none being published (see the header). */
export const ACCELERATOR_DEFAULT_BUCKETS: Readonly<Record<AcceleratorActionClass, BucketSpec>> = {
  read: { capacity: 10, refillPerSecond: 5 },
  mutate: { capacity: 5, refillPerSecond: 1 },
};

/** Actions that change state. */
export const ACCELERATOR_MUTATING_ACTIONS: ReadonlySet<AcceleratorAction> = new Set([
  'AllowCustomRoutingTraffic',
  'DenyCustomRoutingTraffic',
]);

/** The smallest and largest subnet an endpoint may be (prefix lengths). */
const SUBNET_PREFIX = { smallest: 28, largest: 17 } as const;
/** A subnet's first four addresses and its last are AWS's, and not mapped. */
const RESERVED_HEAD = 4;
const RESERVED = 5;
const ACCOUNT = '123456789012';
const ALLOW = 1;
const DENY = 0;

/** One call the fake answered (or refused). */
export type FakeAcceleratorCall = FakeApiCall<AcceleratorAction>;

/** Options of the fake. */
export interface FakeAcceleratorOptions {
  /** Epoch ms; buckets refill and changes deploy on this clock. */
  readonly now: () => number;
  /** Uniform in [0, 1): drives `throttleRate` and a shuffled mapping. Defaults to Math.random. */
  readonly random?: () => number;
  /** How long a traffic change keeps the accelerator IN_PROGRESS (default 0). */
  readonly deployDelayMs?: number;
  /** Mappings in the guide's illustrative order (default) or shuffled within each subnet. */
  readonly mappingOrder?: 'sequential' | 'shuffled';
  /** Override the fake's buckets. */
  readonly buckets?: Partial<Record<AcceleratorActionClass, BucketSpec>>;
}

/** A subnet endpoint to add: its id and IPv4 CIDR. */
export interface FakeSubnetEndpoint {
  readonly subnetId: string;
  readonly cidr: string;
}

/** Where an accelerator port leads. */
export interface FakeDestination {
  readonly endpointGroupArn: string;
  readonly subnetId: string;
  readonly address: string;
  readonly port: number;
}

interface AcceleratorRecord {
  readonly view: Omit<CustomRoutingAccelerator, 'status'>;
  readonly fromPort: number;
  readonly toPort: number;
  readonly listenerArn: string;
  /** The next listener port a new subnet's mappings take. */
  nextPort: number;
  /** IN_PROGRESS until then. */
  deployedAt: number;
  /** The endpoint each listener port maps to, and the destination (cell) within it. */
  readonly portEndpoint: (EndpointRecord | undefined)[];
  readonly portCell: Int32Array;
}

interface GroupRecord {
  view: CustomRoutingEndpointGroup;
  readonly accelerator: AcceleratorRecord;
  readonly endpoints: EndpointRecord[];
}

/** A subnet about to be mapped. */
interface SubnetBlock {
  readonly subnetId: string;
  /** The subnet's network address. */
  readonly network: bigint;
  /** Mapped addresses: the subnet's minus the five reserved. */
  readonly addresses: number;
  /** Destination ports per address. */
  readonly ports: number;
}

/** A subnet endpoint: destination (cell) c is address index ⌊c / ports⌋ and port c mod ports. */
interface EndpointRecord extends SubnetBlock {
  readonly group: GroupRecord;
  /** The listener port of each cell. */
  readonly acceleratorPort: Int32Array;
  /** The configured state of each cell, and the one before its last change. */
  readonly state: Uint8Array;
  readonly previous: Uint8Array;
  /** When each cell last changed. */
  readonly changedAt: Float64Array;
}

/** The fake Global Accelerator of one account. */
export class FakeCustomRoutingAccelerator implements CustomRoutingApi {
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #deployDelayMs: number;
  readonly #shuffled: boolean;
  readonly #gate: ApiGate<AcceleratorAction, AcceleratorActionClass>;
  readonly #accelerators = new Map<string, AcceleratorRecord>();
  readonly #groups = new Map<string, GroupRecord>();
  readonly #endpoints = new Map<string, EndpointRecord>();
  #last: AcceleratorRecord | undefined;
  #seq = 0;

  constructor(options: FakeAcceleratorOptions) {
    this.#now = options.now;
    this.#random = options.random ?? Math.random;
    this.#deployDelayMs = options.deployDelayMs ?? 0;
    this.#shuffled = options.mappingOrder === 'shuffled';
    this.#gate = new ApiGate(
      {
        classOf: ACCELERATOR_ACTION_CLASS,
        buckets: { ...ACCELERATOR_DEFAULT_BUCKETS, ...options.buckets },
        throttleCode: 'ThrottlingException',
        throttleMessage: 'Rate exceeded',
      },
      options.now,
      this.#random,
    );
  }

  // ---- steering and inspection ----------------------------------------------------------------

  /** Probability that any call is answered `ThrottlingException` before it does anything. */
  get throttleRate(): number {
    return this.#gate.throttleRate;
  }
  set throttleRate(rate: number) {
    this.#gate.throttleRate = rate;
  }

  /** Every call, in order. */
  get calls(): readonly FakeAcceleratorCall[] {
    return this.#gate.calls;
  }

  /** Calls per action, ok or not. */
  get counts(): ReadonlyMap<AcceleratorAction, number> {
    return this.#gate.counts;
  }

  /** Calls refused with `ThrottlingException`. */
  get throttled(): number {
    return this.#gate.throttled;
  }

  /** Allow and Deny calls made, ok or not. */
  mutatingCalls(): number {
    return this.#gate.countOf(ACCELERATOR_MUTATING_ACTIONS);
  }

  /** Makes the next call of `action` fail with `code` (queued; each injection fails one call). */
  failNext(action: AcceleratorAction, code: string, message?: string): void {
    this.#gate.failNext(action, code, message);
  }

  /** Creates a custom routing accelerator with one listener over `listenerPortRange`. */
  createAccelerator(input: {
    readonly listenerPortRange: readonly [number, number];
  }): CustomRoutingAccelerator {
    const [fromPort, toPort] = input.listenerPortRange;
    if (!validPort(fromPort) || !validPort(toPort) || fromPort > toPort) {
      throw new FakeAwsError(
        'InvalidPortRangeException',
        `bad listener port range ${fromPort}-${toPort}`,
      );
    }
    const n = ++this.#seq;
    const id = `${hex(n, 8)}-0000-4000-8000-${hex(n, 12)}`;
    const arn = `arn:aws:globalaccelerator::${ACCOUNT}:accelerator/${id}`;
    const record: AcceleratorRecord = {
      view: {
        arn,
        ipAddresses: [`75.2.${n % 256}.10`, `99.83.${n % 256}.10`],
        dnsName: `${hex(n, 16)}.awsglobalaccelerator.com`,
      },
      fromPort,
      toPort,
      listenerArn: `${arn}/listener/${hex(n, 8)}`,
      nextPort: fromPort,
      deployedAt: this.#now(),
      portEndpoint: [],
      portCell: new Int32Array(toPort + 1),
    };
    this.#accelerators.set(arn, record);
    this.#last = record;
    return this.#acceleratorView(record);
  }

  /**
   * Adds an endpoint group with its subnets to an accelerator (the last one created unless
   * named) and maps every destination of each subnet, in order, onto the next listener ports.
   */
  addEndpointGroup(input: {
    readonly acceleratorArn?: string;
    readonly fromPort: number;
    readonly toPort: number;
    readonly protocols: readonly CustomRoutingProtocol[];
    readonly subnets: readonly FakeSubnetEndpoint[];
  }): CustomRoutingEndpointGroup {
    const accelerator =
      input.acceleratorArn === undefined
        ? this.#last
        : this.#accelerators.get(input.acceleratorArn);
    if (!accelerator) throw new FakeAwsError('AcceleratorNotFoundException', 'no such accelerator');
    if (!validPort(input.fromPort) || !validPort(input.toPort) || input.fromPort > input.toPort) {
      throw new FakeAwsError(
        'InvalidPortRangeException',
        `bad destination port range ${input.fromPort}-${input.toPort}`,
      );
    }
    const ports = input.toPort - input.fromPort + 1;
    const blocks = this.#endpointBlocks(accelerator, ports, input.subnets);
    const group: GroupRecord = {
      view: {
        arn: `${accelerator.listenerArn}/endpoint-group/${hex(++this.#seq, 12)}`,
        fromPort: input.fromPort,
        toPort: input.toPort,
        protocols: [...input.protocols],
        subnetIds: [],
      },
      accelerator,
      endpoints: [],
    };
    this.#groups.set(group.view.arn, group);
    this.#mapEndpoints(group, blocks);
    return group.view;
  }

  /**
   * Adds subnets to an endpoint group (AddCustomRoutingEndpoints): their destinations take the
   * next listener ports; the mappings already made do not change.
   */
  addEndpoints(endpointGroupArn: string, subnets: readonly FakeSubnetEndpoint[]): void {
    const group = this.#groups.get(endpointGroupArn);
    if (!group) throw new FakeAwsError('EndpointGroupNotFoundException', 'no such endpoint group');
    const ports = group.view.toPort - group.view.fromPort + 1;
    this.#mapEndpoints(group, this.#endpointBlocks(group.accelerator, ports, subnets));
  }

  /**
   * Removes a subnet from its endpoint group (RemoveCustomRoutingEndpoints): its mappings are
   * reclaimed, and the fake never hands their listener ports to another subnet.
   */
  removeEndpoint(subnetId: string): void {
    const endpoint = this.#endpoints.get(subnetId);
    if (!endpoint)
      throw new FakeAwsError('EndpointNotFoundException', `${subnetId} is no endpoint`);
    const { group } = endpoint;
    for (const port of endpoint.acceleratorPort) group.accelerator.portEndpoint[port] = undefined;
    group.endpoints.splice(group.endpoints.indexOf(endpoint), 1);
    group.view = { ...group.view, subnetIds: group.endpoints.map((e) => e.subnetId) };
    this.#endpoints.delete(subnetId);
  }

  /** Whether a destination is configured ALLOW or DENY (as the listings show it). */
  destinationState(subnetId: string, address: string, port: number): DestinationTrafficState {
    const { endpoint, cell } = this.#cellOf(subnetId, address, port);
    return endpoint.state[cell] === ALLOW ? 'ALLOW' : 'DENY';
  }

  /** Whether traffic reaches a destination now: allowed, and that change deployed. */
  reachable(subnetId: string, address: string, port: number): boolean {
    const { endpoint, cell } = this.#cellOf(subnetId, address, port);
    const deployed = (endpoint.changedAt[cell] ?? 0) + this.#deployDelayMs <= this.#now();
    return (deployed ? endpoint.state[cell] : endpoint.previous[cell]) === ALLOW;
  }

  /** The listener port a destination is mapped to. */
  acceleratorPortOf(subnetId: string, address: string, port: number): number {
    const { endpoint, cell } = this.#cellOf(subnetId, address, port);
    return endpoint.acceleratorPort[cell] ?? -1;
  }

  /** Where a listener port of an accelerator (the last created unless named) leads. */
  destinationOf(acceleratorPort: number, acceleratorArn?: string): FakeDestination | undefined {
    const accelerator =
      acceleratorArn === undefined ? this.#last : this.#accelerators.get(acceleratorArn);
    const endpoint = accelerator?.portEndpoint[acceleratorPort];
    if (!accelerator || !endpoint) return undefined;
    const mapping = this.#mapping(endpoint, accelerator.portCell[acceleratorPort] ?? 0);
    return {
      endpointGroupArn: mapping.endpointGroupArn,
      subnetId: mapping.endpointId,
      address: mapping.destinationAddress,
      port: mapping.destinationPort,
    };
  }

  /** Destinations configured ALLOW, over every endpoint. */
  allowedCount(): number {
    let total = 0;
    for (const endpoint of this.#endpoints.values()) {
      for (const state of endpoint.state) total += state;
    }
    return total;
  }

  // ---- CustomRoutingApi -----------------------------------------------------------------------

  async describeAccelerator(acceleratorArn: string): Promise<CustomRoutingAccelerator> {
    const action = 'DescribeCustomRoutingAccelerator';
    this.#gate.enter(action);
    return this.#gate.ok(action, this.#acceleratorView(this.#accelerator(action, acceleratorArn)));
  }

  async describeEndpointGroup(endpointGroupArn: string): Promise<CustomRoutingEndpointGroup> {
    const action = 'DescribeCustomRoutingEndpointGroup';
    this.#gate.enter(action);
    return this.#gate.ok(action, this.#group(action, endpointGroupArn).view);
  }

  async listPortMappings(
    acceleratorArn: string,
    endpointGroupArn: string,
    nextToken?: string,
  ): Promise<MappingPage> {
    const action = 'ListCustomRoutingPortMappings';
    this.#gate.enter(action);
    const accelerator = this.#accelerator(action, acceleratorArn);
    const group = this.#group(action, endpointGroupArn);
    if (group.accelerator !== accelerator) {
      this.#gate.fail(
        action,
        'EndpointGroupNotFoundException',
        `${endpointGroupArn} is not an endpoint group of ${acceleratorArn}`,
      );
    }
    const start = this.#resume(action, nextToken, accelerator.fromPort, accelerator.toPort + 1);
    const mappings: PortMapping[] = [];
    let port = start;
    for (; port <= accelerator.toPort && mappings.length < MAX_MAPPINGS_PER_PAGE; port++) {
      const endpoint = accelerator.portEndpoint[port];
      if (endpoint?.group !== group) continue;
      mappings.push(this.#mapping(endpoint, accelerator.portCell[port] ?? 0));
    }
    const more = group.endpoints.some((e) => portsFrom(e, port));
    return this.#gate.ok(action, page(mappings, more ? port : undefined));
  }

  async listPortMappingsByDestination(
    endpointId: string,
    destinationAddress: string,
    nextToken?: string,
  ): Promise<MappingPage> {
    const action = 'ListCustomRoutingPortMappingsByDestination';
    this.#gate.enter(action);
    const endpoint =
      this.#endpoints.get(endpointId) ??
      this.#gate.fail(action, 'EndpointNotFoundException', `${endpointId} is not an endpoint`);
    const index = addressIndex(endpoint, destinationAddress);
    if (index === undefined) {
      this.#gate.fail(
        action,
        'InvalidArgumentException',
        `${destinationAddress} is not a mapped address of ${endpointId}`,
      );
    }
    const start = this.#resume(action, nextToken, 0, endpoint.ports);
    const end = Math.min(endpoint.ports, start + MAX_MAPPINGS_PER_PAGE);
    const mappings: PortMapping[] = [];
    for (let p = start; p < end; p++)
      mappings.push(this.#mapping(endpoint, index * endpoint.ports + p));
    return this.#gate.ok(action, page(mappings, end < endpoint.ports ? end : undefined));
  }

  async allowTraffic(batch: DestinationBatch): Promise<void> {
    this.#setTraffic('AllowCustomRoutingTraffic', batch, ALLOW);
  }

  async denyTraffic(batch: DestinationBatch): Promise<void> {
    this.#setTraffic('DenyCustomRoutingTraffic', batch, DENY);
  }

  // ---- internals ------------------------------------------------------------------------------

  #setTraffic(action: AcceleratorAction, batch: DestinationBatch, state: number): void {
    this.#gate.enter(action);
    const group = this.#group(action, batch.endpointGroupArn);
    const invalid = (message: string): never =>
      this.#gate.fail(action, 'InvalidArgumentException', message);
    const endpoint =
      group.endpoints.find((e) => e.subnetId === batch.endpointId) ??
      invalid(`${batch.endpointId} is not an endpoint of ${batch.endpointGroupArn}`);
    const { fromPort, toPort } = group.view;
    if (batch.addresses.length === 0 || batch.addresses.length > MAX_DESTINATIONS_PER_CALL) {
      invalid(`DestinationAddresses must hold 1 to ${MAX_DESTINATIONS_PER_CALL} addresses`);
    }
    if (
      batch.ports !== undefined &&
      (batch.ports.length === 0 || batch.ports.length > MAX_DESTINATIONS_PER_CALL)
    ) {
      invalid(`DestinationPorts must hold 1 to ${MAX_DESTINATIONS_PER_CALL} ports`);
    }
    const indexes = batch.addresses.map(
      (address) =>
        addressIndex(endpoint, address) ??
        invalid(`${address} is not a mapped address of ${batch.endpointId}`),
    );
    const ports = batch.ports ?? Array.from({ length: endpoint.ports }, (_, i) => fromPort + i);
    for (const port of ports) {
      if (!Number.isInteger(port) || port < fromPort || port > toPort) {
        invalid(`port ${port} is outside the endpoint group's range ${fromPort}-${toPort}`);
      }
    }
    const now = this.#now();
    for (const index of indexes) {
      for (const port of ports) {
        const cell = index * endpoint.ports + (port - fromPort);
        if (endpoint.state[cell] === state) continue;
        // A cell changed again before its last change deployed keeps what traffic saw then.
        if ((endpoint.changedAt[cell] ?? 0) + this.#deployDelayMs <= now) {
          endpoint.previous[cell] = endpoint.state[cell] ?? DENY;
        }
        endpoint.state[cell] = state;
        endpoint.changedAt[cell] = now;
      }
    }
    group.accelerator.deployedAt = Math.max(
      group.accelerator.deployedAt,
      now + this.#deployDelayMs,
    );
    this.#gate.ok(action, undefined);
  }

  /** Checks subnets to add: their size, that none is an endpoint, and that their destinations fit. */
  #endpointBlocks(
    accelerator: AcceleratorRecord,
    ports: number,
    subnets: readonly FakeSubnetEndpoint[],
  ): SubnetBlock[] {
    const blocks = subnets.map((subnet): SubnetBlock => {
      const block = parseCidr(subnet.cidr);
      const size = block?.prefixLength ?? 0;
      if (
        block?.family !== 'IPv4' ||
        size > SUBNET_PREFIX.smallest ||
        size < SUBNET_PREFIX.largest
      ) {
        throw new FakeAwsError(
          'InvalidArgumentException',
          `subnet ${subnet.subnetId} (${subnet.cidr}) must be an IPv4 /${SUBNET_PREFIX.largest} to /${SUBNET_PREFIX.smallest}`,
        );
      }
      if (this.#endpoints.has(subnet.subnetId)) {
        throw new FakeAwsError(
          'EndpointAlreadyExistsException',
          `${subnet.subnetId} is an endpoint`,
        );
      }
      const addresses = 2 ** block.hostBits - RESERVED;
      return { subnetId: subnet.subnetId, network: block.network, addresses, ports };
    });
    const needed = blocks.reduce((sum, b) => sum + b.addresses * ports, 0);
    const left = accelerator.toPort - accelerator.nextPort + 1;
    if (needed > left) {
      throw new FakeAwsError(
        'LimitExceededException',
        `the subnets' ${needed} destinations need more listener ports than the ${left} left`,
      );
    }
    return blocks;
  }

  /** Maps each subnet's destinations, in order, onto the accelerator's next listener ports. */
  #mapEndpoints(group: GroupRecord, blocks: readonly SubnetBlock[]): void {
    const { accelerator } = group;
    for (const block of blocks) {
      const cells = block.addresses * block.ports;
      const endpoint: EndpointRecord = {
        ...block,
        group,
        acceleratorPort: this.#portBlock(accelerator.nextPort, cells),
        state: new Uint8Array(cells),
        previous: new Uint8Array(cells),
        changedAt: new Float64Array(cells).fill(Number.NEGATIVE_INFINITY),
      };
      accelerator.nextPort += cells;
      endpoint.acceleratorPort.forEach((port, cell) => {
        accelerator.portEndpoint[port] = endpoint;
        accelerator.portCell[port] = cell;
      });
      group.endpoints.push(endpoint);
      this.#endpoints.set(endpoint.subnetId, endpoint);
    }
    group.view = { ...group.view, subnetIds: group.endpoints.map((e) => e.subnetId) };
  }

  /** `cells` listener ports from `first`: in order, or shuffled (Fisher-Yates) by `random`. */
  #portBlock(first: number, cells: number): Int32Array {
    const ports = Int32Array.from({ length: cells }, (_, i) => first + i);
    if (this.#shuffled) {
      for (let i = cells - 1; i > 0; i--) {
        const j = Math.floor(this.#random() * (i + 1));
        const swap = ports[i] ?? 0;
        ports[i] = ports[j] ?? 0;
        ports[j] = swap;
      }
    }
    return ports;
  }

  #mapping(endpoint: EndpointRecord, cell: number): PortMapping {
    const { view } = endpoint.group;
    const index = Math.floor(cell / endpoint.ports);
    return {
      acceleratorPort: endpoint.acceleratorPort[cell] ?? -1,
      endpointGroupArn: view.arn,
      endpointId: endpoint.subnetId,
      destinationAddress: formatIp({
        family: 'IPv4',
        value: endpoint.network + BigInt(RESERVED_HEAD + index),
      }),
      destinationPort: view.fromPort + (cell % endpoint.ports),
      protocols: view.protocols,
      trafficState: endpoint.state[cell] === ALLOW ? 'ALLOW' : 'DENY',
    };
  }

  #cellOf(subnetId: string, address: string, port: number) {
    const endpoint = this.#endpoints.get(subnetId);
    if (!endpoint) throw new Error(`${subnetId} is not an endpoint`);
    const index = addressIndex(endpoint, address);
    const offset = port - endpoint.group.view.fromPort;
    if (index === undefined || offset < 0 || offset >= endpoint.ports) {
      throw new Error(`${address}:${port} is not a destination of ${subnetId}`);
    }
    return { endpoint, cell: index * endpoint.ports + offset };
  }

  /** The position a page starts at: 0-based within [min, limit), from an opaque token. */
  #resume(action: AcceleratorAction, token: string | undefined, min: number, limit: number) {
    if (token === undefined) return min;
    const match = /^page-(\d+)$/.exec(token);
    const start = match ? Number(match[1]) : Number.NaN;
    if (!(start >= min && start < limit)) {
      this.#gate.fail(action, 'InvalidNextTokenException', `The token ${token} is not valid`);
    }
    return start;
  }

  #accelerator(action: AcceleratorAction, arn: string): AcceleratorRecord {
    return (
      this.#accelerators.get(arn) ??
      this.#gate.fail(action, 'AcceleratorNotFoundException', `Accelerator ${arn} not found`)
    );
  }

  #group(action: AcceleratorAction, arn: string): GroupRecord {
    return (
      this.#groups.get(arn) ??
      this.#gate.fail(action, 'EndpointGroupNotFoundException', `Endpoint group ${arn} not found`)
    );
  }

  #acceleratorView(record: AcceleratorRecord): CustomRoutingAccelerator {
    const status = this.#now() < record.deployedAt ? 'IN_PROGRESS' : 'DEPLOYED';
    return { ...record.view, status };
  }
}

function validPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1 && port <= 65_535;
}

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0');
}

/** The mapped index of an address in an endpoint's subnet; undefined when not mapped there. */
function addressIndex(endpoint: EndpointRecord, address: string): number | undefined {
  const parsed = parseIp(address);
  if (parsed?.family !== 'IPv4') return undefined;
  const index = Number(parsed.value - endpoint.network) - RESERVED_HEAD;
  return index >= 0 && index < endpoint.addresses ? index : undefined;
}

/** Whether any of an endpoint's listener ports is at or above `port`. */
function portsFrom(endpoint: EndpointRecord, port: number): boolean {
  return endpoint.acceleratorPort.some((p) => p >= port);
}

function page(mappings: PortMapping[], resumeAt: number | undefined): MappingPage {
  return resumeAt === undefined ? { mappings } : { mappings, nextToken: `page-${resumeAt}` };
}

/**
 * The AWS VPC CNI's ipamd in the ENI benchmark, one per node, calling the same EC2 fake. Every
 * rule below is read from aws/amazon-vpc-cni-k8s at tag v1.23.0 (paths in that repository):
 *
 * - Pick order. `AssignPodIPv4Address` (pkg/ipamd/datastore/data_store.go) ranges over the Go map
 *   of the node's ENIs, and within each over the map of its CIDRs (a /32 per secondary address,
 *   a /28 per prefix), taking the first free address out of its cooldown (`getUnusedIP`). Go
 *   randomizes map iteration ("The Go Programming Language Specification", For statements with
 *   range clause: "The iteration order over maps is not specified and is not guaranteed to be the
 *   same from one iteration to the next"), so pods scatter over the ENIs and prefixes. Modelled as
 *   a seeded random walk: each map keeps its keys in a random order fixed at insertion (the hash
 *   order) and each range starts at a random key and wraps. The same walk picks the ENI ranges of
 *   `GetAllocatableENIs`, `tryUnassignCidrsFromAll` / `FindFreeableCidrs` and `getDeletableENI`.
 * - Node start: `nodeInit` (pkg/ipamd/ipamd.go) calls `TagENI` (pkg/awsutils/awsutils.go) on the
 *   primary ENI, which lacks ipamd's `node.k8s.amazonaws.com/instance_id` tag on a new instance:
 *   one CreateTags per node.
 * - The pool loop runs every 5 s (`ipPoolMonitorInterval`): `isDatastorePoolTooLow` (the pool is
 *   low below WARM_ENI_TARGET ENIs' worth, WARM_PREFIX_TARGET prefixes' worth, or the IP targets
 *   via `datastoreTargetState`; never at max-pods), then `increaseDatastorePool`; otherwise
 *   `isDatastorePoolTooHigh` and `decreaseDatastorePool` at most every 30 s
 *   (`decreaseIPPoolInterval`); then `tryFreeENI` when `shouldRemoveExtraENIs`. Cooling addresses
 *   (30 s, IP_COOLDOWN_PERIOD) count as available when sizing.
 * - Growth (`tryAssignIPs` / `tryAssignPrefixes`): for each ENI with a free slot, one
 *   AssignPrivateIpAddresses for what is short (WARM_ENI_TARGET: the ENI's free slots; prefix
 *   mode: `getPrefixesNeeded`, at least one); when it fails, one more asking for a single address
 *   or prefix; when that fails with InsufficientCidrBlocks or InsufficientFreeAddressesInSubnet,
 *   the next ENI (ENABLE_SUBNET_DISCOVERY defaults to true, `UseSubnetDiscovery`). When no ENI
 *   grew and the node has room for an ENI, `tryAllocateENI` → `AllocENI`: `createENI` describes
 *   the AZ's subnets (`GetVpcSubnets`) and calls CreateNetworkInterface in each valid one (the
 *   primary subnet; other subnets only when tagged `kubernetes.io/role/cni`, none here), tags in
 *   the create; then AttachNetworkInterface (DeleteNetworkInterface if that fails) and
 *   ModifyNetworkInterfaceAttribute for delete-on-termination. Only a create refused for want of
 *   addresses or /28s starts the 120 s pause (`insufficientCidrErrorCooldown`); a node with no
 *   room for another ENI asks again every 5 s.
 * - Release: free prefixes beyond the targets (`computeExtraPrefixesOverWarmTarget`, or the IP
 *   targets' `over`), per ENI one UnassignPrivateIpAddresses (`DeallocCidrs`); in secondary-IP
 *   mode with IP targets, unassigned addresses, their cooldown unchecked. An ENI goes
 *   (`getDeletableENI`: not primary, a minute old, no pod, no cooling address, not needed for
 *   the targets) by DetachNetworkInterface, 2 s, DeleteNetworkInterface (`freeENI`), one per
 *   cycle.
 * - Capacity: (IPv4 per ENI − 1) slots per ENI; max-pods the EKS calculator's (ENIs × slots + 2,
 *   or 110 with prefix delegation below 30 vCPUs, all types here).
 *
 * Left out, in ipamd's favour: Describe calls other than the subnet discovery's (IMDS answers
 * most of ipamd's reads); the AWS SDK's retries of throttled calls; kubelet's CNI ADD backoff (a
 * waiting pod is served at its node's next pool cycle).
 */
import { type Ec2Action, IPV4_PREFIX_SIZE, prefixAddresses } from '../../shared/ec2/network.js';
import { FakeEc2, INSTANCE_TYPES } from '../../sim/fakes/ec2.js';
import { seededRandom } from '../../sim/random.js';
import { type DayKind, DaySubnets } from './day.js';
import { CallLedger, type EniRunResult, IdleByType, PodsPerNode, tally, Waits } from './ledger.js';
import {
  BERTH_PASS_S,
  CNI_COOLDOWN_MS,
  CNI_DECREASE_INTERVAL_MS,
  CNI_LOOP_S,
  CNI_MIN_ENI_LIFETIME_MS,
  DAY_S,
  JoinSchedule,
  type NodeSpec,
  type PodEvent,
  SEED,
  START,
} from './workload.js';

/** ipamd's settings in a peer run. */
export interface CniSettings {
  readonly warmEniTarget: number;
  readonly warmIpTarget: number;
  readonly minimumIpTarget: number;
  /**
   * MINIMUM_IP_TARGET of each instance type's node group (one node group per type, each its own
   * aws-node settings): a node of a type listed here takes its value instead of minimumIpTarget.
   */
  readonly minimumIpTargetByType?: Readonly<Record<string, number>>;
  readonly prefixDelegation?: boolean;
  readonly warmPrefixTarget?: number;
}

/**
 * ipamd's settings in the peer runs beside the sweep: its defaults (WARM_ENI_TARGET=1), and
 * prefix delegation as the EKS guide turns it on, with WARM_PREFIX_TARGET=1 (the value the
 * aws-node manifest sets, config/master/aws-k8s-cni.yaml at v1.23.0; ipamd's own fallback,
 * `defaultWarmPrefixTarget` in pkg/ipamd/ipamd.go, is 0).
 */
export const VPC_CNI_RUNS = {
  warmEni: { warmEniTarget: 1, warmIpTarget: 0, minimumIpTarget: 0 },
  prefixWarmPrefix: {
    warmEniTarget: 1,
    warmIpTarget: 0,
    minimumIpTarget: 0,
    prefixDelegation: true,
    warmPrefixTarget: 1,
  },
} as const satisfies Record<string, CniSettings>;

/**
 * The WARM_IP_TARGET values the sweep tries: the guide's own 2 (docs/eni-and-ip-target.md at
 * v1.23.0: "have `WARM_IP_TARGET=2`") up to a whole /28's worth.
 */
export const WARM_IP_TARGETS = [2, 5, 8, 12, 16] as const;

/** A named VPC CNI peer run. */
export interface VpcCniRun {
  readonly name: string;
  readonly settings: CniSettings;
}

/**
 * The two MINIMUM_IP_TARGET settings the sweep gives each instance type's node group, from the
 * most pods one node of the type runs at once: that peak + 2, as docs/eni-and-ip-target.md at
 * v1.23.0 advises ("If you plan to run around 10 pods, the advice is to set `MINIMUM_IP_TARGET`
 * slightly higher than that, like 12"), and twice that. In prefix mode ipamd holds
 * ceil(MINIMUM_IP_TARGET / 16) prefixes for it (`datastoreTargetState`, pkg/ipamd/ipamd.go;
 * docs/prefix-and-ip-target.md: "asking for minimum of 20 IPv4 addresses is equally as asking 32
 * IPv4 addresses").
 */
export function guideMinimumIpTargets(
  peakPods: Readonly<Record<string, number>>,
): readonly { readonly label: string; readonly byType: Record<string, number> }[] {
  const plusTwo = (type: string) => (peakPods[type] ?? 0) + 2;
  const types = Object.keys(peakPods);
  return [
    { label: 'peak+2', byType: Object.fromEntries(types.map((t) => [t, plusTwo(t)])) },
    { label: '2x(peak+2)', byType: Object.fromEntries(types.map((t) => [t, 2 * plusTwo(t)])) },
  ];
}

/**
 * The VPC CNI as its guide advises, swept: prefix mode with WARM_PREFIX_TARGET=1 (the manifest's
 * value, which WARM_IP_TARGET and MINIMUM_IP_TARGET override in sizing and release, README
 * `WARM_PREFIX_TARGET` and docs/prefix-and-ip-target.md at v1.23.0: "`WARM_IP_TARGET` and
 * `MINIMUM_IP_TARGET` if set will override `WARM_PREFIX_TARGET`"; it still keeps an ENI that
 * holds the last free prefix, `isRequiredForWarmPrefixTarget` in
 * pkg/ipamd/datastore/data_store.go), each WARM_IP_TARGET of WARM_IP_TARGETS with each
 * MINIMUM_IP_TARGET of `guideMinimumIpTargets`. The first run is the guide's own advice.
 */
export function vpcCniSweep(peakPods: Readonly<Record<string, number>>): VpcCniRun[] {
  return guideMinimumIpTargets(peakPods).flatMap(({ label, byType }) =>
    WARM_IP_TARGETS.map((warmIpTarget) => ({
      name: `vpc-cni prefix WARM_IP_TARGET=${warmIpTarget} MINIMUM_IP_TARGET=${label}`,
      settings: {
        warmEniTarget: 1,
        warmIpTarget,
        minimumIpTarget: 0,
        minimumIpTargetByType: byType,
        prefixDelegation: true,
        warmPrefixTarget: 1,
      },
    })),
  );
}

/** The EKS max-pods calculator's cap with prefix delegation: 110 below 30 vCPUs (all here). */
const PREFIX_MODE_MAX_PODS = 110;
/** `insufficientCidrErrorCooldown`: no growth for this long after a create the subnet refused. */
const INSUFFICIENT_CIDR_COOLDOWN_MS = 120_000;
/** `freeENI`: the sleep between detach and delete. */
const DETACH_TO_DELETE_MS = 2_000;

const SUBNET_REFUSALS = new Set(['InsufficientCidrBlocks', 'InsufficientFreeAddressesInSubnet']);

/** A pod address ipamd holds. */
interface CniIp {
  pod?: string;
  unassignedAt?: number;
}

/** One CIDR of an ENI: a secondary address (/32), or a /28 prefix and its 16 addresses. */
interface CniCidr {
  readonly cidr: string;
  readonly addresses: readonly string[];
}

interface CniEni {
  readonly eniId: string;
  readonly primary: boolean;
  readonly createdAt: number;
  readonly attachmentId: string;
  readonly deviceIndex: number;
  /** Every address of the ENI's CIDRs. */
  readonly ips: Map<string, CniIp>;
  /** The ENI's CIDRs in their map's (random) order; each takes one slot. */
  readonly cidrs: CniCidr[];
}

interface CniNode {
  readonly spec: NodeSpec;
  readonly instanceId: string;
  readonly subnetId: string;
  readonly maxEnis: number;
  /** Slots per ENI: addresses, or /28 prefixes with prefix delegation. */
  readonly perEni: number;
  readonly maxPods: number;
  /** Its node group's MINIMUM_IP_TARGET. */
  readonly minimumIpTarget: number;
  /** The node's ENIs in their map's (random) order. */
  readonly enis: CniEni[];
  /** Where each pod's address is. */
  readonly podIps: Map<string, CniIp>;
  /** Pods waiting for an address: since when, and whether the subnet had no /28 then. */
  readonly pending: Map<string, { readonly since: number; readonly fragmented: boolean }>;
  lastDecrease: number;
  /** `lastInsufficientCidrError` + the cooldown: no growth before this. */
  growAfter: number;
}

/** What one EC2 request answered: its value, or the error code it failed with. */
type Answer<T> = { readonly value: T } | { readonly code: string };

const failed = <T>(answer: Answer<T>): answer is { readonly code: string } => 'code' in answer;

/** Inserts `item` at a random position: a Go map's iteration order is its keys' hash order. */
function insertAtRandom<T>(items: T[], item: T, random: () => number): void {
  items.splice(Math.floor(random() * (items.length + 1)), 0, item);
}

/** One `range` over a Go map: its keys in hash order from a random start, wrapping. */
export function* goMapRange<T>(items: readonly T[], random: () => number): Generator<T> {
  const n = items.length;
  const start = Math.floor(random() * n);
  for (let k = 0; k < n; k++) {
    const item = items[(start + k) % n];
    if (item !== undefined) yield item;
  }
}

/** One node's ipamd. */
class Ipamd {
  readonly #ec2: FakeEc2;
  readonly #ledger: CallLedger;
  readonly #now: () => number;
  readonly #settings: CniSettings;
  readonly #random: () => number;
  readonly #deferred: { at: number; run: () => Promise<void> }[];
  #token = 0;

  constructor(
    ec2: FakeEc2,
    ledger: CallLedger,
    now: () => number,
    settings: CniSettings,
    random: () => number,
    deferred: { at: number; run: () => Promise<void> }[],
  ) {
    this.#ec2 = ec2;
    this.#ledger = ledger;
    this.#now = now;
    this.#settings = settings;
    this.#random = random;
    this.#deferred = deferred;
  }

  /** Whether WARM_IP_TARGET or the node group's MINIMUM_IP_TARGET is set (`warmIPTargetsDefined`). */
  #ipTargets(node: CniNode): boolean {
    return this.#settings.warmIpTarget > 0 || node.minimumIpTarget > 0;
  }

  get #prefixes(): boolean {
    return this.#settings.prefixDelegation === true;
  }

  /** One EC2 request: its value, or the code it failed with (throttled or not). */
  async #call<T>(action: Ec2Action, run: () => Promise<T>): Promise<Answer<T>> {
    try {
      const value = await run();
      this.#ledger.record(action, this.#now(), false);
      return { value };
    } catch (error) {
      const code = (error as { name?: string }).name ?? '';
      this.#ledger.record(action, this.#now(), code === 'RequestLimitExceeded');
      return { code };
    }
  }

  /** `nodeInit`: `TagENI` adds ipamd's instance tag to the primary ENI. */
  async init(node: CniNode): Promise<void> {
    const primary = node.enis.find((eni) => eni.primary);
    if (!primary) return;
    await this.#call('CreateTags', () =>
      this.#ec2.createTags({
        resourceIds: [primary.eniId],
        tags: [{ key: 'node.k8s.amazonaws.com/instance_id', value: node.instanceId }],
      }),
    );
  }

  /** Whether any address of a CIDR holds a pod (`AssignedIPAddressesInCidr` > 0). */
  #busy(eni: CniEni, cidr: CniCidr): boolean {
    return cidr.addresses.some((ip) => eni.ips.get(ip)?.pod !== undefined);
  }

  /** `GetFreePrefixes`: the node's prefixes with no pod. */
  #freePrefixCount(node: CniNode): number {
    if (!this.#prefixes) return 0;
    let free = 0;
    for (const eni of node.enis) for (const cidr of eni.cidrs) if (!this.#busy(eni, cidr)) free++;
    return free;
  }

  counts(node: CniNode): { total: number; assigned: number } {
    let total = 0;
    for (const eni of node.enis) total += eni.ips.size;
    return { total, assigned: node.podIps.size };
  }

  /** CNI ADD (`AssignPodIPv4Address`): the random walk's first free, cooled address. */
  take(node: CniNode, pod: string): boolean {
    const now = this.#now();
    for (const eni of goMapRange(node.enis, this.#random)) {
      for (const cidr of goMapRange(eni.cidrs, this.#random)) {
        for (const address of cidr.addresses) {
          const ip = eni.ips.get(address);
          if (!ip || ip.pod !== undefined) continue;
          if (ip.unassignedAt !== undefined && now - ip.unassignedAt <= CNI_COOLDOWN_MS) continue;
          ip.pod = pod;
          ip.unassignedAt = undefined;
          node.podIps.set(pod, ip);
          return true;
        }
      }
    }
    return false;
  }

  /** CNI DEL: the address cools down. */
  free(node: CniNode, pod: string): void {
    const ip = node.podIps.get(pod);
    if (!ip) return;
    node.podIps.delete(pod);
    ip.pod = undefined;
    ip.unassignedAt = this.#now();
  }

  /**
   * `datastoreTargetState` with the IP targets (in prefixes with prefix delegation): how many
   * slots the pool is short of, and how many it holds over the targets. In prefix mode short is
   * ceil(max(WARM_IP_TARGET − available, MINIMUM_IP_TARGET − total, 0) / 16) prefixes (available
   * counts cooling addresses, `AvailableAddresses`), and over the free prefixes beyond both
   * ceil((assigned + WARM_IP_TARGET) / 16) and ceil(MINIMUM_IP_TARGET / 16) prefixes.
   */
  #ipTargetState(node: CniNode): { short: number; over: number } {
    const { warmIpTarget } = this.#settings;
    const { minimumIpTarget } = node;
    const { total, assigned } = this.counts(node);
    const available = total - assigned;
    const short = Math.max(warmIpTarget - available, minimumIpTarget - total, 0);
    if (!this.#prefixes) {
      const over = Math.max(Math.min(available - warmIpTarget, total - minimumIpTarget), 0);
      return { short, over };
    }
    const totalPrefixes = total / IPV4_PREFIX_SIZE;
    const forWarm = Math.ceil((assigned + warmIpTarget) / IPV4_PREFIX_SIZE);
    const forMinimum = Math.ceil(minimumIpTarget / IPV4_PREFIX_SIZE);
    const over = Math.max(
      Math.min(this.#freePrefixCount(node), totalPrefixes - forWarm, totalPrefixes - forMinimum),
      0,
    );
    return { short: Math.ceil(short / IPV4_PREFIX_SIZE), over };
  }

  /** `isDatastorePoolTooLow`. */
  #tooLow(node: CniNode): boolean {
    const { total, assigned } = this.counts(node);
    if (total >= node.maxPods) return false;
    if (this.#ipTargets(node)) return this.#ipTargetState(node).short > 0;
    const available = total - assigned;
    const warm = this.#prefixes
      ? (this.#settings.warmPrefixTarget ?? 0)
      : this.#settings.warmEniTarget;
    const perUnit = this.#prefixes ? IPV4_PREFIX_SIZE : node.perEni;
    return available < perUnit * warm || (warm === 0 && available === 0);
  }

  /** `isDatastorePoolTooHigh`'s excess: slots over the targets (none with WARM_ENI_TARGET). */
  #over(node: CniNode): number {
    if (this.#ipTargets(node)) return this.#ipTargetState(node).over;
    const warmPrefixTarget = this.#settings.warmPrefixTarget ?? 0;
    if (!this.#prefixes || warmPrefixTarget === 0) return 0;
    return Math.max(this.#freePrefixCount(node) - warmPrefixTarget, 0);
  }

  /** `getPrefixesNeeded` / the ENI's free slots: what one growth asks for. */
  #toAllocate(node: CniNode): number {
    if (this.#prefixes) {
      const short = this.#ipTargets(node)
        ? this.#ipTargetState(node).short
        : Math.max((this.#settings.warmPrefixTarget ?? 0) - this.#freePrefixCount(node), 0);
      return Math.max(1, short);
    }
    return this.#ipTargets(node) ? this.#ipTargetState(node).short : node.perEni;
  }

  /** One `updateIPPoolIfRequired` cycle, then pending pods are served. */
  async tick(node: CniNode, waits: Waits): Promise<void> {
    const now = this.#now();
    if (this.#tooLow(node)) {
      if (now > node.growAfter) await this.#increase(node);
    } else if (this.#over(node) > 0 && now - node.lastDecrease > CNI_DECREASE_INTERVAL_MS) {
      await this.#decrease(node, this.#over(node));
      node.lastDecrease = now;
    }
    if (this.#shouldRemoveExtraEnis(node)) await this.#tryFreeEni(node);
    // Deleting the entry being visited is safe in a Map iteration.
    for (const [pod, wait] of node.pending) {
      if (!this.take(node, pod)) break;
      node.pending.delete(pod);
      waits.add(this.#now() - wait.since, wait.fragmented, wait.since);
    }
  }

  /** `shouldRemoveExtraENIs`. */
  #shouldRemoveExtraEnis(node: CniNode): boolean {
    if (this.#ipTargets(node)) return true;
    const { total, assigned } = this.counts(node);
    const warm = this.#prefixes
      ? (this.#settings.warmPrefixTarget ?? 0) + 1
      : this.#settings.warmEniTarget + 1;
    const perEni = node.perEni * (this.#prefixes ? IPV4_PREFIX_SIZE : 1);
    if (total - assigned >= warm * perEni) return true;
    return (
      this.#prefixes &&
      node.enis.some((eni) => !eni.primary && ![...eni.ips.values()].some((ip) => ip.pod))
    );
  }

  /** A CIDR the ENI newly holds, at its place in the map's order. */
  #add(eni: CniEni, granted: readonly string[]): void {
    for (const grant of granted) {
      const addresses = this.#prefixes ? prefixAddresses(grant) : [grant];
      for (const ip of addresses) eni.ips.set(ip, {});
      insertAtRandom(eni.cidrs, { cidr: grant, addresses }, this.#random);
    }
  }

  /** `increaseDatastorePool`: fill ENIs with free slots, else a new ENI. */
  async #increase(node: CniNode): Promise<void> {
    const toAllocate = this.#toAllocate(node);
    if (toAllocate <= 0) return;
    const allocatable = node.enis.filter((eni) => eni.cidrs.length < node.perEni);
    for (const eni of goMapRange(allocatable, this.#random)) {
      const want = Math.min(node.perEni - eni.cidrs.length, toAllocate);
      let answer = await this.#assign(eni, want);
      if (failed(answer) && answer.code !== 'PrivateIpAddressLimitExceeded') {
        // "Try to just get one more IP" (or prefix).
        answer = await this.#assign(eni, 1);
        if (failed(answer) && answer.code !== 'PrivateIpAddressLimitExceeded') {
          if (SUBNET_REFUSALS.has(answer.code)) continue;
          return;
        }
      }
      if (!failed(answer)) this.#add(eni, answer.value);
      return;
    }
    if (node.enis.length < node.maxEnis) await this.#allocateEni(node, toAllocate);
  }

  #assign(eni: CniEni, count: number): Promise<Answer<readonly string[]>> {
    return this.#call('AssignPrivateIpAddresses', () =>
      this.#prefixes
        ? this.#ec2.assignIpv4Prefixes({ eniId: eni.eniId, count })
        : this.#ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count }),
    );
  }

  /** `tryAllocateENI` → `AllocENI`: subnet discovery, create, attach, delete-on-termination. */
  async #allocateEni(node: CniNode, toAllocate: number): Promise<void> {
    const count = Math.min(toAllocate, node.perEni);
    await this.#call('DescribeSubnets', () => this.#ec2.describeSubnets([node.subnetId]));
    const created = await this.#call('CreateNetworkInterface', () =>
      this.#ec2.createNetworkInterface({
        subnetId: node.subnetId,
        securityGroupIds: ['sg-0123456789abcdef0'],
        secondaryIpCount: this.#prefixes ? 0 : count,
        ...(this.#prefixes ? { ipv4PrefixCount: count } : {}),
        description: `aws-K8S-${node.instanceId}`,
        tags: [{ key: 'node.k8s.amazonaws.com/instance_id', value: node.instanceId }],
        clientToken: `cni-${this.#token++}`,
      }),
    );
    if (failed(created)) {
      if (SUBNET_REFUSALS.has(created.code)) {
        node.growAfter = this.#now() + INSUFFICIENT_CIDR_COOLDOWN_MS;
      }
      return;
    }
    const eni = created.value;
    const used = new Set(node.enis.map((e) => e.deviceIndex));
    let deviceIndex = 1;
    while (used.has(deviceIndex)) deviceIndex++;
    const attached = await this.#call('AttachNetworkInterface', () =>
      this.#ec2.attachNetworkInterface({
        eniId: eni.eniId,
        instanceId: node.instanceId,
        deviceIndex,
      }),
    );
    if (failed(attached)) {
      await this.#call('DeleteNetworkInterface', () =>
        this.#ec2.deleteNetworkInterface({ eniId: eni.eniId }),
      );
      return;
    }
    await this.#call('ModifyNetworkInterfaceAttribute', () =>
      this.#ec2.setDeleteOnTermination({
        eniId: eni.eniId,
        attachmentId: attached.value.attachmentId,
      }),
    );
    const added: CniEni = {
      eniId: eni.eniId,
      primary: false,
      createdAt: this.#now(),
      attachmentId: attached.value.attachmentId,
      deviceIndex,
      ips: new Map(),
      cidrs: [],
    };
    this.#add(added, this.#prefixes ? eni.ipv4Prefixes : eni.secondaryIps);
    insertAtRandom(node.enis, added, this.#random);
  }

  /**
   * `tryUnassignCidrsFromAll`: over the ENIs in map order, the CIDRs with no pod (cooldown
   * unchecked), up to `over`, in one UnassignPrivateIpAddresses per ENI.
   */
  async #decrease(node: CniNode, over: number): Promise<void> {
    let left = over;
    for (const eni of goMapRange(node.enis, this.#random)) {
      if (left <= 0) return;
      const freeable = [...goMapRange(eni.cidrs, this.#random)]
        .filter((cidr) => !this.#busy(eni, cidr))
        .slice(0, left);
      if (freeable.length === 0) continue;
      const gone = new Set(freeable.map((cidr) => cidr.cidr));
      for (const cidr of freeable) for (const ip of cidr.addresses) eni.ips.delete(ip);
      eni.cidrs.splice(0, eni.cidrs.length, ...eni.cidrs.filter((cidr) => !gone.has(cidr.cidr)));
      left -= freeable.length;
      await this.#call('UnassignPrivateIpAddresses', () =>
        this.#prefixes
          ? this.#ec2.unassignIpv4Prefixes({ eniId: eni.eniId, prefixes: [...gone] })
          : this.#ec2.unassignPrivateIpAddresses({ eniId: eni.eniId, ips: [...gone] }),
      );
    }
  }

  /** `getDeletableENI` + `FreeENI`: at most one ENI per cycle. */
  async #tryFreeEni(node: CniNode): Promise<void> {
    const now = this.#now();
    const { warmIpTarget } = this.#settings;
    const { minimumIpTarget } = node;
    const warmPrefixTarget = this.#settings.warmPrefixTarget ?? 0;
    const rounded = (n: number) =>
      this.#prefixes ? Math.ceil(n / IPV4_PREFIX_SIZE) * IPV4_PREFIX_SIZE : n;
    let deletable: CniEni | undefined;
    for (const eni of goMapRange(node.enis, this.#random)) {
      if (eni.primary || now - eni.createdAt < CNI_MIN_ENI_LIFETIME_MS) continue;
      const ips = [...eni.ips.values()];
      if (
        ips.some((ip) => ip.unassignedAt !== undefined && now - ip.unassignedAt <= CNI_COOLDOWN_MS)
      ) {
        continue;
      }
      if (ips.some((ip) => ip.pod !== undefined)) continue;
      const others = node.enis.filter((other) => other !== eni);
      let otherFree = 0;
      let otherTotal = 0;
      let otherFreePrefixes = 0;
      for (const other of others) {
        otherTotal += other.ips.size;
        for (const ip of other.ips.values()) if (!ip.pod) otherFree++;
        for (const cidr of other.cidrs) if (!this.#busy(other, cidr)) otherFreePrefixes++;
      }
      if (warmIpTarget !== 0 && otherFree < rounded(warmIpTarget)) continue;
      if (minimumIpTarget !== 0 && otherTotal < rounded(minimumIpTarget)) continue;
      if (this.#prefixes && warmPrefixTarget !== 0 && otherFreePrefixes < warmPrefixTarget) {
        continue;
      }
      deletable = eni;
      break;
    }
    if (!deletable) return;
    node.enis.splice(node.enis.indexOf(deletable), 1);
    const detached = await this.#call('DetachNetworkInterface', () =>
      this.#ec2.detachNetworkInterface({ attachmentId: deletable.attachmentId }),
    );
    if (failed(detached)) return;
    const eniId = deletable.eniId;
    this.#deferred.push({
      at: this.#now() + DETACH_TO_DELETE_MS,
      run: () => this.#deleteLater(eniId, 0),
    });
  }

  async #deleteLater(eniId: string, attempt: number): Promise<void> {
    const done = await this.#call('DeleteNetworkInterface', () =>
      this.#ec2.deleteNetworkInterface({ eniId }),
    );
    if (failed(done) && attempt < 12) {
      this.#deferred.push({
        at: this.#now() + 500 * 2 ** attempt,
        run: () => this.#deleteLater(eniId, attempt + 1),
      });
    }
  }
}

/** A VPC CNI run's options beyond ipamd's settings. */
export interface CniRunOptions {
  /** The subnets carry a prefix-type CIDR reservation (`day.ts`). */
  readonly reservation?: boolean;
  /** Ends the day early (tests). */
  readonly untilSecond?: number;
}

export async function runVpcCni(
  name: string,
  settings: CniSettings,
  day: DayKind,
  nodes: NodeSpec[],
  events: PodEvent[],
  options: CniRunOptions = {},
): Promise<EniRunResult> {
  const deferred: { at: number; run: () => Promise<void> }[] = [];
  const clock = { now: START };
  const now = () => clock.now;
  const fake = new FakeEc2({ now, random: seededRandom(SEED + 2), recordCalls: false });
  const subnets = new DaySubnets(fake, day, options);
  const ledger = new CallLedger();
  const ipamd = new Ipamd(fake, ledger, now, settings, seededRandom(SEED + 4), deferred);
  const live: (CniNode | undefined)[] = nodes.map(() => undefined);
  const byPhase: CniNode[][] = Array.from({ length: CNI_LOOP_S }, () => []);
  const idle: number[] = [];
  const idleByType = new IdleByType();
  const waits = new Waits();
  const podsPerNode = new PodsPerNode();
  const joins = new JoinSchedule(nodes);
  let next = 0;
  for (let second = 0; second < (options.untilSecond ?? DAY_S); second++) {
    clock.now = START + second * 1000;
    subnets.advance(second);
    for (const { index, spec, subnetId } of joins.due(second)) {
      const node = joinNode(fake, spec, subnetId, settings, clock.now);
      await ipamd.init(node);
      live[index] = node;
      byPhase[spec.cniPhase]?.push(node);
      podsPerNode.capacity(
        spec.type,
        Math.min(
          node.maxPods,
          node.maxEnis * node.perEni * (settings.prefixDelegation ? IPV4_PREFIX_SIZE : 1),
        ),
      );
    }
    for (; next < events.length && (events[next]?.at ?? DAY_S) < second + 1; next++) {
      const event = events[next];
      const node = event ? live[event.node] : undefined;
      if (!event || !node) continue;
      clock.now = START + Math.floor(event.at * 1000);
      if (event.kind === 'arrive') {
        if (ipamd.take(node, event.pod)) {
          podsPerNode.seen(node.spec.type, ipamd.counts(node).assigned);
        } else {
          const fragmented = subnets.fragmentedNow(node.subnetId);
          node.pending.set(event.pod, { since: clock.now, fragmented });
        }
      } else {
        const wait = node.pending.get(event.pod);
        if (wait) {
          // It waited until its game was given up: the whole session.
          node.pending.delete(event.pod);
          waits.add(clock.now - wait.since, wait.fragmented, wait.since);
        } else ipamd.free(node, event.pod);
      }
    }
    clock.now = START + second * 1000;
    const due = deferred.filter((d) => d.at <= clock.now);
    if (due.length > 0) {
      const later = deferred.filter((d) => d.at > clock.now);
      deferred.splice(0, deferred.length, ...later);
      for (const work of due) await work.run();
    }
    for (const node of byPhase[second % CNI_LOOP_S] ?? []) {
      await ipamd.tick(node, waits);
      podsPerNode.seen(node.spec.type, ipamd.counts(node).assigned);
    }
    if (second % BERTH_PASS_S === 0) {
      let sum = 0;
      for (const node of live) {
        if (!node) continue;
        const { total, assigned } = ipamd.counts(node);
        sum += total - assigned;
        idleByType.add(node.spec.type, total - assigned);
      }
      idle.push(sum);
    }
  }
  for (const node of live) {
    for (const wait of node?.pending.values() ?? []) {
      waits.add(clock.now - wait.since, wait.fragmented, wait.since);
    }
  }
  const { minimumIpTargetByType, ...plain } = settings;
  return {
    name,
    settings: {
      ...plain,
      ...(minimumIpTargetByType
        ? {
            minimumIpTarget: Object.entries(minimumIpTargetByType)
              .map(([type, target]) => `${type}:${target}`)
              .join(','),
          }
        : {}),
      prefixDelegation: String(settings.prefixDelegation === true),
      subnetDiscovery: 'true',
      prefixReservation: String(options.reservation === true),
      loopSeconds: CNI_LOOP_S,
      cooldownSeconds: CNI_COOLDOWN_MS / 1000,
      pickOrder: 'random (Go map iteration)',
    },
    ...tally(ledger, idle, waits, podsPerNode),
    idleByInstanceType: idleByType.averages(),
  };
}

/**
 * A node as ipamd first sees it: the primary ENI (device 0) with no secondary address or prefix
 * yet, and the max-pods the EKS calculator gives it.
 */
function joinNode(
  fake: FakeEc2,
  spec: NodeSpec,
  subnetId: string,
  settings: CniSettings,
  now: number,
): CniNode {
  const instanceId = fake.launchInstance({ instanceType: spec.type, subnetId });
  const limits = INSTANCE_TYPES[spec.type];
  const maxEnis = limits?.maxNetworkInterfaces ?? 1;
  const perEni = (limits?.ipv4PerInterface ?? 1) - 1;
  const primary = fake
    .allInterfaces()
    .find((eni) => eni.attachment?.instanceId === instanceId && eni.attachment.deviceIndex === 0);
  return {
    spec,
    instanceId,
    subnetId,
    maxEnis,
    perEni,
    maxPods: settings.prefixDelegation ? PREFIX_MODE_MAX_PODS : maxEnis * perEni + 2,
    minimumIpTarget: settings.minimumIpTargetByType?.[spec.type] ?? settings.minimumIpTarget,
    enis: [
      {
        eniId: primary?.eniId ?? '',
        primary: true,
        createdAt: now,
        attachmentId: primary?.attachment?.attachmentId ?? '',
        deviceIndex: 0,
        ips: new Map(),
        cidrs: [],
      },
    ],
    podIps: new Map(),
    pending: new Map(),
    lastDecrease: 0,
    growAfter: 0,
  };
}

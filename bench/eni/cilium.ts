/**
 * Cilium's ENI IPAM operator (AWS, operator mode) in the ENI benchmark, at its default settings,
 * driving the same EC2 fake over the same events as berth and the VPC CNI. Rules modelled, with
 * the upstream file each comes from (cilium/cilium, operator as of v1.19 and main):
 *
 * - One operator makes every EC2 call, each behind one client-side x/time/rate bucket of 4 calls
 *   per second with a burst of 20; a call without a token waits its turn, it is never dropped
 *   (pkg/aws/ec2/ec2.go: `c.limiter.Limit` before every call and every Describe page;
 *   pkg/defaults/defaults.go at commit c547745f2c39e349a250f3952591af147d31245d: IPAMAPIQPSLimit
 *   4.0, IPAMAPIBurst 20, the defaults of the operator flags `--limit-ipam-api-qps` and
 *   `--limit-ipam-api-burst`, operator/option/config.go). A second run raises them to 20 and 100,
 *   EC2's own refill and bucket for Describe calls (Amazon EC2 API Reference, "Request
 *   throttling", Non-mutating actions), so the operator's limiter no longer holds back what EC2
 *   would serve.
 * - A node's deficit is `calculateNeededIPs(available, used, pre-allocate 8, min-allocate 0,
 *   max-allocate)`, max-allocate 0 meaning the instance maximum, (adapters - first-interface-index)
 *   × (IPv4 per ENI - 1) (pkg/ipam/node.go; pkg/aws/eni/node.go GetMaximumAllocatableIPv4).
 *   `used` is the CiliumNode's status as the agent last wrote it, at most every 15 s
 *   (--ipam-cilium-node-update-rate, pkg/ipam/crd.go trigger crd-allocator-node-refresher; v1.20
 *   agents write their demand instead, pkg/ipam/multipool.go, under the same rate).
 * - A node is served when it has a deficit, no maintenance running and no resync owed since its
 *   last one (`allocationNeeded`, pkg/ipam/node.go), checked on a CiliumNode update and on every
 *   resync; the nodes are queued largest deficit first, releases after (GetNodesByIPWatermark,
 *   pkg/ipam/node_manager.go) and the queue is handled at most once per second
 *   (Documentation/network/concepts/ipam/eni.rst).
 * - Allocation asks for deficit + max-above-watermark (0) + a surge of the node's pending pods
 *   beyond the deficit (determineMaintenanceAction, pkg/ipam/node.go). The first ENI with room
 *   (index ≥ first-interface-index, 0 by default, so eth0 holds pod addresses too; pkg/defaults
 *   ENIFirstInterfaceIndex) whose subnet has addresses gets min(room, subnet's free, asked) in one
 *   AssignPrivateIpAddresses; with none, and an adapter slot left, CreateNetworkInterface with
 *   min(asked, IPv4 per ENI - 1) secondaries in the node's subnet (else the one most free),
 *   AttachNetworkInterface at the first free index (DeleteNetworkInterface if that fails) and
 *   ModifyNetworkInterfaceAttribute for delete-on-termination, on by default (PrepareIPAllocation,
 *   AllocateIPs, CreateInterface, findSuitableSubnet in pkg/aws/eni/node.go).
 * - A maintenance that changed EC2 (or failed) triggers the node's instance sync: DescribeVpcs,
 *   DescribeSubnets, DescribeSecurityGroups, DescribeRouteTables and DescribeNetworkInterfaces by
 *   attachment.instance-id (InstancesManager.resync, pkg/aws/eni/instances.go; the per-node
 *   instanceSync trigger, pkg/ipam/node_manager.go, PR #27791), then a Resync of every node,
 *   which clears the resync owed and writes each CiliumNode's pool: only then does the agent see
 *   the new addresses. A new CiliumNode gets the same instance sync first (Upsert).
 * - Every minute a full resync: the same Describes with every ENI (ipam-node-interval-refresh,
 *   pkg/ipam/node_manager.go); every 5 minutes the ENI garbage collector's DescribeNetworkInterfaces
 *   of detached tagged ENIs (pkg/aws/eni/eni_gc.go, --eni-gc-interval).
 * - Excess is never released at defaults (--aws-release-excess-ips=false). With `releaseExcessIps`
 *   the excess (`calculateExcessIPs`) is looked for on resyncs only; the ENI with the most free
 *   addresses offers up to the excess, each one released by UnassignPrivateIpAddresses once it has
 *   stayed excess for --excess-ip-release-delay, 180 s (releaseNeeded, handleIPRelease,
 *   pkg/ipam/node.go; PrepareIPRelease, pkg/aws/eni/node.go).
 * - Prefix delegation is off by default (--aws-enable-prefix-delegation=false) and not modelled.
 * - The agent hands a pod any address of its pool at once, with no cooldown; with none the pod
 *   waits (pkg/ipam/crd.go).
 *
 * Assumed: the fake has no DescribeVpcs, DescribeSecurityGroups or DescribeRouteTables, so those
 * take their token and are counted in `callsByAction` and `peakCallsPerSecond` but not in the
 * ledger's budget replay; the full DescribeNetworkInterfaces filters by subnet-id (the fake lacks
 * private-ip-address) in pages of 1,000, what Cilium falls back to when EC2 refuses an unpaginated
 * listing; a waiting pod takes an address the moment it is published or freed (kubelet's sandbox
 * retry backoff is left out, in Cilium's favour); agent writes that come due, and the allocation
 * queue, run on whole seconds; publishing a pool reaches the agent at once; of several ENIs with
 * room (Go map order) the lowest index is picked; the agent's release acknowledgement is taken as
 * immediate for an address still free when its delay is up; the pool maintainer's error backoff is
 * left out (no call fails at 4 calls per second on EC2's buckets); Upsert's instance sync holding
 * the NodeManager lock (which would hold up every Resync behind the limiter) is left out, in
 * Cilium's favour.
 */
import type { Ec2Action, Ec2NetworkInterface } from '../../shared/ec2/network.js';
import { FakeEc2, INSTANCE_TYPES } from '../../sim/fakes/ec2.js';
import { seededRandom } from '../../sim/random.js';
import { type DayKind, DaySubnets, SUBNETS } from './day.js';
import {
  CallLedger,
  type EniRunResult,
  IdleByType,
  PodsPerNode,
  peak,
  tally,
  Waits,
} from './ledger.js';
import {
  BERTH_PASS_S,
  DAY_S,
  JoinSchedule,
  type NodeSpec,
  type PodEvent,
  SEED,
  START,
} from './workload.js';

/** The operator's and CiliumNode's allocation settings. */
export interface CiliumSettings {
  /** `spec.ipam.pre-allocate`: free addresses each node keeps. */
  readonly preAllocate: number;
  /** `spec.ipam.min-allocate`: addresses a node holds at least (0: none). */
  readonly minAllocate: number;
  /** `spec.ipam.max-allocate`: addresses a node holds at most (0: the instance maximum). */
  readonly maxAllocate: number;
  /** `spec.ipam.max-above-watermark`: extra addresses per allocation. */
  readonly maxAboveWatermark: number;
  /** `--aws-release-excess-ips`. */
  readonly releaseExcessIps: boolean;
  /** `--limit-ipam-api-qps`. */
  readonly apiQps: number;
  /** `--limit-ipam-api-burst`. */
  readonly apiBurst: number;
}

/** Cilium's defaults (pkg/defaults, operator/option, the CiliumNode spec). */
export const CILIUM_DEFAULTS: CiliumSettings = {
  preAllocate: 8,
  minAllocate: 0,
  maxAllocate: 0,
  maxAboveWatermark: 0,
  releaseExcessIps: false,
  apiQps: 4,
  apiBurst: 20,
};

/** Cilium's defaults with the operator's EC2 limiter raised to EC2's own Describe bucket. */
export const CILIUM_RAISED_API: CiliumSettings = { ...CILIUM_DEFAULTS, apiQps: 20, apiBurst: 100 };
/** `--ipam-cilium-node-update-rate`: the agent writes its CiliumNode at most this often. */
const CILIUM_NODE_UPDATE_RATE_MS = 15_000;
/** Between the end of one full resync and the start of the next. */
const RESYNC_INTERVAL_MS = 60_000;
/** `--excess-ip-release-delay`. */
const EXCESS_IP_RELEASE_DELAY_MS = 180_000;
/** `--eni-gc-interval`. */
const ENI_GC_INTERVAL_S = 300;
/** `spec.eni.first-interface-index` by default: eth0's slots hold pod addresses too. */
const FIRST_INTERFACE_INDEX = 0;
/** Tags on the ENIs the operator creates, which its garbage collector lists by. */
const ENI_GC_TAGS = [
  { key: 'io.cilium/cilium-managed', value: 'true' },
  { key: 'io.cilium/cluster-name', value: 'default' },
] as const;
/** eth0's security group, which the ENIs the operator creates inherit. */
const SECURITY_GROUP = 'sg-0123456789abcdef0';
const SUBNET_IDS = SUBNETS.map((subnet) => subnet.subnetId);

/** Describes Cilium makes that the EC2 fake does not answer. */
type DescribeBeyondFake = 'DescribeVpcs' | 'DescribeSecurityGroups' | 'DescribeRouteTables';

/** `calculateNeededIPs` (pkg/ipam/node.go): `available` counts the node's addresses, used or not. */
function neededIps(
  available: number,
  used: number,
  preAllocate: number,
  minAllocate: number,
  maxAllocate: number,
): number {
  let needed = preAllocate - (available - used);
  if (minAllocate > 0) needed = Math.max(needed, minAllocate - available);
  if (maxAllocate > 0 && available + needed > maxAllocate) needed = maxAllocate - available;
  return Math.max(needed, 0);
}

/** `calculateExcessIPs` (pkg/ipam/node.go). */
function excessIps(
  available: number,
  used: number,
  preAllocate: number,
  minAllocate: number,
  maxAboveWatermark: number,
): number {
  const bootstrap = minAllocate + maxAboveWatermark;
  if (used <= bootstrap && available <= bootstrap) return 0;
  return Math.max(available - used - preAllocate - maxAboveWatermark, 0);
}

/** `GetMaximumAllocatableIPv4` (pkg/aws/eni/node.go): the addresses Cilium can give pods. */
function instanceMaximum(type: string): number {
  const limits = INSTANCE_TYPES[type];
  if (!limits) throw new Error(`unknown instance type ${type}`);
  return (limits.maxNetworkInterfaces - FIRST_INTERFACE_INDEX) * (limits.ipv4PerInterface - 1);
}

/**
 * The operator's API limiter (pkg/api/helpers, x/time/rate): tokens refill continuously, calls get
 * them in the order they asked. Time only moves in `runUntil`, so each call runs at its grant time.
 */
class ApiLimiter {
  /** Every call granted, by second: the operator's real call rate, Describes beyond the fake too. */
  readonly perSecond = new Map<number, number>();
  readonly #clock: { now: number };
  readonly #waiting: { readonly since: number; readonly go: () => void }[] = [];
  readonly #qps: number;
  readonly #burst: number;
  #tokens: number;
  #at: number;

  constructor(clock: { now: number }, qps: number, burst: number) {
    this.#clock = clock;
    this.#at = clock.now;
    this.#qps = qps;
    this.#burst = burst;
    this.#tokens = burst;
  }

  /** Resolves when the call's token is granted. */
  take(): Promise<void> {
    return new Promise((go) => this.#waiting.push({ since: this.#clock.now, go }));
  }

  /** Grants the tokens due before `until`; each granted task runs to its next wait first. */
  async runUntil(until: number): Promise<void> {
    for (;;) {
      const next = this.#waiting[0];
      if (!next) return;
      const at = Math.max(next.since, this.#readyAt());
      if (at >= until) return;
      this.#waiting.shift();
      this.#tokens = Math.min(this.#burst, this.#tokens + ((at - this.#at) / 1000) * this.#qps) - 1;
      this.#at = at;
      this.#clock.now = at;
      const second = Math.floor(at / 1000);
      this.perSecond.set(second, (this.perSecond.get(second) ?? 0) + 1);
      next.go();
      // The fake answers without timers, so one macrotask turn lets the task reach its next wait.
      await new Promise<void>((settled) => setImmediate(settled));
    }
  }

  #readyAt(): number {
    return this.#tokens >= 1 ? this.#at : this.#at + ((1 - this.#tokens) / this.#qps) * 1000;
  }
}

interface PendingPod {
  readonly since: number;
  readonly fragmented: boolean;
}

/**
 * The Cilium agent on one node (CRD allocator, pkg/ipam/crd.go): hands out the addresses the
 * operator published in its CiliumNode, and writes back how many are in use, rate-limited.
 */
class Agent {
  /** `status.ipam.used` as the agent last wrote it. */
  reportedUsed = 0;
  readonly #type: string;
  readonly #fragmentedNow: () => boolean;
  readonly #waits: Waits;
  readonly #podsPerNode: PodsPerNode;
  #ready: string[] = [];
  readonly #held = new Map<string, string>();
  readonly #inUse = new Set<string>();
  readonly #waiting = new Map<string, PendingPod>();
  #reportedAt = Number.NEGATIVE_INFINITY;
  #reportDueAt: number | undefined;
  #unseenReport = false;

  constructor(type: string, fragmentedNow: () => boolean, waits: Waits, podsPerNode: PodsPerNode) {
    this.#type = type;
    this.#fragmentedNow = fragmentedNow;
    this.#waits = waits;
    this.#podsPerNode = podsPerNode;
  }

  /** Pods holding an address. */
  get used(): number {
    return this.#held.size;
  }

  /** Pods waiting for an address (Pending, as the operator's pod watcher counts them). */
  get pending(): number {
    return this.#waiting.size;
  }

  /** Whether a pod holds `ip` (`status.ipam.used`). */
  uses(ip: string): boolean {
    return this.#inUse.has(ip);
  }

  /** CNI ADD: an address from the pool, or the pod waits for one. */
  arrive(pod: string, at: number): void {
    const ip = this.#ready.pop();
    if (ip === undefined) this.#waiting.set(pod, { since: at, fragmented: this.#fragmentedNow() });
    else this.#give(pod, ip, at);
  }

  /** CNI DEL: the address goes back to the pool, first to a waiting pod. */
  depart(pod: string, at: number): void {
    const wait = this.#waiting.get(pod);
    if (wait) {
      this.#waiting.delete(pod);
      this.#waits.add(at - wait.since, wait.fragmented, wait.since);
      return;
    }
    const ip = this.#held.get(pod);
    if (ip === undefined) return;
    this.#held.delete(pod);
    this.#inUse.delete(ip);
    this.#ready.push(ip);
    this.#changed(at);
    this.#serve(at);
  }

  /** The operator wrote new addresses into the CiliumNode's pool. */
  publish(ips: readonly string[], at: number): void {
    this.#ready.push(...ips);
    this.#serve(at);
  }

  /** Release handshake: free addresses marked for release are no longer handed out. */
  acknowledgeRelease(ips: readonly string[]): void {
    const marked = new Set(ips);
    this.#ready = this.#ready.filter((ip) => !marked.has(ip));
  }

  /** A rate-limited CiliumNode write that came due. */
  reportIfDue(now: number): void {
    if (this.#reportDueAt !== undefined && this.#reportDueAt <= now) {
      this.#report(this.#reportDueAt);
    }
  }

  /** Whether the agent wrote its CiliumNode since the operator last looked (its watch event). */
  takeUpdate(): boolean {
    const unseen = this.#unseenReport;
    this.#unseenReport = false;
    return unseen;
  }

  /** Pods still waiting when the run ends waited until then. */
  finish(end: number): void {
    for (const wait of this.#waiting.values())
      this.#waits.add(end - wait.since, wait.fragmented, wait.since);
    this.#waiting.clear();
  }

  #serve(at: number): void {
    for (const [pod, wait] of this.#waiting) {
      const ip = this.#ready.pop();
      if (ip === undefined) return;
      this.#waiting.delete(pod);
      this.#waits.add(at - wait.since, wait.fragmented, wait.since);
      this.#give(pod, ip, at);
    }
  }

  #give(pod: string, ip: string, at: number): void {
    this.#held.set(pod, ip);
    this.#inUse.add(ip);
    this.#podsPerNode.seen(this.#type, this.#held.size);
    this.#changed(at);
  }

  /** The refresher trigger: write now if the last write is old enough, else once it is. */
  #changed(at: number): void {
    if (at >= this.#reportedAt + CILIUM_NODE_UPDATE_RATE_MS) this.#report(at);
    else this.#reportDueAt ??= this.#reportedAt + CILIUM_NODE_UPDATE_RATE_MS;
  }

  #report(at: number): void {
    this.reportedUsed = this.#held.size;
    this.#reportedAt = at;
    this.#reportDueAt = undefined;
    this.#unseenReport = true;
  }
}

/** One ENI as the operator's instance cache holds it. */
interface CachedEni {
  readonly eniId: string;
  readonly subnetId: string;
  readonly deviceIndex: number;
  /** Secondary addresses: Cilium leaves the primary out of the pool. */
  readonly ips: string[];
}

/** One node as the operator sees it (ipam.Node and its eni.Node operations). */
interface CiliumNode {
  readonly spec: NodeSpec;
  readonly instanceId: string;
  readonly subnetId: string;
  readonly adapters: number;
  /** Secondary addresses per ENI: IPv4 per interface minus the primary. */
  readonly perEni: number;
  readonly agent: Agent;
  /** Empty until an instance sync finds the instance ("Instance not found": no deficit). */
  enis: CachedEni[];
  /** Assigned on EC2 but not yet written into the CiliumNode's pool. */
  unpublished: string[];
  /** Upsert done: the NodeManager knows the node. */
  known: boolean;
  /** An update to check for a deficit (Upsert's UpdatedResource). */
  recheck: boolean;
  /** `waitingForPoolMaintenance`. */
  maintaining: boolean;
  /** `resyncNeeded`: set by a maintenance, cleared by a resync that started after it. */
  resyncNeededAt: number | undefined;
  /** The instance sync trigger is pending or running (a second trigger folds into it). */
  syncing: boolean;
  /** `ipsMarkedForRelease`: when each address was first found excess. */
  readonly excessSince: Map<string, number>;
}

type MaintenanceOutcome = 'mutated' | 'unchanged' | 'failed';

/** The cilium-operator's ENI allocator: NodeManager, InstancesManager and the EC2 client. */
class Operator {
  /** Calls the fake cannot answer, by action (they still took their token). */
  readonly callsBeyondFake = new Map<DescribeBeyondFake, number>();
  readonly nodes: CiliumNode[] = [];
  readonly #ec2: FakeEc2;
  readonly #ledger: CallLedger;
  readonly #limiter: ApiLimiter;
  readonly #clock: { now: number };
  readonly #settings: CiliumSettings;
  readonly #byInstance = new Map<string, CiliumNode>();
  /** Free addresses per subnet as the last DescribeSubnets answered. */
  readonly #subnetFree = new Map<string, number>();
  #resynced = false;
  #fleetResyncRunning = false;
  #nextFleetResyncAt: number;
  #token = 0;

  constructor(
    ec2: FakeEc2,
    ledger: CallLedger,
    limiter: ApiLimiter,
    clock: { now: number },
    settings: CiliumSettings,
  ) {
    this.#ec2 = ec2;
    this.#ledger = ledger;
    this.#limiter = limiter;
    this.#clock = clock;
    this.#settings = settings;
    // The blocking resync at operator start.
    this.#nextFleetResyncAt = clock.now;
  }

  /** The agent on a new node created its CiliumNode. */
  join(spec: NodeSpec, instanceId: string, subnetId: string, agent: Agent): void {
    const limits = INSTANCE_TYPES[spec.type];
    if (!limits) throw new Error(`unknown instance type ${spec.type}`);
    const node: CiliumNode = {
      spec,
      instanceId,
      subnetId,
      adapters: limits.maxNetworkInterfaces,
      perEni: limits.ipv4PerInterface - 1,
      agent,
      enis: [],
      unpublished: [],
      known: false,
      recheck: false,
      maintaining: false,
      resyncNeededAt: undefined,
      syncing: false,
      excessSince: new Map(),
    };
    this.nodes.push(node);
    this.#byInstance.set(instanceId, node);
    void this.#upsert(node);
  }

  /** Addresses the node holds on EC2, used or not. */
  addresses(node: CiliumNode): number {
    let total = 0;
    for (const eni of node.enis) total += eni.ips.length;
    return total;
  }

  /** The operator's work at the start of a second: watch events, periodic syncs, the queue. */
  tick(second: number): void {
    const now = this.#clock.now;
    for (const node of this.nodes) node.agent.reportIfDue(now);
    if (!this.#fleetResyncRunning && now >= this.#nextFleetResyncAt) void this.#resyncFleet();
    if (second > 0 && second % ENI_GC_INTERVAL_S === 0) void this.#collectGarbage();
    this.#queueMaintenance();
  }

  async #upsert(node: CiliumNode): Promise<void> {
    await this.#syncInstance(node);
    node.known = true;
    node.recheck = true;
  }

  #deficit(node: CiliumNode): { needed: number; excess: number } {
    const { preAllocate, minAllocate, maxAllocate, maxAboveWatermark } = this.#settings;
    const available = this.addresses(node);
    const used = node.agent.reportedUsed;
    const cap = maxAllocate > 0 ? maxAllocate : instanceMaximum(node.spec.type);
    return {
      needed: neededIps(available, used, preAllocate, minAllocate, cap),
      excess: excessIps(available, used, preAllocate, minAllocate, maxAboveWatermark),
    };
  }

  /**
   * The nodes to serve, largest deficit first and releases after: every node after a resync,
   * otherwise those whose CiliumNode changed. Release is only looked for on resyncs.
   */
  #queueMaintenance(): void {
    const afterResync = this.#resynced;
    this.#resynced = false;
    const queue: { readonly node: CiliumNode; readonly need: number }[] = [];
    for (const node of this.nodes) {
      const updated = node.agent.takeUpdate();
      if (!node.known || !(afterResync || updated || node.recheck)) continue;
      node.recheck = false;
      if (node.maintaining || node.resyncNeededAt !== undefined || node.enis.length === 0) continue;
      const { needed, excess } = this.#deficit(node);
      if (needed > 0) queue.push({ node, need: needed });
      else if (afterResync && this.#settings.releaseExcessIps && excess > 0) {
        queue.push({ node, need: -excess });
      }
    }
    queue.sort((a, b) => (a.need < 0 && b.need < 0 ? a.need - b.need : b.need - a.need));
    for (const { node } of queue) {
      node.maintaining = true;
      void this.#maintain(node);
    }
  }

  /** `MaintainIPPool`: release or allocate, then owe a resync; a change triggers the sync. */
  async #maintain(node: CiliumNode): Promise<void> {
    const { needed, excess } = this.#deficit(node);
    let outcome: MaintenanceOutcome = 'unchanged';
    if (this.#settings.releaseExcessIps && excess > 0) {
      outcome = await this.#releaseExcess(node, excess);
    } else if (needed > 0) outcome = await this.#allocate(node, needed);
    node.maintaining = false;
    if (outcome !== 'failed') node.resyncNeededAt = this.#clock.now;
    if (outcome !== 'unchanged' && !node.syncing) void this.#syncAfterChange(node);
  }

  async #allocate(node: CiliumNode, needed: number): Promise<MaintenanceOutcome> {
    const surge = Math.max(node.agent.pending - needed, 0);
    const asked = needed + this.#settings.maxAboveWatermark + surge;
    const withRoom = node.enis.find(
      (eni) =>
        eni.deviceIndex >= FIRST_INTERFACE_INDEX &&
        eni.ips.length < node.perEni &&
        (this.#subnetFree.get(eni.subnetId) ?? 0) > 0,
    );
    if (withRoom) {
      const count = Math.min(
        node.perEni - withRoom.ips.length,
        this.#subnetFree.get(withRoom.subnetId) ?? 0,
        asked,
      );
      const ips = await this.#call('AssignPrivateIpAddresses', () =>
        this.#ec2.assignPrivateIpAddresses({ eniId: withRoom.eniId, count }),
      );
      if (ips) {
        // Looked up again: an instance sync may have replaced the cached ENI meanwhile.
        node.enis.find((eni) => eni.eniId === withRoom.eniId)?.ips.push(...ips.value);
        node.unpublished.push(...ips.value);
        return 'mutated';
      }
    }
    return this.#createInterface(node, asked);
  }

  /** `CreateInterface`: a new ENI with the addresses asked for, attached at the first free index. */
  async #createInterface(node: CiliumNode, asked: number): Promise<MaintenanceOutcome> {
    // Out of adapters is not a failure: the node is at capacity.
    if (node.enis.length >= node.adapters) return 'unchanged';
    const subnetId = this.#subnetForInterface(node);
    if (subnetId === undefined) return 'failed';
    const count = Math.min(asked, node.perEni);
    const created = await this.#call('CreateNetworkInterface', () =>
      this.#ec2.createNetworkInterface({
        subnetId,
        securityGroupIds: [SECURITY_GROUP],
        secondaryIpCount: count,
        description: `Cilium-CNI (${node.instanceId})`,
        tags: ENI_GC_TAGS,
        clientToken: `cilium-${this.#token++}`,
      }),
    );
    if (!created) return 'failed';
    const eniId = created.value.eniId;
    const taken = new Set(node.enis.map((eni) => eni.deviceIndex));
    let deviceIndex = FIRST_INTERFACE_INDEX;
    while (taken.has(deviceIndex)) deviceIndex++;
    const attached = await this.#call('AttachNetworkInterface', () =>
      this.#ec2.attachNetworkInterface({ eniId, instanceId: node.instanceId, deviceIndex }),
    );
    if (!attached) {
      await this.#call('DeleteNetworkInterface', () => this.#ec2.deleteNetworkInterface({ eniId }));
      return 'failed';
    }
    const marked = await this.#call('ModifyNetworkInterfaceAttribute', () =>
      this.#ec2.setDeleteOnTermination({ eniId, attachmentId: attached.value.attachmentId }),
    );
    if (!marked) {
      await this.#call('DeleteNetworkInterface', () => this.#ec2.deleteNetworkInterface({ eniId }));
      return 'failed';
    }
    const ips = [...created.value.secondaryIps];
    // UpdateENI: an instance sync after the attach may already have cached it.
    if (!node.enis.some((eni) => eni.eniId === eniId)) {
      node.enis.push({ eniId, subnetId, deviceIndex, ips });
    }
    node.unpublished.push(...ips);
    return 'mutated';
  }

  /** `findSuitableSubnet`: the node's own subnet while it fits an ENI, else the one most free. */
  #subnetForInterface(node: CiliumNode): string | undefined {
    const fits = node.perEni + 1;
    if ((this.#subnetFree.get(node.subnetId) ?? 0) >= fits) return node.subnetId;
    let best: string | undefined;
    for (const [subnetId, free] of this.#subnetFree) {
      if (free > 0 && (best === undefined || free > (this.#subnetFree.get(best) ?? 0))) {
        best = subnetId;
      }
    }
    return best;
  }

  /**
   * `PrepareIPRelease` + `handleIPRelease`: the ENI with the most free addresses offers up to the
   * excess; those that stayed excess for the delay go in one UnassignPrivateIpAddresses.
   */
  async #releaseExcess(node: CiliumNode, excess: number): Promise<MaintenanceOutcome> {
    let offer: { readonly eni: CachedEni; readonly ips: string[] } | undefined;
    for (const eni of [...node.enis].sort((a, b) => a.eniId.localeCompare(b.eniId))) {
      const free = eni.ips.filter((ip) => !node.agent.uses(ip));
      const count = Math.min(free.length, excess);
      if (count > 0 && count > (offer?.ips.length ?? 0)) offer = { eni, ips: free.slice(0, count) };
    }
    const now = this.#clock.now;
    const offered = new Set(offer?.ips ?? []);
    for (const ip of node.excessSince.keys()) if (!offered.has(ip)) node.excessSince.delete(ip);
    for (const ip of offered) if (!node.excessSince.has(ip)) node.excessSince.set(ip, now);
    const due = [...offered].filter(
      (ip) => now - (node.excessSince.get(ip) ?? now) >= EXCESS_IP_RELEASE_DELAY_MS,
    );
    if (!offer || due.length === 0) return 'unchanged';
    const eniId = offer.eni.eniId;
    const unpublished = new Set(node.unpublished);
    const inPool = due.filter((ip) => !unpublished.has(ip));
    node.agent.acknowledgeRelease(inPool);
    const done = await this.#call('UnassignPrivateIpAddresses', () =>
      this.#ec2.unassignPrivateIpAddresses({ eniId, ips: due }),
    );
    if (!done) {
      node.agent.publish(inPool, this.#clock.now);
      return 'failed';
    }
    const gone = new Set(due);
    const cached = node.enis.find((eni) => eni.eniId === eniId);
    if (cached) {
      const kept = cached.ips.filter((ip) => !gone.has(ip));
      cached.ips.splice(0, cached.ips.length, ...kept);
    }
    node.unpublished = node.unpublished.filter((ip) => !gone.has(ip));
    for (const ip of due) node.excessSince.delete(ip);
    return 'mutated';
  }

  async #syncAfterChange(node: CiliumNode): Promise<void> {
    node.syncing = true;
    const started = this.#clock.now;
    const synced = await this.#syncInstance(node);
    node.syncing = false;
    if (synced) this.#resyncNodes(started);
  }

  /** `InstanceSync`: the account's network, then the instance's ENIs. */
  async #syncInstance(node: CiliumNode): Promise<boolean> {
    if (!(await this.#describeNetwork())) return false;
    const page = await this.#call('DescribeNetworkInterfaces', () =>
      this.#ec2.describeNetworkInterfaces({
        filters: { 'attachment.instance-id': [node.instanceId] },
      }),
    );
    if (!page) return false;
    this.#adopt(page.value.interfaces);
    return true;
  }

  /** The interval-based full resync: the account's network, then every ENI. */
  async #resyncFleet(): Promise<void> {
    this.#fleetResyncRunning = true;
    const started = this.#clock.now;
    const interfaces = (await this.#describeNetwork()) ? await this.#listInterfaces() : undefined;
    if (interfaces) {
      this.#adopt(interfaces);
      this.#resyncNodes(started);
    }
    this.#fleetResyncRunning = false;
    this.#nextFleetResyncAt = this.#clock.now + RESYNC_INTERVAL_MS;
  }

  /** `GetInstances`: every ENI, page by page; undefined if a page fails. */
  async #listInterfaces(): Promise<Ec2NetworkInterface[] | undefined> {
    const interfaces: Ec2NetworkInterface[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.#call('DescribeNetworkInterfaces', () =>
        this.#ec2.describeNetworkInterfaces({
          filters: { 'subnet-id': SUBNET_IDS },
          pageSize: 1000,
          nextToken,
        }),
      );
      if (!page) return undefined;
      interfaces.push(...page.value.interfaces);
      nextToken = page.value.nextToken;
    } while (nextToken);
    return interfaces;
  }

  /** GetVpcs, GetSubnets, GetSecurityGroups, GetRouteTables: the head of every resync. */
  async #describeNetwork(): Promise<boolean> {
    await this.#describeBeyondFake('DescribeVpcs');
    const subnets = await this.#call('DescribeSubnets', () =>
      this.#ec2.describeSubnets(SUBNET_IDS),
    );
    if (!subnets) return false;
    for (const subnet of subnets.value) {
      this.#subnetFree.set(subnet.subnetId, subnet.availableIpCount);
    }
    await this.#describeBeyondFake('DescribeSecurityGroups');
    await this.#describeBeyondFake('DescribeRouteTables');
    return true;
  }

  /** The instance cache takes EC2's view of the instances these ENIs are attached to. */
  #adopt(interfaces: readonly Ec2NetworkInterface[]): void {
    const byNode = new Map<CiliumNode, CachedEni[]>();
    for (const eni of interfaces) {
      const node = eni.attachment ? this.#byInstance.get(eni.attachment.instanceId) : undefined;
      if (!node || !eni.attachment) continue;
      const enis = byNode.get(node) ?? [];
      enis.push({
        eniId: eni.eniId,
        subnetId: eni.subnetId,
        deviceIndex: eni.attachment.deviceIndex,
        ips: [...eni.secondaryIps],
      });
      byNode.set(node, enis);
    }
    for (const [node, enis] of byNode) {
      node.enis = enis.sort((a, b) => a.deviceIndex - b.deviceIndex);
    }
  }

  /** `Resync`: owed resyncs are paid and every CiliumNode's pool is written for its agent. */
  #resyncNodes(started: number): void {
    for (const node of this.nodes) {
      if (!node.known) continue;
      if (node.resyncNeededAt !== undefined && started >= node.resyncNeededAt) {
        node.resyncNeededAt = undefined;
      }
      if (node.unpublished.length > 0) {
        const ips = node.unpublished;
        node.unpublished = [];
        node.agent.publish(ips, this.#clock.now);
      }
    }
    this.#resynced = true;
  }

  /** The ENI garbage collector's listing of detached ENIs it tagged (it finds none here). */
  async #collectGarbage(): Promise<void> {
    const filters: Record<string, readonly string[]> = { status: ['available'] };
    for (const tag of ENI_GC_TAGS) filters[`tag:${tag.key}`] = [tag.value];
    await this.#call('DescribeNetworkInterfaces', () =>
      this.#ec2.describeNetworkInterfaces({ filters }),
    );
  }

  /** One EC2 call behind the limiter; a failure answers undefined. */
  async #call<T>(
    action: Ec2Action,
    run: () => Promise<T>,
  ): Promise<{ readonly value: T } | undefined> {
    await this.#limiter.take();
    try {
      const value = await run();
      this.#ledger.record(action, this.#clock.now, false);
      return { value };
    } catch (error) {
      const throttled = (error as { name?: string }).name === 'RequestLimitExceeded';
      this.#ledger.record(action, this.#clock.now, throttled);
      return undefined;
    }
  }

  async #describeBeyondFake(action: DescribeBeyondFake): Promise<void> {
    await this.#limiter.take();
    this.callsBeyondFake.set(action, (this.callsBeyondFake.get(action) ?? 0) + 1);
  }
}

/**
 * One day of Cilium's ENI operator and agents on `events`. `untilSecond` shortens the day (tests).
 */
export async function runCilium(
  name: string,
  settings: CiliumSettings,
  day: DayKind,
  nodes: NodeSpec[],
  events: PodEvent[],
  untilSecond = DAY_S,
): Promise<EniRunResult> {
  const clock = { now: START };
  const fake = new FakeEc2({
    now: () => clock.now,
    random: seededRandom(SEED + 3),
    recordCalls: false,
  });
  const subnets = new DaySubnets(fake, day);
  const ledger = new CallLedger();
  const limiter = new ApiLimiter(clock, settings.apiQps, settings.apiBurst);
  const operator = new Operator(fake, ledger, limiter, clock, settings);
  const waits = new Waits();
  const podsPerNode = new PodsPerNode();
  const agents: (Agent | undefined)[] = nodes.map(() => undefined);
  const idle: number[] = [];
  const idleByType = new IdleByType();
  const joins = new JoinSchedule(nodes);
  let next = 0;
  for (let second = 0; second < untilSecond; second++) {
    const secondStart = START + second * 1000;
    await limiter.runUntil(secondStart);
    clock.now = secondStart;
    subnets.advance(second);
    for (const { index, spec, subnetId } of joins.due(second)) {
      const instanceId = fake.launchInstance({ instanceType: spec.type, subnetId });
      const agent = new Agent(spec.type, () => subnets.fragmentedNow(subnetId), waits, podsPerNode);
      podsPerNode.capacity(spec.type, instanceMaximum(spec.type));
      operator.join(spec, instanceId, subnetId, agent);
      agents[index] = agent;
    }
    operator.tick(second);
    for (; next < events.length && (events[next]?.at ?? DAY_S) < second + 1; next++) {
      const event = events[next];
      const agent = event ? agents[event.node] : undefined;
      if (!event || !agent) continue;
      const at = START + Math.floor(event.at * 1000);
      await limiter.runUntil(at);
      clock.now = at;
      if (event.kind === 'arrive') agent.arrive(event.pod, at);
      else agent.depart(event.pod, at);
    }
    if (second % BERTH_PASS_S === 0) {
      let sum = 0;
      for (const node of operator.nodes) {
        const idleOnNode = operator.addresses(node) - node.agent.used;
        sum += idleOnNode;
        idleByType.add(node.spec.type, idleOnNode);
      }
      idle.push(sum);
    }
  }
  const end = START + untilSecond * 1000;
  await limiter.runUntil(end);
  clock.now = end;
  for (const agent of agents) agent?.finish(end);
  const counted = tally(ledger, idle, waits, podsPerNode);
  const callsByAction: Record<string, number> = {
    ...counted.callsByAction,
    ...Object.fromEntries(operator.callsBeyondFake),
  };
  return {
    name,
    settings: {
      preAllocate: settings.preAllocate,
      minAllocate: settings.minAllocate,
      maxAllocate: settings.maxAllocate,
      maxAboveWatermark: settings.maxAboveWatermark,
      releaseExcessIps: String(settings.releaseExcessIps),
      apiQps: settings.apiQps,
      apiBurst: settings.apiBurst,
      ciliumNodeUpdateRateSeconds: CILIUM_NODE_UPDATE_RATE_MS / 1000,
      resyncIntervalSeconds: RESYNC_INTERVAL_MS / 1000,
      excessIpReleaseDelaySeconds: EXCESS_IP_RELEASE_DELAY_MS / 1000,
    },
    ...counted,
    callsByAction: Object.fromEntries(
      Object.entries(callsByAction).sort(([a], [b]) => a.localeCompare(b)),
    ),
    peakCallsPerSecond: peak(limiter.perSecond),
    idleByInstanceType: idleByType.averages(),
  };
}

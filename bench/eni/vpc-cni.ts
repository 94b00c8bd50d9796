/**
 * The AWS VPC CNI's ipamd in the ENI benchmark, modelled per node from the formulas in
 * shared/reference/eni-ip-pool.md §2 (5 s loop, cooldown IPs counted as available, 30 s decrease
 * interval, one ENI freed per cycle, ENIs freed only when old ≥ 1 min with no assigned or cooling
 * IP, 120 s without growth after an insufficient-addresses or insufficient-CIDR error), calling
 * the same EC2 fake. With prefix delegation (§2.6) the node's slots, the primary ENI's included,
 * take /28 prefixes: WARM_PREFIX_TARGET, or the IP targets converted to prefixes; there is no
 * fallback to single addresses, so a subnet without a free /28 leaves pods waiting (#2749).
 */
import { type Ec2Action, IPV4_PREFIX_SIZE, prefixAddresses } from '../../shared/ec2/network.js';
import { FakeEc2, INSTANCE_TYPES } from '../../sim/ec2-fake.js';
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

/** ipamd's settings in each peer run: its default, and the tuned ones users compare with. */
export const VPC_CNI_RUNS = {
  warmEni: { warmEniTarget: 1, warmIpTarget: 0, minimumIpTarget: 0 },
  warmIp: { warmEniTarget: 1, warmIpTarget: 4, minimumIpTarget: 8 },
  prefixWarmPrefix: {
    warmEniTarget: 1,
    warmIpTarget: 0,
    minimumIpTarget: 0,
    prefixDelegation: true,
    warmPrefixTarget: 1,
  },
  prefixWarmIp: {
    warmEniTarget: 1,
    warmIpTarget: 5,
    minimumIpTarget: 10,
    prefixDelegation: true,
    warmPrefixTarget: 0,
  },
} as const satisfies Record<string, CniSettings>;

/** The EKS max-pods calculator's cap with prefix delegation: 110 below 30 vCPUs (all here). */
const PREFIX_MODE_MAX_PODS = 110;
/** ipamd's `insufficientCidrErrorCooldown`: no growth for this long after the subnet refused. */
const INSUFFICIENT_CIDR_COOLDOWN_MS = 120_000;

// ---- AWS VPC CNI ipamd model ------------------------------------------------------------------

interface CniIp {
  pod?: string;
  unassignedAt?: number;
  /** The /28 it belongs to, in prefix mode. */
  readonly prefix?: string;
}

interface CniEni {
  readonly eniId: string;
  readonly primary: boolean;
  readonly createdAt: number;
  attachmentId: string;
  readonly deviceIndex: number;
  readonly ips: Map<string, CniIp>;
}

interface CniNode {
  readonly spec: NodeSpec;
  readonly instanceId: string;
  readonly subnetId: string;
  readonly maxEnis: number;
  /** Slots per ENI: addresses, or /28 prefixes with prefix delegation. */
  readonly perEni: number;
  readonly maxPods: number;
  readonly enis: CniEni[];
  /** Pods waiting for an address: since when, and whether the subnet had no /28 then. */
  readonly pending: Map<string, { readonly since: number; readonly fragmented: boolean }>;
  lastDecrease: number;
  /** No growth before this (after InsufficientCidrBlocks or InsufficientFreeAddressesInSubnet). */
  growAfter: number;
}

export interface CniSettings {
  readonly warmEniTarget: number;
  readonly warmIpTarget: number;
  readonly minimumIpTarget: number;
  readonly prefixDelegation?: boolean;
  readonly warmPrefixTarget?: number;
}

const SUBNET_REFUSALS = new Set(['InsufficientCidrBlocks', 'InsufficientFreeAddressesInSubnet']);

/** One node's ipamd, per reference §2.2–2.7. */
class Ipamd {
  readonly #ec2: FakeEc2;
  readonly #ledger: CallLedger;
  readonly #now: () => number;
  readonly #settings: CniSettings;
  #token = 0;

  constructor(ec2: FakeEc2, ledger: CallLedger, now: () => number, settings: CniSettings) {
    this.#ec2 = ec2;
    this.#ledger = ledger;
    this.#now = now;
    this.#settings = settings;
  }

  get #ipTargets(): boolean {
    return this.#settings.warmIpTarget > 0 || this.#settings.minimumIpTarget > 0;
  }

  get #prefixes(): boolean {
    return this.#settings.prefixDelegation === true;
  }

  /** Addresses one slot holds. */
  get #slotSize(): number {
    return this.#prefixes ? IPV4_PREFIX_SIZE : 1;
  }

  /**
   * One EC2 request; a failure (throttled or not) answers undefined and is retried next cycle. A
   * subnet that refused for want of addresses or /28s is not asked to grow again for 120 s.
   */
  async #call<T>(
    action: Ec2Action,
    run: () => Promise<T>,
    node?: CniNode,
  ): Promise<{ readonly value: T } | undefined> {
    try {
      const value = await run();
      this.#ledger.record(action, this.#now(), false);
      return { value };
    } catch (error) {
      const name = (error as { name?: string }).name ?? '';
      this.#ledger.record(action, this.#now(), name === 'RequestLimitExceeded');
      if (node && SUBNET_REFUSALS.has(name)) {
        node.growAfter = this.#now() + INSUFFICIENT_CIDR_COOLDOWN_MS;
      }
      return undefined;
    }
  }

  /** The node's prefixes with no pod on any of their addresses. */
  #freePrefixes(node: CniNode): { eni: CniEni; prefix: string }[] {
    const out: { eni: CniEni; prefix: string }[] = [];
    for (const eni of node.enis) {
      const busy = new Set<string>();
      const all = new Set<string>();
      for (const ip of eni.ips.values()) {
        if (!ip.prefix) continue;
        all.add(ip.prefix);
        if (ip.pod) busy.add(ip.prefix);
      }
      for (const prefix of all) if (!busy.has(prefix)) out.push({ eni, prefix });
    }
    return out;
  }

  counts(node: CniNode): { total: number; assigned: number } {
    let total = 0;
    let assigned = 0;
    for (const eni of node.enis) {
      total += eni.ips.size;
      for (const ip of eni.ips.values()) if (ip.pod) assigned++;
    }
    return { total, assigned };
  }

  /** CNI ADD: an unused IP past its 30 s cooldown, or nothing (the pod waits). */
  take(node: CniNode, pod: string): boolean {
    const now = this.#now();
    for (const eni of node.enis) {
      for (const ip of eni.ips.values()) {
        if (!ip.pod && (ip.unassignedAt === undefined || now - ip.unassignedAt > CNI_COOLDOWN_MS)) {
          ip.pod = pod;
          ip.unassignedAt = undefined;
          return true;
        }
      }
    }
    return false;
  }

  /** CNI DEL. */
  free(node: CniNode, pod: string): void {
    for (const eni of node.enis) {
      for (const ip of eni.ips.values()) {
        if (ip.pod === pod) {
          ip.pod = undefined;
          ip.unassignedAt = this.#now();
          return;
        }
      }
    }
  }

  /**
   * `datastoreTargetState` (§2.5, §2.6): how many slots (addresses, or prefixes with prefix
   * delegation) the pool is short of, and how many it holds over its targets.
   */
  #targets(node: CniNode): { short: number; over: number; tooLow: boolean } {
    const { warmEniTarget, warmIpTarget, minimumIpTarget } = this.#settings;
    const { total, assigned } = this.counts(node);
    const available = total - assigned;
    if (this.#prefixes) {
      const warmPrefixTarget = this.#settings.warmPrefixTarget ?? 0;
      const freePrefixes = this.#freePrefixes(node).length;
      if (this.#ipTargets) {
        let short = Math.max(warmIpTarget - available, 0);
        short = Math.max(short, minimumIpTarget - total);
        const totalPrefixes = total / IPV4_PREFIX_SIZE;
        const over = Math.max(
          0,
          Math.min(
            freePrefixes,
            totalPrefixes - Math.ceil((assigned + warmIpTarget) / IPV4_PREFIX_SIZE),
            totalPrefixes - Math.ceil(minimumIpTarget / IPV4_PREFIX_SIZE),
          ),
        );
        return { short: Math.ceil(short / IPV4_PREFIX_SIZE), over, tooLow: short > 0 };
      }
      return {
        short: Math.max(1, warmPrefixTarget - freePrefixes),
        over: Math.max(0, freePrefixes - warmPrefixTarget),
        tooLow:
          available < IPV4_PREFIX_SIZE * warmPrefixTarget ||
          (warmPrefixTarget === 0 && available === 0),
      };
    }
    if (this.#ipTargets) {
      let short = Math.max(warmIpTarget - available, 0);
      short = Math.max(short, minimumIpTarget - total);
      let over = Math.max(available - warmIpTarget, 0);
      over = Math.max(Math.min(over, total - minimumIpTarget), 0);
      return { short, over, tooLow: short > 0 };
    }
    return {
      short: node.perEni,
      over: 0,
      tooLow: available < node.perEni * warmEniTarget || (warmEniTarget === 0 && available === 0),
    };
  }

  /** One `updateIPPoolIfRequired` cycle, then pending pods are served. */
  async tick(node: CniNode, waits: Waits): Promise<void> {
    const { warmEniTarget } = this.#settings;
    const { total, assigned } = this.counts(node);
    const available = total - assigned;
    const targets = this.#targets(node);
    const { short, over } = targets;
    const tooLow = targets.tooLow && total < node.maxPods;
    if (tooLow) {
      if (this.#now() >= node.growAfter) await this.#increase(node, short);
    } else if (over > 0 && this.#now() - node.lastDecrease > CNI_DECREASE_INTERVAL_MS) {
      await this.#decrease(node, over);
      node.lastDecrease = this.#now();
    }
    const extra =
      this.#ipTargets ||
      (this.#prefixes ? over > 0 : available >= (warmEniTarget + 1) * node.perEni);
    if (extra) await this.#tryFreeEni(node);
    for (const [pod, wait] of [...node.pending]) {
      if (!this.take(node, pod)) break;
      node.pending.delete(pod);
      waits.add(this.#now() - wait.since, wait.fragmented);
    }
  }

  /** Slots in use on an ENI: one per address, or one per prefix. */
  #slotsUsed(eni: CniEni): number {
    return eni.ips.size / this.#slotSize;
  }

  /** Addresses (or /28s, each as its 16 addresses) an ENI newly holds. */
  #add(eni: CniEni, granted: readonly string[]): void {
    for (const grant of granted) {
      if (!this.#prefixes) eni.ips.set(grant, {});
      else for (const ip of prefixAddresses(grant)) eni.ips.set(ip, { prefix: grant });
    }
  }

  async #increase(node: CniNode, short: number): Promise<void> {
    const withRoom = node.enis.find((eni) => this.#slotsUsed(eni) < node.perEni);
    if (withRoom) {
      const room = node.perEni - this.#slotsUsed(withRoom);
      // Prefix mode asks for what it is short of (`getPrefixesNeeded`); WARM_ENI fills the ENI.
      const want = this.#ipTargets || this.#prefixes ? Math.min(room, short) : room;
      const granted = this.#prefixes
        ? await this.#call(
            'AssignPrivateIpAddresses',
            () => this.#ec2.assignIpv4Prefixes({ eniId: withRoom.eniId, count: want }),
            node,
          )
        : await this.#call(
            'AssignPrivateIpAddresses',
            () => this.#ec2.assignPrivateIpAddresses({ eniId: withRoom.eniId, count: want }),
            node,
          );
      this.#add(withRoom, granted?.value ?? []);
      return;
    }
    if (node.enis.length >= node.maxEnis) return;
    const count = this.#ipTargets || this.#prefixes ? Math.min(short, node.perEni) : node.perEni;
    const created = await this.#call(
      'CreateNetworkInterface',
      () =>
        this.#ec2.createNetworkInterface({
          subnetId: node.subnetId,
          securityGroupIds: ['sg-0123456789abcdef0'],
          secondaryIpCount: this.#prefixes ? 0 : count,
          ...(this.#prefixes ? { ipv4PrefixCount: count } : {}),
          description: `aws-K8S-${node.instanceId}`,
          tags: [{ key: 'node.k8s.amazonaws.com/instance_id', value: node.instanceId }],
          clientToken: `cni-${this.#token++}`,
        }),
      node,
    );
    if (!created) return;
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
    if (!attached) {
      // ipamd deletes an ENI it could not attach.
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
    };
    this.#add(added, this.#prefixes ? eni.ipv4Prefixes : eni.secondaryIps);
    node.enis.push(added);
  }

  /**
   * Gives back `over` slots, one call per ENI: unassigned addresses (cooldown not checked) in
   * WARM_IP_TARGET mode, free prefixes with prefix delegation.
   */
  async #decrease(node: CniNode, over: number): Promise<void> {
    if (this.#prefixes) {
      const byEni = new Map<CniEni, string[]>();
      for (const { eni, prefix } of this.#freePrefixes(node).slice(0, over)) {
        byEni.set(eni, [...(byEni.get(eni) ?? []), prefix]);
      }
      for (const [eni, prefixes] of byEni) {
        const done = await this.#call('UnassignPrivateIpAddresses', () =>
          this.#ec2.unassignIpv4Prefixes({ eniId: eni.eniId, prefixes }),
        );
        if (done === undefined) return;
        for (const [ip, record] of [...eni.ips]) {
          if (record.prefix && prefixes.includes(record.prefix)) eni.ips.delete(ip);
        }
      }
      return;
    }
    let left = over;
    for (const eni of node.enis) {
      if (left <= 0) break;
      const freeable = [...eni.ips].filter(([, ip]) => !ip.pod).slice(0, left);
      if (freeable.length === 0) continue;
      const done = await this.#call('UnassignPrivateIpAddresses', () =>
        this.#ec2.unassignPrivateIpAddresses({ eniId: eni.eniId, ips: freeable.map(([ip]) => ip) }),
      );
      if (done === undefined) return;
      for (const [ip] of freeable) eni.ips.delete(ip);
      left -= freeable.length;
    }
  }

  /** `getDeletableENI` + FreeENI: at most one ENI per cycle. */
  async #tryFreeEni(node: CniNode): Promise<void> {
    const now = this.#now();
    const { warmIpTarget, minimumIpTarget } = this.#settings;
    const deletable = node.enis.find((eni) => {
      if (eni.primary || now - eni.createdAt < CNI_MIN_ENI_LIFETIME_MS) return false;
      for (const ip of eni.ips.values()) {
        if (ip.pod) return false;
        if (ip.unassignedAt !== undefined && now - ip.unassignedAt <= CNI_COOLDOWN_MS) return false;
      }
      if (!this.#ipTargets) return true;
      let otherFree = 0;
      let otherTotal = 0;
      for (const other of node.enis) {
        if (other === eni) continue;
        otherTotal += other.ips.size;
        for (const ip of other.ips.values()) if (!ip.pod) otherFree++;
      }
      return otherFree >= warmIpTarget && otherTotal >= minimumIpTarget;
    });
    if (!deletable) return;
    const detached = await this.#call('DetachNetworkInterface', () =>
      this.#ec2.detachNetworkInterface({ attachmentId: deletable.attachmentId }),
    );
    if (detached === undefined) return;
    node.enis.splice(node.enis.indexOf(deletable), 1);
    // ipamd sleeps 2 s between detach and delete; the fake's detach takes 1 s.
    const at = this.#now();
    deferred.push({ at: at + 2_000, run: () => this.#deleteLater(deletable.eniId, 0) });
  }

  async #deleteLater(eniId: string, attempt: number): Promise<void> {
    const done = await this.#call('DeleteNetworkInterface', () =>
      this.#ec2.deleteNetworkInterface({ eniId }),
    );
    if (done === undefined && attempt < 12) {
      deferred.push({
        at: this.#now() + 500 * 2 ** attempt,
        run: () => this.#deleteLater(eniId, attempt + 1),
      });
    }
  }
}

/** Work ipamd scheduled for later (deletes after detach), shared by the model's nodes. */
let deferred: { at: number; run: () => Promise<void> }[] = [];

export async function runVpcCni(
  name: string,
  settings: CniSettings,
  day: DayKind,
  nodes: NodeSpec[],
  events: PodEvent[],
): Promise<EniRunResult> {
  deferred = [];
  const clock = { now: START };
  const now = () => clock.now;
  const fake = new FakeEc2({ now, random: seededRandom(SEED + 2), recordCalls: false });
  const subnets = new DaySubnets(fake, day);
  const ledger = new CallLedger();
  const ipamd = new Ipamd(fake, ledger, now, settings);
  const live: (CniNode | undefined)[] = nodes.map(() => undefined);
  const byPhase: CniNode[][] = Array.from({ length: CNI_LOOP_S }, () => []);
  const idle: number[] = [];
  const idleByType = new IdleByType();
  const waits = new Waits();
  const podsPerNode = new PodsPerNode();
  const joins = new JoinSchedule(nodes);
  let next = 0;
  for (let second = 0; second < DAY_S; second++) {
    clock.now = START + second * 1000;
    subnets.advance(second);
    for (const { index, spec, subnetId } of joins.due(second)) {
      const node = joinNode(fake, spec, subnetId, settings, clock.now);
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
          const fragmented = subnets.shortOfPrefixes(node.subnetId);
          node.pending.set(event.pod, { since: clock.now, fragmented });
        }
      } else {
        const wait = node.pending.get(event.pod);
        if (wait) {
          // It waited until its game was given up: the whole session.
          node.pending.delete(event.pod);
          waits.add(clock.now - wait.since, wait.fragmented);
        } else ipamd.free(node, event.pod);
      }
    }
    clock.now = START + second * 1000;
    const due = deferred.filter((d) => d.at <= clock.now);
    if (due.length > 0) {
      deferred = deferred.filter((d) => d.at > clock.now);
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
      waits.add(clock.now - wait.since, wait.fragmented);
    }
  }
  return {
    name,
    settings: {
      ...settings,
      prefixDelegation: String(settings.prefixDelegation === true),
      loopSeconds: CNI_LOOP_S,
      cooldownSeconds: CNI_COOLDOWN_MS / 1000,
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
    enis: [
      {
        eniId: primary?.eniId ?? '',
        primary: true,
        createdAt: now,
        attachmentId: primary?.attachment?.attachmentId ?? '',
        deviceIndex: 0,
        ips: new Map(),
      },
    ],
    pending: new Map(),
    lastDecrease: 0,
    growAfter: 0,
  };
}

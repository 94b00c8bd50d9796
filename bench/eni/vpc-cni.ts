/**
 * The AWS VPC CNI's ipamd in the ENI benchmark, modelled per node from the formulas in
 * shared/reference/eni-ip-pool.md §2 (5 s loop, cooldown IPs counted as available, 30 s decrease
 * interval, one ENI freed per cycle, ENIs freed only when old ≥ 1 min with no assigned or cooling
 * IP), calling the same EC2 fake.
 */
import type { Ec2Action } from '../../shared/ec2/network.js';
import { FakeEc2, INSTANCE_TYPES } from '../../test/fakes/ec2-fake.js';
import { seededRandom } from '../../test/support/random.js';
import { CallLedger, type EniRunResult, IdleByType, tally } from './ledger.js';
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

export const WARM_IP = { warmIpTarget: 4, minimumIpTarget: 8 };

// ---- AWS VPC CNI ipamd model ------------------------------------------------------------------

interface CniIp {
  pod?: string;
  unassignedAt?: number;
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
  readonly perEni: number;
  readonly maxPods: number;
  readonly enis: CniEni[];
  readonly pending: Map<string, number>;
  lastDecrease: number;
}

export interface CniSettings {
  readonly warmEniTarget: number;
  readonly warmIpTarget: number;
  readonly minimumIpTarget: number;
}

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

  /** One EC2 request; a failure (throttled or not) answers undefined and is retried next cycle. */
  async #call<T>(
    action: Ec2Action,
    run: () => Promise<T>,
  ): Promise<{ readonly value: T } | undefined> {
    try {
      const value = await run();
      this.#ledger.record(action, this.#now(), false);
      return { value };
    } catch (error) {
      const throttled = (error as { name?: string }).name === 'RequestLimitExceeded';
      this.#ledger.record(action, this.#now(), throttled);
      return undefined;
    }
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

  /** One `updateIPPoolIfRequired` cycle, then pending pods are served. */
  async tick(node: CniNode): Promise<void> {
    const { warmEniTarget, warmIpTarget, minimumIpTarget } = this.#settings;
    const { total, assigned } = this.counts(node);
    const available = total - assigned;
    let short: number;
    let over: number;
    let tooLow: boolean;
    if (this.#ipTargets) {
      short = Math.max(warmIpTarget - available, 0);
      short = Math.max(short, minimumIpTarget - total);
      over = Math.max(available - warmIpTarget, 0);
      over = Math.max(Math.min(over, total - minimumIpTarget), 0);
      tooLow = short > 0;
    } else {
      short = node.perEni;
      over = 0;
      tooLow = available < node.perEni * warmEniTarget || (warmEniTarget === 0 && available === 0);
    }
    if (total >= node.maxPods) tooLow = false;
    if (tooLow) await this.#increase(node, short);
    else if (over > 0 && this.#now() - node.lastDecrease > CNI_DECREASE_INTERVAL_MS) {
      await this.#decrease(node, over);
      node.lastDecrease = this.#now();
    }
    const extra = this.#ipTargets || available >= (warmEniTarget + 1) * node.perEni;
    if (extra) await this.#tryFreeEni(node);
    for (const [pod, since] of [...node.pending]) {
      if (!this.take(node, pod)) break;
      node.pending.delete(pod);
      waitTotals.ms += this.#now() - since;
    }
  }

  async #increase(node: CniNode, short: number): Promise<void> {
    const withRoom = node.enis.find((eni) => eni.ips.size < node.perEni);
    if (withRoom) {
      const want = this.#ipTargets
        ? Math.min(node.perEni - withRoom.ips.size, short)
        : node.perEni - withRoom.ips.size;
      const ips = await this.#call('AssignPrivateIpAddresses', () =>
        this.#ec2.assignPrivateIpAddresses({ eniId: withRoom.eniId, count: want }),
      );
      for (const ip of ips?.value ?? []) withRoom.ips.set(ip, {});
      return;
    }
    if (node.enis.length >= node.maxEnis) return;
    const count = this.#ipTargets ? Math.min(short, node.perEni) : node.perEni;
    const created = await this.#call('CreateNetworkInterface', () =>
      this.#ec2.createNetworkInterface({
        subnetId: node.subnetId,
        securityGroupIds: ['sg-0123456789abcdef0'],
        secondaryIpCount: count,
        description: `aws-K8S-${node.instanceId}`,
        tags: [{ key: 'node.k8s.amazonaws.com/instance_id', value: node.instanceId }],
        clientToken: `cni-${this.#token++}`,
      }),
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
    node.enis.push({
      eniId: eni.eniId,
      primary: false,
      createdAt: this.#now(),
      attachmentId: attached.value.attachmentId,
      deviceIndex,
      ips: new Map(eni.secondaryIps.map((ip) => [ip, {}])),
    });
  }

  /** WARM_IP_TARGET mode: free unassigned IPs (cooldown not checked), one call per ENI. */
  async #decrease(node: CniNode, over: number): Promise<void> {
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
const waitTotals = { ms: 0 };

export async function runVpcCni(
  name: string,
  settings: CniSettings,
  nodes: NodeSpec[],
  events: PodEvent[],
): Promise<EniRunResult> {
  deferred = [];
  waitTotals.ms = 0;
  const clock = { now: START };
  const now = () => clock.now;
  const fake = new FakeEc2({ now, random: seededRandom(SEED + 2), recordCalls: false });
  fake.addSubnet('subnet-a', '10.0.0.0/17');
  fake.addSubnet('subnet-b', '10.0.128.0/17');
  const ledger = new CallLedger();
  const ipamd = new Ipamd(fake, ledger, now, settings);
  const live: (CniNode | undefined)[] = nodes.map(() => undefined);
  const byPhase: CniNode[][] = Array.from({ length: CNI_LOOP_S }, () => []);
  const idle: number[] = [];
  const idleByType = new IdleByType();
  let waitingPods = 0;
  const joins = new JoinSchedule(nodes);
  let next = 0;
  for (let second = 0; second < DAY_S; second++) {
    clock.now = START + second * 1000;
    for (const { index, spec, subnetId } of joins.due(second)) {
      const instanceId = fake.launchInstance({ instanceType: spec.type, subnetId });
      const limits = INSTANCE_TYPES[spec.type];
      const maxEnis = limits?.maxNetworkInterfaces ?? 1;
      const perEni = (limits?.ipv4PerInterface ?? 1) - 1;
      const primary = fake
        .allInterfaces()
        .find(
          (eni) => eni.attachment?.instanceId === instanceId && eni.attachment.deviceIndex === 0,
        );
      const node: CniNode = {
        spec,
        instanceId,
        subnetId,
        maxEnis,
        perEni,
        maxPods: maxEnis * perEni + 2,
        enis: [
          {
            eniId: primary?.eniId ?? '',
            primary: true,
            createdAt: clock.now,
            attachmentId: primary?.attachment?.attachmentId ?? '',
            deviceIndex: 0,
            ips: new Map(),
          },
        ],
        pending: new Map(),
        lastDecrease: 0,
      };
      live[index] = node;
      byPhase[spec.cniPhase]?.push(node);
    }
    for (; next < events.length && (events[next]?.at ?? DAY_S) < second + 1; next++) {
      const event = events[next];
      const node = event ? live[event.node] : undefined;
      if (!event || !node) continue;
      clock.now = START + Math.floor(event.at * 1000);
      if (event.kind === 'arrive') {
        if (!ipamd.take(node, event.pod)) {
          waitingPods++;
          node.pending.set(event.pod, clock.now);
        }
      } else if (!node.pending.delete(event.pod)) {
        ipamd.free(node, event.pod);
      }
    }
    clock.now = START + second * 1000;
    const due = deferred.filter((d) => d.at <= clock.now);
    if (due.length > 0) {
      deferred = deferred.filter((d) => d.at > clock.now);
      for (const work of due) await work.run();
    }
    for (const node of byPhase[second % CNI_LOOP_S] ?? []) await ipamd.tick(node);
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
  for (const node of live)
    for (const since of node?.pending.values() ?? []) waitTotals.ms += clock.now - since;
  return {
    name,
    settings: { ...settings, loopSeconds: CNI_LOOP_S, cooldownSeconds: CNI_COOLDOWN_MS / 1000 },
    ...tally(ledger, idle, waitingPods, waitTotals.ms),
    idleByInstanceType: idleByType.averages(),
  };
}

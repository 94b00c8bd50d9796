/**
 * The pool policy: pure functions from a pool's records to what it should hand out and what EC2
 * calls it should make. No I/O; the assign service, the pass and the benchmark all call these.
 *
 * Rules (terway ENIMultiIP, run centrally, with the VPC CNI's lessons):
 * - capacity is the instance's secondary slots: max ENIs, the primary ENI among them, × (IPv4
 *   per ENI − 1, each ENI's primary address never handed out), one address per slot, or in
 *   prefix mode on a Nitro node a /28 (16 addresses) per slot; never more than the node's maxPods
 *   (VPC CNI issue #2793), rounded up to a whole prefix;
 * - in prefix mode growth is in whole prefixes (one EC2 call gives 16 addresses), and a prefix
 *   goes back only whole, once all 16 addresses have rested; while the subnet has no free /28 the
 *   pool grows by single addresses, and tries prefixes again once the mark lapses;
 * - an IP is "ready" when free, past its cooldown and not reserved for another pod; cooling IPs
 *   never count as available when sizing a refill (VPC CNI issue #2896);
 * - refill when ready < minIdle, in one batch up to maxIdle ready (one call per ENI, the best
 *   fit); while pods arrive, both bounds rise by the surge (the assigns of the last minute): an
 *   assign that leaves ready < minIdle + surge asks for a background top-up to maxIdle + surge;
 * - hand out the most recently idle ready address, so the longest idle are the surplus;
 * - trim only addresses idle for `trimIdleAfterMs` (the pool's low-water mark over that window)
 *   and only what of them lies beyond maxIdle (+ surge), so a node's normal swing costs no call;
 * - a pool whose node group has a learned floor (its peak on one node over the last week plus
 *   minIdle, `group-use.ts`: the VPC CNI's MINIMUM_IP_TARGET, learned) grows to it in the call
 *   that falls due once it holds anything, is never trimmed below it, and at it grows only when
 *   nothing is ready; an empty pool's first growth goes only to its opening (what the group
 *   needed in this UTC hour, plus minIdle), so a node that joins in its group's quiet hours
 *   holds the day's peak only once its own pods come near the opening;
 * - growth goes to the primary ENI first, then to the ENIs berth attached; a new ENI only when
 *   every attached one is full, as the VPC CNI's ipamd does (aws/amazon-vpc-cni-k8s
 *   docs/prefix-and-ip-target.md at v1.23.0: "New ENI will only be allocated after we exhaust
 *   all the prefixes allocated to existing ENIs"; pkg/ipamd/datastore/data_store.go
 *   `GetAllocatableENIs` counts the primary ENI among them). A slot that holds an address berth
 *   did not put on the primary ENI is no slot of berth's;
 * - a trim empties berth's own ENIs before the primary ENI, and an ENI whose every address is
 *   trimmed goes whole (detach + delete, cheaper than unassign + detach + delete); the primary
 *   ENI never goes (EC2 cannot detach it; ipamd's `getDeletableENI` skips it too), only the
 *   addresses berth put on it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { EniConfig } from '../config/schema.js';
import { IPV4_PREFIX_SIZE } from '../ec2/network.js';
import { STICKY_IP_ANNOTATION } from '../vocabulary/labels.js';
import { type EniRecord, type IpRecord, prefixesOf } from './model.js';

/** How a pool grows: single secondary addresses, or /28 prefixes. */
export type PoolMode = 'ip' | 'prefix';

/** The mode of a config that names none. */
export const DEFAULT_POOL_MODE: PoolMode = 'prefix';

/** Sizing and timing of one pool, from `EniConfig` plus the fixed timings below. */
export interface PoolPolicy {
  readonly mode: PoolMode;
  readonly minIdle: number;
  readonly maxIdle: number;
  readonly cooldownMs: number;
  readonly stickyMs: number;
  readonly trimIdleAfterMs: number;
  /**
   * Fewest addresses one trim unassigns (fewer rested extras wait for more): the diurnal ebb
   * then costs one call per several addresses instead of one per pass.
   */
  readonly trimBatch: number;
  readonly minEniLifetimeMs: number;
}

/**
 * What one invocation may spend on pool work, by the function that runs it: every wait it makes
 * for the EC2 budget, or before retrying EC2, ends within `deadlineMs` of its start
 * (`BudgetedEc2Network.until`), and a pool lease it takes lasts `leaseMs`. The stack sets each
 * function's timeout to the lease less its margin, so a lease never passes to a second writer
 * while its holder still runs, and the deadline leaves the invocation time to end cleanly first.
 */
export const ENI_INVOCATIONS = {
  /** The ENI function: passes, instance events, background refills (timeout 120 s). */
  work: { deadlineMs: 90_000, leaseMs: 150_000 },
  /**
   * The node IP function: an assign's on-demand refill while its pod waits (timeout 15 s). Its
   * waits end within 8 s, before the CNI plugin gives up on the request (10 s).
   */
  request: { deadlineMs: 8_000, leaseMs: 45_000 },
} as const;

/** The kinds of invocation that work on pools. */
export type EniInvocation = keyof typeof ENI_INVOCATIONS;

/**
 * Fixed timings (grace periods and leases), apart from the loop that applies them. Each grace is
 * longer than the flow it protects, so nothing in flight is ever mistaken for a leak.
 */
export const ENI_TIMINGS = {
  /**
   * An idle address is unassigned only after resting this long (terway's idle_ip_reclaim_after).
   * Since assigns take the most recently idle address, the rested ones are the pool's low-water
   * mark over this window; several game sessions long (they last 10–30 min), so a node's normal
   * swing and its next matchmaking round cost no EC2 call, while the diurnal ebb (hours) is
   * still given back. At 30 min the benchmark day cost twice the calls.
   */
  trimIdleAfterMs: 120 * 60_000,
  /**
   * The assigns of this window are the pool's momentum (its surge): a refill, ahead of demand or
   * for a waiting pod, adds that many on top of the idle band, so a matchmaking wave costs one or
   * two EC2 calls instead of one per maxIdle pods.
   */
  surgeWindowMs: 60_000,
  /** An ENI younger than this is not deleted (VPC CNI's minENILifeTime). */
  minEniLifetimeMs: 60_000,
  /** A subnet out of addresses is not asked again for this long (VPC CNI: 120 s). */
  subnetExhaustedMs: 120_000,
  /**
   * ...except for a waiting pod, once the mark is this old: its refill reads the subnet's free
   * count again (`exhaustion-probe.ts`). kubelet retries a failed ADD within seconds; this keeps
   * a pod's wait for a subnet that has addresses again to about one interval.
   */
  exhaustedRecheckMs: 5_000,
  /**
   * A subnet that had no free /28 is not asked for prefixes for this long; pools grow by single
   * addresses meanwhile, then try prefixes again (never stuck in fallback, unlike Cilium #46644).
   * The VPC CNI backs off 120 s after InsufficientCidrBlocks; the same here.
   */
  prefixFallbackMs: 120_000,
  /**
   * Store and EC2 disagreeing about an address (or a pod gone) is acted on only after this long:
   * Describe lags mutations (eventual consistency) and an assign may be between EC2 and store.
   */
  reconcileGraceMs: 120_000,
  /** An ENI creation intent older than this is completed by the pass (the creator crashed). */
  intentGraceMs: 60_000,
  /** A berth ENI attached to the pool's instance but unknown to the store is adopted after this. */
  adoptAfterMs: 120_000,
  /** An `available` berth ENI older than this is a leak and is deleted (VPC CNI: 5 min). */
  leakedEniGraceMs: 5 * 60_000,
  /** A pool whose instance EC2 no longer shows is removed after this (Describe may lag a launch). */
  missingInstanceGraceMs: 10 * 60_000,
  /** The wait between detach and delete (detach is asynchronous; VPC CNI sleeps 2 s). */
  detachSettleMs: 2_000,
} as const;

/** Half the idle band, at least one. */
export function trimBatchFor(minIdle: number, maxIdle: number): number {
  return Math.max(1, Math.ceil((maxIdle - minIdle) / 2));
}

/** The policy for a configured pool. */
export function poolPolicy(config: EniConfig): PoolPolicy {
  return {
    mode: config.mode ?? DEFAULT_POOL_MODE,
    minIdle: config.minIdle,
    maxIdle: config.maxIdle,
    cooldownMs: config.cooldownSeconds * 1000,
    stickyMs: config.stickySeconds * 1000,
    trimIdleAfterMs: ENI_TIMINGS.trimIdleAfterMs,
    trimBatch: trimBatchFor(config.minIdle, config.maxIdle),
    minEniLifetimeMs: ENI_TIMINGS.minEniLifetimeMs,
  };
}

/** An instance type's ENI and IPv4 limits, and the node's pod limit. */
export interface PoolLimits {
  readonly maxInterfaces: number;
  readonly ipv4PerInterface: number;
  /** Nitro: ENIs take /28 prefixes. */
  readonly prefixDelegation?: boolean;
  /** The node's allocatable pods, when known. */
  readonly maxPods?: number;
}

/** Secondary slots of one ENI, each an address or a /28 (its primary address stays the ENI's). */
export function slotsPerEni(limits: PoolLimits): number {
  return Math.max(0, limits.ipv4PerInterface - 1);
}

/**
 * The ENIs the instance has or is getting, as they count against its limit: the pool's recorded
 * ones, `pending` creations, and the primary ENI whether recorded or not (a pool recorded before
 * berth used the primary ENI has no record of it until the pass adopts it).
 */
export function enisOnInstance(
  enis: readonly Pick<EniRecord, 'primary'>[],
  pending: number,
): number {
  return enis.length + pending + (enis.some((eni) => eni.primary) ? 0 : 1);
}

/** Whether a pool of this mode grows by prefixes on this node (prefix mode, Nitro). */
export function usesPrefixes(mode: PoolMode, limits: PoolLimits): boolean {
  return mode === 'prefix' && limits.prefixDelegation === true;
}

/**
 * The most pod IPs a pool can hold: every slot filled (16 addresses each when it grows by
 * prefixes), never beyond the node's maxPods, which a prefix pool rounds up to a whole prefix.
 */
export function poolCapacity(limits: PoolLimits, mode: PoolMode): number {
  const prefixes = usesPrefixes(mode, limits);
  const slots = Math.max(0, limits.maxInterfaces) * slotsPerEni(limits);
  const raw = prefixes ? slots * IPV4_PREFIX_SIZE : slots;
  if (limits.maxPods === undefined) return raw;
  const cap = prefixes
    ? Math.ceil(limits.maxPods / IPV4_PREFIX_SIZE) * IPV4_PREFIX_SIZE
    : limits.maxPods;
  return Math.min(raw, cap);
}

/** Slots the records fill on their ENI: one per single address, one per prefix. */
export function slotsUsed(ips: readonly IpRecord[]): number {
  return ips.filter((ip) => ip.prefix === undefined).length + prefixesOf(ips).size;
}

/** Whether a pod keeps its IP across restarts: a StatefulSet member, or annotated sticky. */
export function isStickyPod(pod: V1Pod): boolean {
  if (pod.metadata?.annotations?.[STICKY_IP_ANNOTATION] === 'true') return true;
  return (pod.metadata?.ownerReferences ?? []).some((owner) => owner.kind === 'StatefulSet');
}

/** Whether a free IP is reserved (sticky) for some pod at `now`. */
export function isReserved(ip: IpRecord, now: number): boolean {
  return ip.state === 'free' && ip.pod !== undefined && (ip.reservedUntil ?? 0) > now;
}

/** Whether anyone may be handed the IP now: free, rested past the cooldown, reserved for nobody. */
export function isReady(ip: IpRecord, now: number, cooldownMs: number): boolean {
  return (
    ip.state === 'free' &&
    (ip.releasedAt === 0 || now >= ip.releasedAt + cooldownMs) &&
    !isReserved(ip, now)
  );
}

/** When the address last became idle: its release, or its creation if it never served. */
function idleSince(ip: IpRecord): number {
  return Math.max(ip.releasedAt, ip.createdAt);
}

function byAddress(a: IpRecord, b: IpRecord): number {
  return a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0;
}

/** Longest idle first (what a trim gives back first). */
function byLongestIdle(a: IpRecord, b: IpRecord): number {
  return idleSince(a) - idleSince(b) || byAddress(a, b);
}

/** Most recently idle first (what an assign hands out first, once past its cooldown). */
function byLatestIdle(a: IpRecord, b: IpRecord): number {
  return idleSince(b) - idleSince(a) || byAddress(a, b);
}

/**
 * The IPs `pod` may take, best first: its own sticky reservation (cooldown does not apply to the
 * same pod), then every ready IP, the most recently idle first. Every one has rested its
 * cooldown; handing out the freshest keeps the pool's working set at the top of a stack, so the
 * addresses left idle longest are exactly the ones no pod reached for: the surplus a trim can
 * give back without buying it again at the next peak.
 */
export function claimCandidates(
  ips: readonly IpRecord[],
  pod: string,
  now: number,
  cooldownMs: number,
): IpRecord[] {
  const own = ips.filter((ip) => isReserved(ip, now) && ip.pod === pod);
  const ready = ips.filter((ip) => isReady(ip, now, cooldownMs)).sort(byLatestIdle);
  return [...own, ...ready];
}

/** The pool's surge: addresses assigned within the last `surgeWindowMs`. */
export function surgeOf(ips: readonly IpRecord[], now: number): number {
  return ips.filter(
    (ip) => ip.state === 'assigned' && now - (ip.assignedAt ?? 0) < ENI_TIMINGS.surgeWindowMs,
  ).length;
}

/**
 * Whether the pool should be topped up now, off the request path: fewer ready addresses than
 * minIdle plus the surge, and room on the instance. `stats` and `surge` are taken after the
 * assign that asks.
 */
export function refillAheadDue(stats: PoolStats, surge: number, policy: PoolPolicy): boolean {
  return stats.total < stats.capacity && stats.ready < policy.minIdle + surge;
}

/** Counts of a pool's addresses at an instant. */
export interface PoolStats {
  readonly capacity: number;
  readonly total: number;
  readonly assigned: number;
  readonly idle: number;
  readonly ready: number;
  readonly cooling: number;
  readonly reserved: number;
  readonly draining: number;
}

/** The pool's counts. */
export function poolStats(
  limits: PoolLimits,
  ips: readonly IpRecord[],
  now: number,
  cooldownMs: number,
  mode: PoolMode,
): PoolStats {
  let assigned = 0;
  let idle = 0;
  let ready = 0;
  let reserved = 0;
  let draining = 0;
  for (const ip of ips) {
    if (ip.state === 'assigned') assigned++;
    else if (ip.state === 'draining') draining++;
    else {
      idle++;
      if (isReserved(ip, now)) reserved++;
      else if (isReady(ip, now, cooldownMs)) ready++;
    }
  }
  return {
    capacity: poolCapacity(limits, mode),
    total: ips.length,
    assigned,
    idle,
    ready,
    cooling: idle - ready - reserved,
    reserved,
    draining,
  };
}

/** An ENI of the pool as the planner sees it. */
export type PlannedEni = Pick<EniRecord, 'eniId' | 'createdAt' | 'primary' | 'foreign'>;

/** Everything the planner looks at. */
export interface PlanInput {
  readonly limits: PoolLimits;
  readonly enis: readonly PlannedEni[];
  readonly ips: readonly IpRecord[];
  readonly policy: PoolPolicy;
  readonly now: number;
  /** The node is leaving: keep nothing idle. */
  readonly draining: boolean;
  /** False while the subnet is marked exhausted: no assign, no create. */
  readonly mayGrow: boolean;
  /**
   * Grow by /28 prefixes (prefix mode on a Nitro node, and the subnet not marked short of free
   * /28s); otherwise by single addresses.
   */
  readonly growByPrefix?: boolean;
  /**
   * What raises both bounds now: the pod waiting in assign and the current surge. A refill then
   * runs below minIdle + waiting, up to maxIdle + waiting, and a trim keeps maxIdle + waiting.
   */
  readonly waiting?: number;
  /** ENI creations in flight (their intents' address counts): they count as ENIs and as ready. */
  readonly pendingCreates?: readonly number[];
  /**
   * The fewest addresses to keep, learned from the node group (`PoolRecord.floor`): growth goes
   * at least this far in one call, and a trim never goes below it.
   */
  readonly floor?: number;
  /**
   * How far an empty pool's first growth goes, at most the floor (`PoolRecord.opening`); absent
   * or 0: to the floor.
   */
  readonly opening?: number;
}

/** What one slot-filling request asks for: single addresses, or /28 prefixes. */
export type GrowthUnit = 'ip' | 'prefix';

/** Growth on one ENI, or on a new one: `count` units in one EC2 call. */
export interface PlannedGrowth {
  readonly unit: GrowthUnit;
  readonly count: number;
}

/** The EC2 work that brings a pool back inside its bounds. */
export interface PoolPlan {
  /** One AssignPrivateIpAddresses per ENI, for `count` addresses or prefixes. */
  readonly assign: readonly (PlannedGrowth & { readonly eniId: string })[];
  /** New ENIs to create and attach, each with this many addresses or prefixes. */
  readonly create: readonly PlannedGrowth[];
  /**
   * One UnassignPrivateIpAddresses per ENI: single addresses by address, prefixes whole (every
   * address of a listed prefix is in `ips`).
   */
  readonly unassign: readonly { readonly eniId: string; readonly ips: readonly string[] }[];
  /** ENIs to detach and delete whole (their addresses go with them). */
  readonly deleteEnis: readonly string[];
  /**
   * The same growth in single addresses, when `assign`/`create` ask for prefixes: what to do
   * instead on `InsufficientCidrBlocks`, so no pod waits for the subnet to defragment.
   */
  readonly fallback?: Pick<PoolPlan, 'assign' | 'create'>;
  readonly stats: PoolStats;
}

/** Plans one pool. Pure; the plan never exceeds capacity and never touches a claimed address. */
export function planPool(input: PlanInput): PoolPlan {
  const { limits, policy, now } = input;
  const stats = poolStats(limits, input.ips, now, policy.cooldownMs, policy.mode);
  // Both bounds rise by what is waiting: a trim never undoes the refill the same surge asked for.
  const waiting = input.draining ? 0 : (input.waiting ?? 0);
  const minIdle = input.draining ? 0 : policy.minIdle + waiting;
  const maxIdle = input.draining ? 0 : policy.maxIdle + waiting;
  const byEni = new Map<string, IpRecord[]>(input.enis.map((eni) => [eni.eniId, []]));
  for (const ip of input.ips) byEni.get(ip.eniId)?.push(ip);

  const pending = input.pendingCreates ?? [];
  const pendingIps = pending.reduce((sum, count) => sum + count, 0);
  const coming = stats.ready + pendingIps;
  const room = stats.capacity - stats.total - pendingIps;
  // The floor holds while the pool grows by /28 prefixes, a free /28 in the subnet each: where
  // single addresses are what the subnet has left, a pool keeping its group's peak would hold
  // addresses the subnet's other nodes are waiting for.
  const floor =
    input.draining || !input.growByPrefix ? 0 : Math.min(input.floor ?? 0, stats.capacity);
  // A pool at its floor holds its group's peak with minIdle on top: it grows past it only for a
  // pod that would find nothing ready (and never where minIdle 0 asks for no growth ahead of
  // pods), so that margin is not bought a second time at every swing of the group's usual day. Below the floor, the growth that falls due goes to the
  // floor in the same call; an empty pool's, only to its opening (the group's hour), so the
  // day's peak is bought by the call a node's own rise makes due.
  const atFloor = floor > 0 && stats.total + pendingIps >= floor;
  const empty = stats.total + pendingIps === 0;
  const opening = input.opening ? Math.min(input.opening, floor) : floor;
  const target = empty ? opening : floor;
  const due =
    input.mayGrow && !input.draining && coming < (atFloor ? Math.min(1, minIdle) : minIdle);
  // One batch up to maxIdle ready (and up to the floor), within capacity.
  const batch = due ? Math.min(maxIdle - coming, room) : 0;
  const wanted = due
    ? Math.min(Math.max(maxIdle - coming, target - stats.total - pendingIps), room)
    : 0;
  const growth = planGrowth(input, byEni, wanted, input.growByPrefix ? 'prefix' : 'ip');
  // Should the subnet turn out to have no free /28, the batch without the floor in single
  // addresses.
  const fallback = input.growByPrefix ? planGrowth(input, byEni, batch, 'ip') : undefined;

  const unassign: { eniId: string; ips: string[] }[] = [];
  const deleteEnis: string[] = [];
  if (stats.idle > maxIdle) {
    const trimAfter = input.draining ? 0 : policy.trimIdleAfterMs;
    const rested = (ip: IpRecord) =>
      isReady(ip, now, policy.cooldownMs) && now - idleSince(ip) >= trimAfter;
    // Assigns take the most recently idle addresses, so the ones rested for trimAfter are the
    // pool's low-water mark over that window: even its busiest moment left them idle. What of
    // them lies beyond maxIdle goes; the rest is the pool's normal swing, kept. (Cooling IPs
    // never count: they are not rested.)
    let excess = Math.min(input.ips.filter(rested).length - maxIdle, stats.total - floor);
    if (!input.draining && excess < policy.trimBatch) excess = 0;
    // Empty the least-used of berth's own ENIs first, so whole ENIs can go; the primary ENI,
    // which never goes, last.
    const order = input.enis
      .map((eni) => {
        const ips = byEni.get(eni.eniId) ?? [];
        return { eni, ips, busy: ips.filter((ip) => !rested(ip)).length };
      })
      .sort(
        (a, b) =>
          Number(a.eni.primary === true) - Number(b.eni.primary === true) ||
          a.busy - b.busy ||
          a.ips.length - b.ips.length ||
          (a.eni.eniId < b.eni.eniId ? -1 : 1),
      );
    for (const { eni, ips, busy } of order) {
      if (excess <= 0) break;
      const old = now - eni.createdAt >= policy.minEniLifetimeMs;
      if (!eni.primary && busy === 0 && ips.length > 0 && ips.length <= excess && old) {
        deleteEnis.push(eni.eniId);
        excess -= ips.length;
        continue;
      }
      const chosen = trimmable(ips, excess, rested);
      if (chosen.length > 0) {
        unassign.push({ eniId: eni.eniId, ips: chosen.map((ip) => ip.ip) });
        excess -= chosen.length;
      }
    }
  }
  // One of berth's ENIs with no address at all serves nobody.
  for (const eni of input.enis) {
    if (
      !eni.primary &&
      (byEni.get(eni.eniId)?.length ?? 0) === 0 &&
      now - eni.createdAt >= policy.minEniLifetimeMs &&
      !deleteEnis.includes(eni.eniId) &&
      !growth.assign.some((a) => a.eniId === eni.eniId)
    ) {
      deleteEnis.push(eni.eniId);
    }
  }
  return { ...growth, ...(fallback ? { fallback } : {}), unassign, deleteEnis, stats };
}

/**
 * What one ENI can give back within `room` addresses: its rested single addresses, longest idle
 * first, then whole prefixes whose 16 addresses have all rested and still fit.
 */
function trimmable(
  ips: readonly IpRecord[],
  room: number,
  rested: (ip: IpRecord) => boolean,
): IpRecord[] {
  const out = ips
    .filter((ip) => ip.prefix === undefined && rested(ip))
    .sort(byLongestIdle)
    .slice(0, room);
  for (const prefix of prefixesOf(ips)) {
    const members = ips.filter((ip) => ip.prefix === prefix);
    if (members.every(rested) && out.length + members.length <= room) out.push(...members);
  }
  return out;
}

/**
 * Where `wanted` more addresses go, in whole units (a prefix is 16): the primary ENI first, as
 * far as it has room; the rest best fit, the fullest of berth's ENIs with room for all of it
 * (one call), else the fullest first (fewer, fuller ENIs leave whole ENIs free to go later); new
 * ENIs only once every attached one is full.
 */
function planGrowth(
  input: PlanInput,
  byEni: ReadonlyMap<string, readonly IpRecord[]>,
  wanted: number,
  unit: GrowthUnit,
): Pick<PoolPlan, 'assign' | 'create'> {
  const assign: (PlannedGrowth & { eniId: string })[] = [];
  const create: PlannedGrowth[] = [];
  const perEni = slotsPerEni(input.limits);
  let need = Math.ceil(Math.max(0, wanted) / (unit === 'prefix' ? IPV4_PREFIX_SIZE : 1));
  const withRoom = input.enis
    .map((eni) => ({
      eniId: eni.eniId,
      primary: eni.primary === true,
      room: perEni - slotsUsed(byEni.get(eni.eniId) ?? []) - (eni.foreign?.length ?? 0),
    }))
    .filter((eni) => eni.room > 0)
    .sort((a, b) => a.room - b.room || (a.eniId < b.eniId ? -1 : 1));
  const primary = withRoom.filter((eni) => eni.primary);
  const attached = withRoom.filter((eni) => !eni.primary);
  const rest = need - primary.reduce((sum, eni) => sum + eni.room, 0);
  const fit = attached.find((eni) => eni.room >= rest);
  for (const eni of [...primary, ...(fit ? [fit] : attached)]) {
    if (need <= 0) break;
    const count = Math.min(eni.room, need);
    assign.push({ eniId: eni.eniId, unit, count });
    need -= count;
  }
  let enis = enisOnInstance(input.enis, input.pendingCreates?.length ?? 0);
  while (need > 0 && enis < input.limits.maxInterfaces && perEni > 0) {
    const count = Math.min(perEni, need);
    create.push({ unit, count });
    need -= count;
    enis++;
  }
  return { assign, create };
}

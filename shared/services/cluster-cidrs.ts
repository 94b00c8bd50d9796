/**
 * berth's Service ranges against the cluster's own `ServiceCIDR`s. Since Kubernetes 1.33 the
 * apiserver allocates cluster IPs from `networking.k8s.io/v1` ServiceCIDR objects and records each
 * one as an `IPAddress` (KEP-1880; https://kubernetes.io/docs/tasks/network/extend-service-ip-ranges/).
 * It still checks every cluster IP berth writes into a Service and refuses one outside every ready
 * ServiceCIDR (`pkg/registry/core/service/ipallocator/cidrallocator.go`, `getAllocator`), so
 * berth's `serviceCIDRs` must agree with the cluster's. Pure: the cluster is read elsewhere
 * (`../k8s/service-cidrs.ts`).
 *
 * - A configured range no ServiceCIDR covers is refused: nothing new is handed out of it.
 * - A range whose only covering ServiceCIDRs are being deleted is refused the same way (the
 *   apiserver's allocator for it is no longer ready), and what still holds addresses in it is
 *   reported: the ServiceCIDR stays until those Services are gone (its finalizer).
 * - With `services.followClusterCIDRs`, a ServiceCIDR added at runtime, of a configured family
 *   and clear of berth's ranges, becomes one more range to allocate from.
 * - A cluster without the resource (before 1.33) keeps the configured ranges as they are.
 */

import type { ClusterIpAddress, ClusterServiceCidr } from '../k8s/service-cidrs.js';
import {
  type CidrBlock,
  cidrContains,
  formatCidr,
  type IpAddress,
  type IpFamily,
  parseIp,
} from '../net/ip.js';
import { clusterIpRange, type ValueRange } from '../net/value-range.js';

/** Why no new cluster IP comes from a range berth keeps. */
export type RangeRefusalReason = 'missing' | 'terminating' | 'notReady';

/** A range berth keeps but hands nothing new out of, and the message a denial gives. */
export interface RangeRefusal {
  readonly range: string;
  readonly reason: RangeRefusalReason;
  /** What is wrong, naming the range and the cluster's CIDRs (a denial puts its field first). */
  readonly detail: string;
  /** `<config key>: <detail>`, as the log and a refused start say it. */
  readonly message: string;
}

/** A ServiceCIDR being deleted, and what still holds addresses in it. */
export interface TerminatingCidr {
  readonly serviceCidr: string;
  readonly cidr: string;
  /** `namespace/name (ip)` of each holder, sorted. */
  readonly holders: readonly string[];
}

/** What berth allocates from, given the config and the cluster's ServiceCIDRs. */
export interface ServiceCidrState {
  /** `cluster`: read from its ServiceCIDRs; `flags`: it has none (before 1.33), config only. */
  readonly source: 'cluster' | 'flags';
  /** Every range berth keeps values in: the configured ones, then the followed ones. */
  readonly ranges: readonly ValueRange[];
  /** The ranges new cluster IPs may come from, configured first. */
  readonly allocatable: readonly ValueRange[];
  /** By range name: why nothing new comes from it. */
  readonly refused: ReadonlyMap<string, RangeRefusal>;
  /** Cluster CIDRs berth allocates from beyond the configured ones. */
  readonly followed: readonly string[];
  /** The cluster's ServiceCIDRs as messages name them: `10.100.0.0/16 (kubernetes)`. */
  readonly clusterCidrs: readonly string[];
  /** ServiceCIDRs being deleted (holders are filled in by `withHolders`). */
  readonly terminating: readonly TerminatingCidr[];
  /** Cluster CIDRs berth does not follow, and why (for the log and the report). */
  readonly notes: readonly string[];
}

/** What `reconcileServiceCidrs` decides from. */
export interface ServiceCidrInputs {
  /** `serviceCIDRs`, in configured order. */
  readonly configured: readonly CidrBlock[];
  /** `services.followClusterCIDRs`. */
  readonly follow: boolean;
  /** The cluster's ServiceCIDRs; undefined when it has no such resource. */
  readonly cluster: readonly ClusterServiceCidr[] | undefined;
}

/**
 * The widest CIDR followed, in host bits: an IPv4 /12 (the apiserver's `maxCIDRBits`), an IPv6
 * /64 (the shortest prefix its IPAddress allocator takes).
 */
const MAX_FOLLOWED_HOST_BITS: Readonly<Record<IpFamily, number>> = { IPv4: 20, IPv6: 64 };

/** Whether every address of `inner` lies in `outer`. */
export function blockWithin(inner: CidrBlock, outer: CidrBlock): boolean {
  return (
    inner.family === outer.family &&
    inner.prefixLength >= outer.prefixLength &&
    cidrContains(outer, { family: inner.family, value: inner.network })
  );
}

/** Whether two blocks share an address (CIDR blocks either nest or are disjoint). */
export function blocksOverlap(a: CidrBlock, b: CidrBlock): boolean {
  return blockWithin(a, b) || blockWithin(b, a);
}

const usable = (cidr: ClusterServiceCidr) => cidr.ready && !cidr.terminating;

/** The cluster's CIDRs as messages name them. */
function describeCluster(cluster: readonly ClusterServiceCidr[]): string[] {
  return cluster.flatMap((object) =>
    object.cidrs.map(
      (block) =>
        `${formatCidr(block)} (${object.name}${object.terminating ? ', being deleted' : object.ready ? '' : ', not ready'})`,
    ),
  );
}

/** What a refusal says: the range, the ServiceCIDRs concerned and all of the cluster's. */
function refusalOf(
  range: string,
  reason: RangeRefusalReason,
  serviceCidrs: string,
  has: string,
  key = 'serviceCIDRs',
): RangeRefusal {
  const detail =
    reason === 'missing'
      ? `${range} is not a Service CIDR of this cluster (its ServiceCIDRs: ${has}): the apiserver refuses cluster IPs outside them; set serviceCIDRs to the cluster's, or create a ServiceCIDR for ${range}`
      : reason === 'terminating'
        ? `${range} is being deleted from this cluster (ServiceCIDR ${serviceCidrs}): no new cluster IP comes from it (its ServiceCIDRs: ${has})`
        : `${range} is not ready in this cluster (ServiceCIDR ${serviceCidrs}): no new cluster IP comes from it until it is (its ServiceCIDRs: ${has})`;
  return { range, reason, detail, message: `${key}: ${detail}` };
}

/** Decides which ranges berth keeps and which it allocates from. */
export function reconcileServiceCidrs(inputs: ServiceCidrInputs): ServiceCidrState {
  const configured = inputs.configured.map(clusterIpRange);
  if (inputs.cluster === undefined) {
    return {
      source: 'flags',
      ranges: configured,
      allocatable: configured,
      refused: new Map(),
      followed: [],
      clusterCidrs: [],
      terminating: [],
      notes: [],
    };
  }
  const cluster = inputs.cluster;
  const clusterCidrs = describeCluster(cluster);
  const has = clusterCidrs.length > 0 ? clusterCidrs.join(', ') : 'none';
  const refused = new Map<string, RangeRefusal>();
  const allocatable: ValueRange[] = [];
  for (const [index, block] of inputs.configured.entries()) {
    const range = configured[index] as ValueRange;
    const covering = cluster.filter((object) => object.cidrs.some((c) => blockWithin(block, c)));
    if (covering.some(usable)) {
      allocatable.push(range);
      continue;
    }
    const name = formatCidr(block);
    const names = covering.map((o) => o.name).join(', ');
    const reason: RangeRefusalReason =
      covering.length === 0
        ? 'missing'
        : covering.every((object) => object.terminating)
          ? 'terminating'
          : 'notReady';
    const refusal = refusalOf(name, reason, names, has);
    refused.set(name, refusal);
  }

  const families = new Set(inputs.configured.map((block) => block.family));
  const kept: CidrBlock[] = [...inputs.configured];
  const followedRanges: ValueRange[] = [];
  const unusableRanges: ValueRange[] = [];
  const notes: string[] = [];
  for (const object of cluster) {
    for (const block of object.cidrs) {
      if (kept.some((k) => blocksOverlap(k, block))) continue;
      const name = formatCidr(block);
      if (!inputs.follow) {
        notes.push(
          `${name} (ServiceCIDR ${object.name}) is not followed: services.followClusterCIDRs is false`,
        );
        continue;
      }
      if (!families.has(block.family)) {
        notes.push(
          `${name} (ServiceCIDR ${object.name}) is not followed: ${block.family} is not configured`,
        );
        continue;
      }
      if (block.hostBits > MAX_FOLLOWED_HOST_BITS[block.family]) {
        notes.push(
          `${name} (ServiceCIDR ${object.name}) is not followed: wider than berth allocates from (more than ${MAX_FOLLOWED_HOST_BITS[block.family]} host bits)`,
        );
        continue;
      }
      kept.push(block);
      if (usable(object)) {
        followedRanges.push(clusterIpRange(block));
        continue;
      }
      // One berth followed may be going away: berth keeps what it holds there (no Service is
      // reported out of range, nothing is freed early) and gives nothing new from it.
      unusableRanges.push(clusterIpRange(block));
      refused.set(
        name,
        refusalOf(
          name,
          object.terminating ? 'terminating' : 'notReady',
          object.name,
          has,
          'services.followClusterCIDRs',
        ),
      );
    }
  }

  const terminating = cluster
    .filter((object) => object.terminating)
    .flatMap((object) =>
      object.cidrs.map((block) => ({
        serviceCidr: object.name,
        cidr: formatCidr(block),
        holders: [],
      })),
    );
  return {
    source: 'cluster',
    ranges: [...configured, ...followedRanges, ...unusableRanges],
    allocatable: [...allocatable, ...followedRanges],
    refused,
    followed: followedRanges.map((range) => range.name),
    clusterCidrs,
    terminating,
    notes,
  };
}

/**
 * The terminating ServiceCIDRs with what still holds addresses in each: an address is held there
 * unless another usable ServiceCIDR also covers it (the apiserver lets such a one go).
 */
export function withHolders(
  state: ServiceCidrState,
  cluster: readonly ClusterServiceCidr[],
  addresses: readonly ClusterIpAddress[],
): ServiceCidrState {
  if (state.terminating.length === 0) return state;
  const parsed = addresses.flatMap((address) => {
    const ip = parseIp(address.ip);
    return ip ? [{ ip, address }] : [];
  });
  const coveredElsewhere = (ip: IpAddress) =>
    cluster.some((object) => usable(object) && object.cidrs.some((c) => cidrContains(c, ip)));
  const blocks = new Map(cluster.flatMap((o) => o.cidrs.map((c) => [formatCidr(c), c] as const)));
  return {
    ...state,
    terminating: state.terminating.map((entry) => {
      const block = blocks.get(entry.cidr);
      const holders = block
        ? parsed
            .filter(({ ip }) => cidrContains(block, ip) && !coveredElsewhere(ip))
            .map(({ address }) => `${address.service ?? 'not a Service'} (${address.ip})`)
            .sort()
        : [];
      return { ...entry, holders };
    }),
  };
}

/** Why a new cluster IP may not be given for `value` (or, dynamic, from `range`); undefined: it may. */
export function refusalFor(
  state: ServiceCidrState,
  range: ValueRange,
  value: string | undefined,
): RangeRefusal | undefined {
  if (value === undefined) return state.refused.get(range.name);
  const holding = state.ranges.find((r) => r.offsetOf(value) !== undefined);
  return holding ? state.refused.get(holding.name) : undefined;
}

/** One IP the apiserver and berth disagree about. */
export interface IpAddressDrift {
  readonly ip: string;
  /** `apiserver`: an IPAddress berth does not hold; `berth`: held with no IPAddress. */
  readonly heldBy: 'apiserver' | 'berth';
  /** The Service (apiserver side) or the allocation holder (berth side). */
  readonly holder: string;
}

/** An IP in canonical form when one of `ranges` holds it; undefined otherwise. */
function canonicalIp(ranges: readonly ValueRange[], ip: string): string | undefined {
  for (const range of ranges) {
    const offset = range.offsetOf(ip);
    if (offset !== undefined) return range.valueAt(offset);
  }
  return undefined;
}

/**
 * IPs of berth's ranges held on one side only: `berth` maps each cluster IP berth holds
 * (canonical form) to its holder. IPAddresses created at or after `since` (berth's side was read
 * before the IPAddresses were listed, so it cannot show them yet) are skipped.
 */
export function ipAddressDrift(
  ranges: readonly ValueRange[],
  apiserver: readonly ClusterIpAddress[],
  berth: ReadonlyMap<string, string>,
  since: number,
): IpAddressDrift[] {
  const listed = new Map<string, ClusterIpAddress>();
  for (const address of apiserver) {
    const ip = canonicalIp(ranges, address.ip);
    if (ip !== undefined) listed.set(ip, address);
  }
  const drift: IpAddressDrift[] = [];
  for (const [ip, address] of listed) {
    if (berth.has(ip)) continue;
    if (address.createdAt !== undefined && address.createdAt >= since) continue;
    drift.push({ ip, heldBy: 'apiserver', holder: address.service ?? 'not a Service' });
  }
  for (const [ip, holder] of berth) {
    if (!listed.has(ip)) drift.push({ ip, heldBy: 'berth', holder });
  }
  return drift.sort((a, b) => (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0));
}

/** The ServiceCIDR part of `berth status` and of repair's summary. */
export interface ServiceCidrReport {
  readonly source: 'cluster' | 'flags';
  /** Ranges new cluster IPs come from. */
  readonly allocatingFrom: readonly string[];
  /** Ranges berth keeps but gives nothing new from, and why. */
  readonly refused: readonly RangeRefusal[];
  readonly followed: readonly string[];
  readonly clusterCidrs: readonly string[];
  readonly terminating: readonly TerminatingCidr[];
}

/** The state as `berth status` and repair report it. */
export function serviceCidrReport(state: ServiceCidrState): ServiceCidrReport {
  return {
    source: state.source,
    allocatingFrom: state.allocatable.map((range) => range.name),
    refused: [...state.refused.values()],
    followed: state.followed,
    clusterCidrs: state.clusterCidrs,
    terminating: state.terminating,
  };
}

/**
 * The records of berth's ENI pools. A pool belongs to one node (one EC2 instance); under it live
 * the ENIs berth assigns to (the instance's primary ENI and the ENIs berth attached), the
 * addresses berth put on them, the pods holding them and the ENI creations in flight. Times are
 * epoch milliseconds; every record carries a version for conditional writes.
 */
import { IPV4_PREFIX_SIZE, prefixAddresses } from '../ec2/network.js';
import { formatIp, parseCidr } from '../net/ip.js';

/** One node's pool: where its ENIs go and how many the instance type allows. */
export interface PoolRecord {
  readonly node: string;
  readonly instanceId: string;
  readonly instanceType: string;
  readonly availabilityZone: string;
  /** The subnet of the instance's primary ENI; berth's ENIs are created there. */
  readonly subnetId: string;
  readonly subnetCidr: string;
  readonly securityGroupIds: readonly string[];
  readonly maxInterfaces: number;
  /** IPv4 addresses per ENI, the ENI's own primary address included. */
  readonly ipv4PerInterface: number;
  /** The instance type takes /28 prefixes (Nitro). Absent on pools recorded before prefixes. */
  readonly prefixDelegation?: boolean;
  /** The node's allocatable pods (kubelet's maxPods): the pool never grows past it. */
  readonly maxPods?: number;
  readonly createdAt: number;
  /** The node left the cluster: no refill, every idle IP is trimmed, then the ENIs go. */
  readonly draining: boolean;
  /**
   * `node`: the node's berth-cni hands the pool's free addresses out itself (its agent asked for
   * the set), so berth assigns none per pod there and takes one back only once the node returns
   * it (`handout/`). Absent: one berth call per pod, the earlier way.
   */
  readonly handout?: 'node';
  /** The node's last report of its use, while it hands addresses out itself. */
  readonly nodeUse?: NodeUse;
  /**
   * The fewest addresses the pool keeps, from what its node group has needed (`group-use.ts`),
   * written by the pass; absent or 0 before anything was learned.
   */
  readonly floor?: number;
  /**
   * How far the pool's first growth goes (at most `floor`): what its node group needed in the
   * current UTC hour of the day (`group-use.ts`), written by the pass; absent or 0: to the floor.
   */
  readonly opening?: number;
  readonly version: number;
}

/** What a node handing addresses out itself last reported (epoch ms, the node's clock). */
export interface NodeUse {
  readonly reportedAt: number;
  /** Addresses a container holds, and since when. */
  readonly leased: readonly { readonly ip: string; readonly since: number }[];
  /** Addresses no container holds, and when their last holder let them go. */
  readonly rested: readonly { readonly ip: string; readonly at: number }[];
}

/**
 * An ENI of the pool's instance that berth assigns to: one berth created and attached, or the
 * instance's primary ENI (`primary`). Pools recorded before berth used the primary ENI have no
 * record of it until the pass adopts it.
 */
export interface EniRecord {
  readonly kind: 'eni';
  readonly eniId: string;
  readonly subnetId: string;
  readonly deviceIndex: number;
  readonly attachmentId: string;
  /** `detaching`: on its way out; the pass finishes the delete. Never so for the primary ENI. */
  readonly state: 'attached' | 'detaching';
  /**
   * The instance's primary ENI (device index 0), which came with the instance: berth assigns to
   * it first and never detaches or deletes it. Of its addresses only those berth recorded are
   * berth's.
   */
  readonly primary?: true;
  /**
   * On the primary ENI: what EC2 shows there that berth did not put there (an address or /28 the
   * VPC CNI left behind, one an operator assigned), each a single address or a prefix taking one
   * of the ENI's slots. berth never hands one out, adopts it or gives it back: it has an owner.
   */
  readonly foreign?: readonly string[];
  /** The interface's own address: never a pod's, whatever an assign answer lists. */
  readonly primaryIp?: string;
  /** The interface's MAC address, by which the CNI plugin finds its link on the node. */
  readonly macAddress?: string;
  readonly createdAt: number;
  /**
   * Set before every AssignPrivateIpAddresses on this ENI (an intent: EC2's assign has no
   * ClientToken) and cleared (0) by the write that records its answer. While set, the pass spares
   * addresses EC2 shows but the store lacks for a grace period, and the next assign reads the ENI
   * back and adopts them instead of assigning more.
   */
  readonly mutatingAt: number;
  readonly version: number;
}

/** One address berth put on one of the pool's ENIs. */
export interface IpRecord {
  readonly kind: 'ip';
  readonly ip: string;
  readonly eniId: string;
  /**
   * The delegated /28 the address belongs to; absent for a single secondary address. A prefix is
   * given back to EC2 whole, so its 16 records drain together.
   */
  readonly prefix?: string;
  /** `draining`: being unassigned from EC2; nobody may claim it. */
  readonly state: 'free' | 'assigned' | 'draining';
  /** The holder (`namespace/name`) when assigned; when free, the pod it is reserved for, if any. */
  readonly pod?: string;
  /** The holder's container (the CNI's CNI_CONTAINERID), when its ADD named one. */
  readonly containerId?: string;
  /** The holder gets this IP back within stickySeconds after release (StatefulSet, or annotated). */
  readonly sticky: boolean;
  readonly assignedAt?: number;
  /** Last release; 0 for an address that never had a pod. Cooldown counts from here. */
  readonly releasedAt: number;
  /**
   * Who made the last release (a random id per release call): kept by later claims, so a
   * release whose write landed but whose resent copy failed its condition knows it landed.
   */
  readonly releaseId?: string;
  /** End of a sticky reservation for `pod`. */
  readonly reservedUntil?: number;
  /** When the address was marked `draining` (the pass finishes an unassign older than a grace). */
  readonly drainingSince?: number;
  /**
   * On a pool its node hands out: when the pass asked for the free address back. The node then
   * hands it out no more, and returns it once no container holds it.
   */
  readonly wantedSince?: number;
  /** When the node returned the wanted address empty: only now may EC2 take it back. */
  readonly returnedAt?: number;
  readonly createdAt: number;
  readonly version: number;
}

/** An ENI creation in flight: written before CreateNetworkInterface, so a retry reuses its token. */
export interface CreateIntent {
  readonly kind: 'intent';
  readonly clientToken: string;
  readonly subnetId: string;
  readonly securityGroupIds: readonly string[];
  readonly secondaryIpCount: number;
  /** /28 prefixes asked for instead of addresses (prefix mode). */
  readonly ipv4PrefixCount?: number;
  readonly createdAt: number;
  readonly version: number;
}

/** The pod addresses an ENI creation asks for: its single addresses plus 16 per prefix. */
export function intentAddresses(intent: CreateIntent): number {
  return intent.secondaryIpCount + (intent.ipv4PrefixCount ?? 0) * IPV4_PREFIX_SIZE;
}

/** Every address the primary ENI carries for another owner: its foreign addresses and prefixes'. */
export function foreignAddresses(eni: Pick<EniRecord, 'foreign'>): Set<string> {
  return new Set(
    (eni.foreign ?? []).flatMap((unit) => (unit.includes('/') ? prefixAddresses(unit) : [unit])),
  );
}

/** The distinct /28 prefixes the records belong to (single addresses belong to none). */
export function prefixesOf(records: readonly Pick<IpRecord, 'prefix'>[]): Set<string> {
  return new Set(records.flatMap((record) => (record.prefix === undefined ? [] : [record.prefix])));
}

/** Anything stored under a node's pool. */
export type NodeItem = EniRecord | IpRecord | CreateIntent;

/** How a node item is addressed. */
export interface NodeItemKey {
  readonly kind: NodeItem['kind'];
  readonly id: string;
}

/** The key of an item: ENI id, IP or client token. */
export function itemKey(item: NodeItem): NodeItemKey {
  switch (item.kind) {
    case 'eni':
      return { kind: 'eni', id: item.eniId };
    case 'ip':
      return { kind: 'ip', id: item.ip };
    case 'intent':
      return { kind: 'intent', id: item.clientToken };
  }
}

/** Everything under one node's pool. */
export interface NodeState {
  readonly enis: readonly EniRecord[];
  readonly ips: readonly IpRecord[];
  readonly intents: readonly CreateIntent[];
}

/** The pod key berth stores: `namespace/name`. */
export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** What assign answers. */
export interface IpAssignment {
  readonly ip: string;
  readonly eniId: string;
  readonly subnetCidr: string;
  readonly gateway: string;
  /**
   * The ENI's device index and MAC address: the CNI plugin finds the ENI's link by its MAC and
   * routes the pod's traffic out through it. Absent for a record made before berth kept MACs,
   * until the ENI pass fills it in.
   */
  readonly deviceIndex?: number;
  readonly macAddress?: string;
}

/** The VPC router's address: the subnet's network address + 1 (AWS reserves it in every subnet). */
export function subnetGateway(cidr: string): string {
  const block = parseCidr(cidr);
  if (block === undefined) throw new RangeError(`not a CIDR block: ${cidr}`);
  return formatIp({ family: block.family, value: block.network + 1n });
}

/** The most addresses in use on one node of a type during one UTC day (`group-use.ts`). */
export interface DayPeak {
  /** Days since the epoch (UTC). */
  readonly day: number;
  readonly inUse: number;
  /**
   * The most in use on one node of the type in each UTC hour of that day (index = hour; an hour
   * the pass never saw is 0). Absent on peaks recorded before the hours were kept.
   */
  readonly byHour?: readonly number[];
}

/** A cluster's learned use, per instance type. */
export interface GroupUse {
  readonly byType: Readonly<Record<string, readonly DayPeak[]>>;
  /** 0 before the first write. */
  readonly version: number;
}

/** No use learned yet. */
export const NO_GROUP_USE: GroupUse = { byType: {}, version: 0 };

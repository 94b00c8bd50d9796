/**
 * A pool whose node hands its addresses out itself, as berth's policy and the node see it. Pure.
 *
 * berth's records of such a pool say which addresses the instance has and which the node may
 * use; the node's report says which of those its containers hold. The policy sizes the pool from
 * the two together: a free record a container holds counts as assigned, one the node released
 * rests from the node's release, and a wanted one (on its way back) as draining, so the policy
 * neither trims a held address nor refills for one it asked back.
 */
import { type IpRecord, type NodeState, type PoolRecord, subnetGateway } from '../model.js';
import type { PoolPolicy } from '../policy.js';
import type { AddressState, NodeSet, SetAddress } from './wire.js';

/** The holder berth's view names for an address a container on the node holds. */
export const NODE_HOLDER = 'node/berth-cni';

/** The records as the policy must see them: unchanged for a pool berth hands out per pod. */
export function nodeView(pool: PoolRecord, ips: readonly IpRecord[]): readonly IpRecord[] {
  if (pool.handout !== 'node') return ips;
  const leased = new Map(pool.nodeUse?.leased.map((l) => [l.ip, l.since]));
  const rested = new Map(pool.nodeUse?.rested.map((r) => [r.ip, r.at]));
  return ips.map((ip): IpRecord => {
    if (ip.state !== 'free') return ip;
    if (ip.wantedSince !== undefined || ip.returnedAt !== undefined) {
      return { ...ip, state: 'draining', drainingSince: ip.wantedSince ?? ip.returnedAt };
    }
    const since = leased.get(ip.ip);
    if (since !== undefined)
      return { ...ip, state: 'assigned', pod: NODE_HOLDER, assignedAt: since };
    const at = rested.get(ip.ip);
    return at !== undefined && at > ip.releasedAt ? { ...ip, releasedAt: at } : ip;
  });
}

/** The node's set, read at `now`. */
export function setOf(
  pool: PoolRecord,
  state: NodeState,
  policy: Pick<PoolPolicy, 'cooldownMs' | 'stickyMs'>,
  now: number,
): NodeSet {
  const enis = new Map(state.enis.map((eni) => [eni.eniId, eni]));
  const addresses = state.ips.map((ip): SetAddress => {
    const eni = enis.get(ip.eniId);
    return {
      ip: ip.ip,
      eniId: ip.eniId,
      ...(eni === undefined ? {} : { deviceIndex: eni.deviceIndex }),
      ...(eni?.macAddress === undefined ? {} : { macAddress: eni.macAddress }),
      ...(ip.prefix === undefined ? {} : { prefix: ip.prefix }),
      createdAt: ip.createdAt,
      state: stateOf(ip),
    };
  });
  return {
    node: pool.node,
    asOf: now,
    subnetCidr: pool.subnetCidr,
    gateway: subnetGateway(pool.subnetCidr),
    cooldownSeconds: policy.cooldownMs / 1000,
    stickySeconds: policy.stickyMs / 1000,
    addresses,
  };
}

/**
 * What the node may do with a record: hand it out while free; return it once wanted; nothing
 * with one a pod holds the earlier way, or one EC2 is taking back (draining, or returned).
 */
function stateOf(ip: IpRecord): AddressState {
  if (ip.state !== 'free' || ip.returnedAt !== undefined) return 'held';
  return ip.wantedSince === undefined ? 'free' : 'wanted';
}

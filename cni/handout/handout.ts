/**
 * ADD and DEL on a node that hands its addresses out itself: a container takes a free address of
 * the node's set by creating its lease (exclusive), and its DEL removes that lease only while
 * the container still holds it. No berth endpoint is called while an address is free.
 *
 * A return (the agent's, `agent.ts`) and an ADD may meet on one address: the ADD creates its
 * lease and then reads the returns, the agent records the return and then reads the leases, so
 * at least one of them sees the other, and the ADD gives the address up (never both keep it).
 */
import type { NodeSet, SetAddress } from '../../shared/eni/handout/wire.js';
import type { Assignment } from '../result.js';
import { candidates } from './choice.js';
import type { HandoutStore, Lease } from './store.js';

/** Who takes an address: one interface of one container of one pod. */
export interface Taker {
  /** `namespace/name`. */
  readonly pod: string;
  readonly containerId: string;
  readonly ifName: string;
}

/** The assignment a set address makes, in the shape berth's per-pod answer has. */
export function assignmentOf(set: NodeSet, address: SetAddress): Assignment {
  return {
    ip: address.ip,
    eniId: address.eniId,
    subnetCidr: set.subnetCidr,
    gateway: set.gateway,
    ...(address.deviceIndex === undefined ? {} : { deviceIndex: address.deviceIndex }),
    ...(address.macAddress === undefined ? {} : { macAddress: address.macAddress }),
  };
}

/**
 * The address `taker` holds (a repeated ADD), or a new one from `set`; undefined when none is
 * free. `boot` marks the lease with the boot it was made in.
 */
export async function takeAddress(
  store: HandoutStore,
  set: NodeSet,
  taker: Taker,
  boot: string,
  now: number,
): Promise<SetAddress | undefined> {
  // One read of the node's files serves both questions: most of an ADD's own work is reading them.
  const { leases, use } = await store.snapshot();
  const held = leases.find((l) => l.containerId === taker.containerId && l.ifName === taker.ifName);
  const heldAddress = held && set.addresses.find((a) => a.ip === held.ip);
  if (heldAddress) return heldAddress;
  for (const address of candidates(set, use, taker.pod, now)) {
    const lease: Lease = { ip: address.ip, ...taker, since: now, boot };
    if (!(await store.tryLease(lease))) continue;
    const returns = await store.returns();
    if (returns.some((r) => r.ip === address.ip && r.createdAt === address.createdAt)) {
      await store.dropLease(address.ip, taker.containerId, taker.ifName);
      continue;
    }
    return address;
  }
  return undefined;
}

/**
 * Frees what `taker` holds: the address named (the cached result's), or the one its lease
 * names. Answers the address freed; undefined when the container holds none here (already
 * freed, another container's now, or never leased on the node).
 */
export async function freeAddress(
  store: HandoutStore,
  taker: Taker,
  named: string | undefined,
  now: number,
): Promise<string | undefined> {
  const lease = await store.leaseOf(taker.containerId, taker.ifName);
  const ip = named ?? lease?.ip;
  if (ip === undefined || lease?.ip !== ip) return undefined;
  // The rest first: a crash between the two leaves the lease, and the retried DEL rests it again,
  // so a freed address always rests its cooldown before another pod gets it.
  await store.rest(ip, { pod: taker.pod, at: now });
  if (!(await store.dropLease(ip, taker.containerId, taker.ifName))) return undefined;
  return ip;
}

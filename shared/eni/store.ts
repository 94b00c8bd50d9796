/**
 * What the ENI pools need from persistence, and nothing more. The DynamoDB adapter lives in
 * `shared/store/dynamo-eni-store.ts`; `InMemoryEniStore` serves tests and the benchmark with the
 * same conditional semantics.
 */
import type { GroupUse, IpRecord, NodeItem, NodeItemKey, NodeState, PoolRecord } from './model.js';

/**
 * One write of a commit. `expectedVersion` 0 means "must not exist"; a positive value means the
 * stored item must have that version. A delete without `expectedVersion` is unconditional, and
 * deleting an absent item succeeds.
 */
export type NodeWrite =
  | { readonly put: NodeItem; readonly expectedVersion: number }
  | { readonly delete: NodeItemKey; readonly expectedVersion?: number };

/** Persistence of pools, scoped to one cluster. */
export interface EniStore {
  listPools(): AsyncIterable<PoolRecord>;
  /** The node's pool: strongly consistent unless `read` is `eventual` (half the cost). */
  getPool(node: string, read?: NodeRead): Promise<PoolRecord | undefined>;
  /** Writes the pool when the stored version is `expectedVersion` (0: none yet); else `EniConflictError`. */
  putPool(pool: PoolRecord, expectedVersion: number): Promise<void>;
  /** Deletes the pool record and every item under the node. */
  deletePool(node: string): Promise<void>;
  /**
   * Takes the node's lease for EC2 changes until `until` when it is free, expired or already
   * `holder`'s. Claims of idle IPs need no lease: they are conditional writes.
   */
  tryLease(node: string, holder: string, now: number, until: number): Promise<boolean>;
  /** Gives the lease back if `holder` still has it. */
  endLease(node: string, holder: string): Promise<void>;
  /**
   * Every item under the node: strongly consistent unless `read` is `eventual`, which costs half
   * and may miss the last second's writes (for a look that any write re-checks).
   */
  loadNode(node: string, read?: NodeRead): Promise<NodeState>;
  getIp(node: string, ip: string): Promise<IpRecord | undefined>;
  /**
   * Applies the writes all or nothing (commits of more than 100 writes are applied in chunks of
   * 100, each all or nothing). A failed condition throws `EniConflictError` naming the write.
   */
  commit(node: string, writes: readonly NodeWrite[]): Promise<void>;
  /** Until when the subnet counts as short of `what` (0: not marked). */
  subnetShortUntil(subnetId: string, what: SubnetShortage): Promise<number>;
  /** Marks the subnet short of `what` until `until`; a later mark already there is kept. */
  markSubnetShort(subnetId: string, what: SubnetShortage, until: number): Promise<void>;
  /** What the cluster's node groups have needed (`NO_GROUP_USE` before the first write). */
  groupUse(): Promise<GroupUse>;
  /**
   * Writes `use` with version `expectedVersion + 1` when the stored version is `expectedVersion`
   * (0: none yet); false when another pass wrote first (its figures stand until the next pass).
   */
  putGroupUse(use: GroupUse, expectedVersion: number): Promise<boolean>;
}

/** How fresh a read of a node must be. */
export type NodeRead = 'strong' | 'eventual';

/**
 * What a subnet ran out of: any address (`InsufficientFreeAddressesInSubnet`), or whole /28
 * blocks for prefixes (`InsufficientCidrBlocks`, while single addresses may remain).
 */
export type SubnetShortage = 'addresses' | 'prefixes';

/** The largest number of writes one commit applies atomically (DynamoDB's TransactWriteItems). */
export const MAX_ATOMIC_WRITES = 100;

/**
 * Every method of `store`, bound to it: a wrapper spreads this and replaces the methods it changes
 * (a class's methods are not own properties, and they reach its private fields through `this`).
 */
export function forwarding(store: EniStore): EniStore {
  return {
    listPools: () => store.listPools(),
    getPool: (node, read) => store.getPool(node, read),
    putPool: (pool, expectedVersion) => store.putPool(pool, expectedVersion),
    deletePool: (node) => store.deletePool(node),
    tryLease: (node, holder, now, until) => store.tryLease(node, holder, now, until),
    endLease: (node, holder) => store.endLease(node, holder),
    loadNode: (node, read) => store.loadNode(node, read),
    getIp: (node, ip) => store.getIp(node, ip),
    commit: (node, writes) => store.commit(node, writes),
    subnetShortUntil: (subnetId, what) => store.subnetShortUntil(subnetId, what),
    markSubnetShort: (subnetId, what, until) => store.markSubnetShort(subnetId, what, until),
    groupUse: () => store.groupUse(),
    putGroupUse: (use, expectedVersion) => store.putGroupUse(use, expectedVersion),
  };
}

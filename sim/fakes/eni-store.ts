/**
 * `EniStore` in process memory, with the DynamoDB adapter's conditional semantics (versions,
 * all-or-nothing commits, leases). It serves tests and the benchmark; records are immutable
 * values, so reads hand out the stored objects without copying.
 */
import { EniConflictError } from '../../shared/eni/errors.js';
import {
  type CreateIntent,
  type EniRecord,
  type GroupUse,
  type IpRecord,
  itemKey,
  NO_GROUP_USE,
  type NodeItem,
  type NodeItemKey,
  type NodeState,
  type PoolRecord,
} from '../../shared/eni/model.js';
import {
  type EniStore,
  MAX_ATOMIC_WRITES,
  type NodeWrite,
  type SubnetShortage,
} from '../../shared/eni/store.js';

interface NodeEntry {
  pool?: PoolRecord;
  lease?: { holder: string; until: number };
  readonly items: Map<string, NodeItem>;
}

const slot = (key: NodeItemKey): string => `${key.kind}#${key.id}`;

/** An in-memory `EniStore`; every method yields once, so concurrent callers interleave as with a real store. */
export class InMemoryEniStore implements EniStore {
  readonly #nodes = new Map<string, NodeEntry>();
  /** Shortage marks by `<subnet id>#<shortage>`. */
  readonly #subnets = new Map<string, number>();
  #groupUse: GroupUse;
  /** Requests served, for the benchmark's cost report. */
  requests = 0;

  /** A store holding nothing, or only what its node groups needed before (`groupUse`). */
  constructor(seed: { readonly groupUse?: GroupUse } = {}) {
    this.#groupUse = seed.groupUse ?? NO_GROUP_USE;
  }

  #entry(node: string): NodeEntry {
    let entry = this.#nodes.get(node);
    if (!entry) {
      entry = { items: new Map() };
      this.#nodes.set(node, entry);
    }
    return entry;
  }

  async #tick(): Promise<void> {
    this.requests++;
    await Promise.resolve();
  }

  async *listPools(): AsyncIterable<PoolRecord> {
    await this.#tick();
    const pools = [...this.#nodes.values()].flatMap((entry) => (entry.pool ? [entry.pool] : []));
    yield* pools.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  async getPool(node: string): Promise<PoolRecord | undefined> {
    await this.#tick();
    return this.#nodes.get(node)?.pool;
  }

  async putPool(pool: PoolRecord, expectedVersion: number): Promise<void> {
    await this.#tick();
    const entry = this.#entry(pool.node);
    if ((entry.pool?.version ?? 0) !== expectedVersion) {
      throw new EniConflictError(pool.node, 0, undefined);
    }
    entry.pool = pool;
  }

  async deletePool(node: string): Promise<void> {
    await this.#tick();
    this.#nodes.delete(node);
  }

  async tryLease(node: string, holder: string, now: number, until: number): Promise<boolean> {
    await this.#tick();
    const entry = this.#nodes.get(node);
    if (!entry?.pool) return false;
    const lease = entry.lease;
    if (lease && lease.holder !== holder && lease.until > now) return false;
    entry.lease = { holder, until };
    return true;
  }

  async endLease(node: string, holder: string): Promise<void> {
    await this.#tick();
    const entry = this.#nodes.get(node);
    if (entry?.lease?.holder === holder) entry.lease = undefined;
  }

  async loadNode(node: string): Promise<NodeState> {
    await this.#tick();
    const enis: EniRecord[] = [];
    const ips: IpRecord[] = [];
    const intents: CreateIntent[] = [];
    for (const item of this.#nodes.get(node)?.items.values() ?? []) {
      if (item.kind === 'eni') enis.push(item);
      else if (item.kind === 'ip') ips.push(item);
      else intents.push(item);
    }
    return { enis, ips, intents };
  }

  async getIp(node: string, ip: string): Promise<IpRecord | undefined> {
    await this.#tick();
    const item = this.#nodes.get(node)?.items.get(slot({ kind: 'ip', id: ip }));
    return item?.kind === 'ip' ? item : undefined;
  }

  async commit(node: string, writes: readonly NodeWrite[]): Promise<void> {
    await this.#tick();
    const items = this.#entry(node).items;
    for (let start = 0; start < writes.length; start += MAX_ATOMIC_WRITES) {
      const chunk = writes.slice(start, start + MAX_ATOMIC_WRITES);
      // Check every condition first, then apply: all or nothing, like a transaction.
      chunk.forEach((write, offset) => {
        const key = 'put' in write ? itemKey(write.put) : write.delete;
        const current = items.get(slot(key));
        if (write.expectedVersion === undefined) return;
        if ((current?.version ?? 0) !== write.expectedVersion) {
          throw new EniConflictError(node, start + offset, key);
        }
      });
      for (const write of chunk) {
        if ('put' in write) items.set(slot(itemKey(write.put)), write.put);
        else items.delete(slot(write.delete));
      }
    }
  }

  async subnetShortUntil(subnetId: string, what: SubnetShortage): Promise<number> {
    await this.#tick();
    return this.#subnets.get(`${subnetId}#${what}`) ?? 0;
  }

  async markSubnetShort(subnetId: string, what: SubnetShortage, until: number): Promise<void> {
    await this.#tick();
    const key = `${subnetId}#${what}`;
    this.#subnets.set(key, Math.max(until, this.#subnets.get(key) ?? 0));
  }

  async groupUse(): Promise<GroupUse> {
    await this.#tick();
    return this.#groupUse;
  }

  async putGroupUse(use: GroupUse, expectedVersion: number): Promise<boolean> {
    await this.#tick();
    if (this.#groupUse.version !== expectedVersion) return false;
    this.#groupUse = { ...use, version: expectedVersion + 1 };
    return true;
  }
}

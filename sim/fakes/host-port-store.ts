/**
 * An in-memory `HostPortStore` with the DynamoDB adapter's write semantics (count items of 64
 * ports, each count write conditioned per port, the item's last add recorded, marks of ports
 * held outside berth, quota units taken and given back with their records), and the repair
 * pass's calls (`HostPortRepairStore`), every call passing a gate first so a test decides the
 * order in which concurrent calls reach the store.
 */

import {
  AllocationIdTakenError,
  HostPortConflictError,
  NamespaceQuotaFullError,
} from '../../shared/hostports/errors.js';
import type { HostPortRange } from '../../shared/hostports/model.js';
import type { BlockCounts } from '../../shared/hostports/store.js';
import {
  type HeldPort,
  type HostPortStore,
  isRecordOf,
  levelKey,
  type PodPortRecord,
  type RangeCounts,
  type UseLevel,
} from '../../shared/hostports/store.js';
import type { HostPortRepairStore } from '../../shared/repair/store.js';
import type { Owner } from '../../shared/vocabulary/owner.js';

const ITEM_PORTS = 64;

interface Item {
  readonly counts: Map<number, number>;
  /** Port numbers held by pods berth never admitted. */
  readonly foreign: Set<number>;
  writtenAt?: number;
}

/** A `HostPortStore` in memory; `gate` is awaited before every call takes effect. */
export class MemoryHostPortStore implements HostPortStore, HostPortRepairStore {
  readonly #items = new Map<string, Item>();
  readonly #records = new Map<string, PodPortRecord>();
  readonly #namespaces = new Map<string, number>();
  readonly #gate: () => Promise<void>;
  /** Refused count writes, for tests that count lost races. */
  refused = 0;
  reads = 0;

  constructor(gate: () => Promise<void> = async () => {}) {
    this.#gate = gate;
  }

  /** The use counts of `range` now, by offset, without passing the gate. */
  peek(range: HostPortRange): number[] {
    return Array.from({ length: range.size }, (_, offset) => {
      const port = range.first + offset;
      return this.#item(range.name, port).counts.get(port) ?? 0;
    });
  }

  async readCounts(range: HostPortRange): Promise<RangeCounts> {
    await this.#gate();
    this.reads++;
    const foreign = new Set<number>();
    for (let offset = 0; offset < range.size; offset++) {
      const port = range.first + offset;
      if (this.#item(range.name, port).foreign.has(port)) foreign.add(offset);
    }
    return {
      range,
      counts: this.peek(range),
      portsPerItem: ITEM_PORTS,
      ...(foreign.size === 0 ? {} : { foreign }),
    };
  }

  async getRecord(id: string): Promise<PodPortRecord | undefined> {
    await this.#gate();
    return this.#records.get(id);
  }

  async putRecord(record: PodPortRecord, quota?: number): Promise<void> {
    await this.#gate();
    const stored = this.#records.get(record.id);
    if (stored && (record.token === undefined || stored.token !== record.token)) {
      throw new AllocationIdTakenError(record.id);
    }
    // A first write takes its units with it, as the adapter's transaction does; a rewrite none.
    const units = record.quotaUnits ?? 0;
    if (!stored && quota !== undefined && units > 0) {
      const { namespace } = record.pod;
      const used = this.#namespaces.get(namespace) ?? 0;
      if (used + units > quota) throw new NamespaceQuotaFullError(namespace, used);
      this.#namespaces.set(namespace, used + units);
    }
    this.#records.set(record.id, record);
  }

  async handOver(id: string, recorded: Owner, request: string): Promise<boolean> {
    await this.#gate();
    const stored = this.#records.get(id);
    const same =
      stored?.pod.name === '' &&
      stored.pod.namespace === recorded.namespace &&
      stored.pod.generateName === (recorded.generateName ?? '') &&
      (stored.pod.request === recorded.request || stored.pod.request === request);
    if (!stored || !same) return false;
    this.#records.set(id, { ...stored, pod: { ...stored.pod, request } });
    return true;
  }

  async deleteRecord(id: string, pod: Owner, token?: string): Promise<PodPortRecord | undefined> {
    await this.#gate();
    const stored = this.#records.get(id);
    if (!stored || !isRecordOf(stored, pod, token)) return undefined;
    this.#records.delete(id);
    // Its units go back with it, as in the adapter's transaction.
    const units = stored.quotaUnits ?? 0;
    const { namespace } = stored.pod;
    if (units > 0) this.#namespaces.set(namespace, (this.#namespaces.get(namespace) ?? 0) - units);
    return stored;
  }

  async addUses(
    ports: readonly HeldPort[],
    levels?: ReadonlyMap<string, UseLevel>,
    writtenAt?: number,
  ): Promise<readonly BlockCounts[]> {
    await this.#gate();
    // Every item is checked before any changes: the adapter's items are written in parallel
    // and the applied ones taken back, which ends the same way.
    const adds = new Map<string, Map<number, number>>();
    for (const port of ports) {
      const key = itemKey(port.range, port.port);
      const item = adds.get(key) ?? new Map<number, number>();
      item.set(port.port, (item.get(port.port) ?? 0) + 1);
      adds.set(key, item);
    }
    const refused = ports.some((port) => {
      const level = levels?.get(levelKey(port.range, port.port));
      if (level === undefined) return false;
      const item = this.#item(port.range, port.port);
      if (item.foreign.has(port.port)) return true;
      const count = item.counts.get(port.port) ?? 0;
      if (count <= level.level) return false;
      return !(
        level.concurrentSince !== undefined &&
        count <= level.level + 1 &&
        (item.writtenAt ?? Number.NaN) > level.concurrentSince
      );
    });
    if (refused) {
      this.refused++;
      throw new HostPortConflictError('rose above the level chosen', {
        blocks: this.#blocks(ports),
      });
    }
    for (const port of ports) {
      const item = this.#item(port.range, port.port);
      item.counts.set(port.port, (item.counts.get(port.port) ?? 0) + 1);
      if (writtenAt !== undefined) item.writtenAt = writtenAt;
    }
    return this.#blocks(ports);
  }

  async removeUses(ports: readonly HeldPort[]): Promise<readonly BlockCounts[]> {
    await this.#gate();
    for (const port of ports) {
      const item = this.#item(port.range, port.port);
      item.counts.set(port.port, (item.counts.get(port.port) ?? 0) - 1);
    }
    return this.#blocks(ports);
  }

  async adjustNamespaceUse(
    namespace: string,
    delta: number,
    limit?: number,
  ): Promise<{ applied: boolean; used: number }> {
    await this.#gate();
    const used = this.#namespaces.get(namespace) ?? 0;
    const refused = delta < 0 ? used + delta < 0 : limit !== undefined && used + delta > limit;
    if (refused) return { applied: false, used };
    this.#namespaces.set(namespace, used + delta);
    return { applied: true, used: used + delta };
  }

  async namespaceUse(namespace: string): Promise<number> {
    await this.#gate();
    return this.#namespaces.get(namespace) ?? 0;
  }

  async *listRecords(): AsyncIterable<PodPortRecord> {
    await this.#gate();
    yield* [...this.#records.values()];
  }

  async correctCount(range: string, port: number, from: number, to: number): Promise<boolean> {
    await this.#gate();
    const item = this.#item(range, port);
    if ((item.counts.get(port) ?? 0) !== from) return false;
    item.counts.set(port, to);
    return true;
  }

  async markForeign(range: string, port: number, held: boolean): Promise<void> {
    await this.#gate();
    const item = this.#item(range, port);
    if (held) item.foreign.add(port);
    else item.foreign.delete(port);
  }

  #item(range: string, port: number): Item {
    const key = itemKey(range, port);
    const item = this.#items.get(key) ?? { counts: new Map(), foreign: new Set() };
    this.#items.set(key, item);
    return item;
  }

  #blocks(ports: readonly HeldPort[]): BlockCounts[] {
    const seen = new Map<string, BlockCounts>();
    for (const port of ports) {
      const item = this.#item(port.range, port.port);
      const firstPort = Math.floor(port.port / ITEM_PORTS) * ITEM_PORTS;
      seen.set(itemKey(port.range, port.port), {
        range: port.range,
        firstPort,
        ports: ITEM_PORTS,
        counts: new Map(item.counts),
        ...(item.writtenAt === undefined ? {} : { writtenAt: item.writtenAt }),
        ...(item.foreign.size === 0 ? {} : { foreign: new Set(item.foreign) }),
      });
    }
    return [...seen.values()];
  }
}

function itemKey(range: string, port: number): string {
  return `${range}/${Math.floor(port / ITEM_PORTS)}`;
}

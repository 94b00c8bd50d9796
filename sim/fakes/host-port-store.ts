/**
 * An in-memory `HostPortStore` with the DynamoDB adapter's write semantics (count items of 64
 * ports, each count write conditioned per port, the item's last add recorded), every call
 * passing a gate first so a test decides the order in which concurrent calls reach the store.
 */

import { AllocationIdTakenError, HostPortConflictError } from '../../shared/hostports/errors.js';
import type { HostPortRange } from '../../shared/hostports/model.js';
import type { BlockCounts } from '../../shared/hostports/store.js';
import {
  type HeldPort,
  type HostPortStore,
  levelKey,
  type PodPortRecord,
  type RangeCounts,
  type UseLevel,
} from '../../shared/hostports/store.js';
import type { Owner } from '../../shared/vocabulary/owner.js';

const ITEM_PORTS = 64;

interface Item {
  readonly counts: Map<number, number>;
  writtenAt?: number;
}

/** A `HostPortStore` in memory; `gate` is awaited before every call takes effect. */
export class MemoryHostPortStore implements HostPortStore {
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
    return { range, counts: this.peek(range), portsPerItem: ITEM_PORTS };
  }

  async getRecord(id: string): Promise<PodPortRecord | undefined> {
    await this.#gate();
    return this.#records.get(id);
  }

  async putRecord(record: PodPortRecord): Promise<void> {
    await this.#gate();
    const stored = this.#records.get(record.id);
    if (stored && (record.token === undefined || stored.token !== record.token)) {
      throw new AllocationIdTakenError(record.id);
    }
    this.#records.set(record.id, record);
  }

  async deleteRecord(id: string, pod: Owner, token?: string): Promise<PodPortRecord | undefined> {
    await this.#gate();
    const stored = this.#records.get(id);
    if (!stored || stored.pod.namespace !== pod.namespace) return undefined;
    // The same pod, as the DynamoDB adapter's condition has it: its name, or for a record
    // written at a CREATE with generateName, no name and the generateName the pod keeps.
    const unnamed =
      !!pod.generateName && stored.pod.name === '' && stored.pod.generateName === pod.generateName;
    if (stored.pod.name !== pod.name && !unnamed) return undefined;
    if (pod.uid !== undefined && stored.pod.uid !== undefined && stored.pod.uid !== pod.uid) {
      return undefined;
    }
    if (token !== undefined && stored.token !== token) return undefined;
    this.#records.delete(id);
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
    yield* this.#records.values();
  }

  #item(range: string, port: number): Item {
    const key = itemKey(range, port);
    const item = this.#items.get(key) ?? { counts: new Map() };
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
      });
    }
    return [...seen.values()];
  }
}

function itemKey(range: string, port: number): string {
  return `${range}/${Math.floor(port / ITEM_PORTS)}`;
}

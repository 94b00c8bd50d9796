/**
 * An in-memory `AllocationStore` with the DynamoDB adapter's semantics (versioned owner records,
 * per-value exclusive claims answered with their block, ascending sparse block scans), so the admission CPU benchmark
 * measures berth's own work with no store round trip in it.
 */

import {
  type AllocationStore,
  type Block,
  type ClaimOutcome,
  type OwnerRecord,
  OwnerVersionConflictError,
} from '../../shared/allocation/store.js';
import { blockIndexOf, compareOffsets, type Offset, slotOf } from '../../shared/net/offset.js';
import type { RepairAllocationStore } from '../../shared/repair/store.js';

/** The store calls a caller made: each would be one DynamoDB round trip (or more pages). */
export type StoreCalls = Record<keyof AllocationStore, number>;

/** Map-based `AllocationStore` for one process, with the repair pass's hand-over. */
export class MemoryAllocationStore implements AllocationStore, RepairAllocationStore {
  /** Calls so far, per method. */
  readonly calls: StoreCalls = {
    getOwner: 0,
    putOwner: 0,
    deleteOwner: 0,
    listOwners: 0,
    scanBlocks: 0,
    claim: 0,
    release: 0,
  };
  readonly #owners = new Map<string, OwnerRecord>();
  /** range key → block index → slot → owner id. */
  readonly #ranges = new Map<string, Map<Offset, Map<number, string>>>();
  /** range key → block index → slot → claim time (epoch ms, rounded up to the second). */
  readonly #claimedAt = new Map<string, Map<Offset, Map<number, number>>>();

  async getOwner(id: string): Promise<OwnerRecord | undefined> {
    this.calls.getOwner++;
    return this.#owners.get(id);
  }

  async putOwner(record: OwnerRecord, expectedVersion: number): Promise<void> {
    this.calls.putOwner++;
    const stored = this.#owners.get(record.id)?.version ?? 0;
    if (stored !== expectedVersion) throw new OwnerVersionConflictError(record.id);
    this.#owners.set(record.id, record);
  }

  async deleteOwner(id: string, expectedVersion?: number): Promise<boolean> {
    this.calls.deleteOwner++;
    if (expectedVersion !== undefined && this.#owners.get(id)?.version !== expectedVersion) {
      return false;
    }
    this.#owners.delete(id);
    return true;
  }

  async *listOwners(): AsyncIterable<OwnerRecord> {
    this.calls.listOwners++;
    yield* [...this.#owners.values()];
  }

  async *scanBlocks(range: string, from: Offset, to: Offset): AsyncIterable<Block> {
    this.calls.scanBlocks++;
    const blocks = this.#ranges.get(range);
    if (!blocks) return;
    // A block once written stays, emptied or not, as a DynamoDB item does after its last REMOVE.
    if (typeof from === 'number' && typeof to === 'number' && to - from <= blocks.size) {
      // Lazily, in index order: the scan stops at the first block with room, so this stays cheap.
      for (let index = from; index <= to; index++) {
        const holders = blocks.get(index);
        if (holders) yield this.#block(range, index, holders);
      }
      return;
    }
    // A span wider than the blocks stored (an IPv6 /64): the stored ones in it, in order.
    const inSpan = [...blocks.keys()].filter((index) => index >= from && index <= to);
    for (const index of inSpan.sort(compareOffsets)) {
      const holders = blocks.get(index);
      if (holders) yield this.#block(range, index, holders);
    }
  }

  async claim(
    range: string,
    offset: Offset,
    ownerId: string,
    claimedAt?: number,
  ): Promise<ClaimOutcome> {
    this.calls.claim++;
    const holders = this.#holders(range, offset);
    const slot = slotOf(offset);
    const index = blockIndexOf(offset);
    const holder = holders.get(slot);
    // The block as the write found it (refused) or left it, as DynamoDB's ALL_OLD and ALL_NEW
    // answer: the allocator's view of the blocks learns from it, and without it picks the same
    // taken value again until it gives up.
    if (holder !== undefined)
      return { taken: false, holder, block: this.#block(range, index, holders) };
    holders.set(slot, ownerId);
    // To the second, rounded up, as the DynamoDB adapter stores it.
    if (claimedAt === undefined) this.#times(range, index).delete(slot);
    else this.#times(range, index).set(slot, Math.ceil(claimedAt / 1000) * 1000);
    return { taken: true, block: this.#block(range, index, holders) };
  }

  async release(range: string, offset: Offset, ownerId: string): Promise<boolean> {
    this.calls.release++;
    const holders = this.#holders(range, offset);
    const slot = slotOf(offset);
    if (holders.get(slot) !== ownerId) return false;
    holders.delete(slot);
    this.#times(range, blockIndexOf(offset)).delete(slot);
    return true;
  }

  async transfer(range: string, offset: Offset, fromId: string, toId: string): Promise<boolean> {
    const holders = this.#holders(range, offset);
    const slot = slotOf(offset);
    if (holders.get(slot) !== fromId) return false;
    holders.set(slot, toId);
    this.#times(range, blockIndexOf(offset)).delete(slot);
    return true;
  }

  /** Values held in a range, for checking the benchmark's own bookkeeping. */
  heldCount(range: string): number {
    let count = 0;
    for (const holders of this.#ranges.get(range)?.values() ?? []) count += holders.size;
    return count;
  }

  /** A block as a read answers it: copies, with the claim times of its held slots. */
  #block(range: string, index: Offset, holders: Map<number, string>): Block {
    const times = this.#claimedAt.get(range)?.get(index);
    return {
      index,
      holders: new Map(holders),
      ...(times && times.size > 0 ? { claimedAt: new Map(times) } : {}),
    };
  }

  #times(range: string, index: Offset): Map<number, number> {
    const blocks = this.#claimedAt.get(range) ?? new Map<Offset, Map<number, number>>();
    this.#claimedAt.set(range, blocks);
    const times = blocks.get(index) ?? new Map<number, number>();
    blocks.set(index, times);
    return times;
  }

  #holders(range: string, offset: Offset): Map<number, string> {
    let blocks = this.#ranges.get(range);
    if (!blocks) {
      blocks = new Map();
      this.#ranges.set(range, blocks);
    }
    const index = blockIndexOf(offset);
    let holders = blocks.get(index);
    if (!holders) {
      holders = new Map();
      blocks.set(index, holders);
    }
    return holders;
  }
}

/** How much of each range is in use, for `/v1/status` and `berth status`. */
import { rangeKey } from './allocator.js';
import type { RangeKind, ValueRange } from './range.js';
import { type AllocationStore, BLOCK_SIZE } from './store.js';

/** One row of `/v1/status`. */
export interface RangeUsage {
  readonly name: string;
  readonly kind: RangeKind;
  readonly size: number;
  readonly used: number;
}

/** Counts the taken values of an exclusive range by reading its blocks (paged, never one read per value). */
export async function exclusiveRangeUsage(
  store: AllocationStore,
  range: ValueRange,
): Promise<RangeUsage> {
  let used = 0;
  const lastBlock = Math.max(0, Math.ceil(range.size / BLOCK_SIZE) - 1);
  for await (const block of store.scanBlocks(rangeKey(range), 0, lastBlock))
    used += block.holders.size;
  return { name: range.name, kind: range.kind, size: range.size, used };
}

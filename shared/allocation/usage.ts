/** How much of each range is in use, for `/v1/status` and `berth status`. */
import { lastBlockOf } from '../net/offset.js';
import type { RangeKind, ValueRange } from '../net/value-range.js';
import { rangeKey } from './plan.js';
import type { AllocationStore } from './store.js';

/** One row of `/v1/status`. */
export interface RangeUsage {
  readonly name: string;
  readonly kind: RangeKind;
  /** Usable values; past 2^53 (an IPv6 range wider than a /75) the nearest number. */
  readonly size: number;
  readonly used: number;
  /**
   * Blocks of 32 values that hold at least one, for a range too wide for `used / size` to say
   * anything (past 2^53 values; a /64 shows 0.000% however full its blocks are): how many items
   * the values spread over. Absent for narrower ranges.
   */
  readonly blocks?: number;
}

/**
 * Counts the taken values of an exclusive range by reading its blocks: only blocks that ever held
 * a value are stored, so this reads what the range holds (paged), never one read per value and
 * never anything in proportion to its width.
 */
export async function exclusiveRangeUsage(
  store: AllocationStore,
  range: ValueRange,
): Promise<RangeUsage> {
  let used = 0;
  let blocks = 0;
  for await (const block of store.scanBlocks(rangeKey(range), 0, lastBlockOf(range.exactSize))) {
    used += block.holders.size;
    if (block.holders.size > 0) blocks++;
  }
  const wide = typeof range.exactSize === 'bigint';
  return {
    name: range.name,
    kind: range.kind,
    size: range.size,
    used,
    ...(wide ? { blocks } : {}),
  };
}

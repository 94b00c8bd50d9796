/**
 * Where the next free value is: the kube-apiserver's random-scan-with-offset strategy, run over
 * a sparse stream of blocks instead of one in-memory bitmap. Pure: the blocks come from outside.
 * Only blocks that hold values exist, so a scan costs what the range holds, never its width: a
 * random start in a /64 lands in a gap at the first block read.
 */
import {
  addOffset,
  BLOCK_SIZE,
  blockIndexOf,
  compareOffsets,
  type Offset,
  offsetAt,
  randomOffset,
  slotOf,
} from '../net/offset.js';
import type { ValueRange } from '../net/value-range.js';
import type { Block } from './store.js';

/** Reads blocks with index in `[from, to]`, ascending; blocks with no taken value may be absent. */
export type BlockReader = (from: Offset, to: Offset) => AsyncIterable<Block>;

const min = (a: Offset, b: Offset): Offset => (compareOffsets(a, b) <= 0 ? a : b);
const max = (a: Offset, b: Offset): Offset => (compareOffsets(a, b) >= 0 ? a : b);

/**
 * The first free offset in `[from, to)` in ascending order, skipping `excluded`; undefined when
 * there is none. An absent block is entirely free.
 */
async function firstFree(
  read: BlockReader,
  from: Offset,
  to: Offset,
  excluded: ReadonlySet<Offset>,
): Promise<Offset | undefined> {
  if (from >= to) return undefined;
  let cursor = from;
  // Values this process is claiming are few, so a gap yields a value within a few steps.
  const freeBefore = (end: Offset): Offset | undefined => {
    for (; cursor < end; cursor = addOffset(cursor, 1)) if (!excluded.has(cursor)) return cursor;
    return undefined;
  };
  for await (const block of read(blockIndexOf(from), blockIndexOf(addOffset(to, -1)))) {
    const start = offsetAt(block.index, 0);
    const gap = freeBefore(min(start, to));
    if (gap !== undefined) return gap;
    cursor = max(cursor, start);
    for (let slot = slotOf(cursor); slot < BLOCK_SIZE && cursor < to; slot++) {
      if (!block.holders.has(slot) && !excluded.has(cursor)) return cursor;
      cursor = addOffset(cursor, 1);
    }
  }
  return freeBefore(to);
}

/**
 * The kube-apiserver's order of dynamic picks: a random start in the upper band, scanning up with
 * wrap-around; only when the upper band is full, the same in the reserved lower band.
 */
export async function pickFree(
  range: ValueRange,
  read: BlockReader,
  random: () => number,
  excluded: ReadonlySet<Offset> = new Set(),
): Promise<Offset | undefined> {
  const bands: Array<[Offset, Offset]> = [
    [range.reservedBand, range.exactSize],
    [0, range.reservedBand],
  ];
  for (const [low, high] of bands) {
    if (high <= low) continue;
    const start = randomOffset(low, high, random);
    const found =
      (await firstFree(read, start, high, excluded)) ??
      (await firstFree(read, low, start, excluded));
    if (found !== undefined) return found;
  }
  return undefined;
}

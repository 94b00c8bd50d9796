/**
 * Where the next free value is: the kube-apiserver's random-scan-with-offset strategy, run over
 * a sparse stream of blocks instead of one in-memory bitmap. Pure: the blocks come from outside.
 */
import type { ValueRange } from './range.js';
import { BLOCK_SIZE, type Block } from './store.js';

/** Reads blocks with index in `[from, to]`, ascending; blocks with no taken value may be absent. */
export type BlockReader = (from: number, to: number) => AsyncIterable<Block>;

/**
 * The first free offset in `[from, to)` in ascending order, skipping `excluded`; undefined when
 * there is none. An absent block is entirely free.
 */
async function firstFree(
  read: BlockReader,
  from: number,
  to: number,
  excluded: ReadonlySet<number>,
): Promise<number | undefined> {
  if (from >= to) return undefined;
  let cursor = from;
  const freeBefore = (end: number): number | undefined => {
    for (; cursor < end; cursor++) if (!excluded.has(cursor)) return cursor;
    return undefined;
  };
  for await (const block of read(
    Math.floor(from / BLOCK_SIZE),
    Math.floor((to - 1) / BLOCK_SIZE),
  )) {
    const start = block.index * BLOCK_SIZE;
    const gap = freeBefore(Math.min(start, to));
    if (gap !== undefined) return gap;
    const end = Math.min(start + BLOCK_SIZE, to);
    for (cursor = Math.max(cursor, start); cursor < end; cursor++) {
      if (!block.holders.has(cursor - start) && !excluded.has(cursor)) return cursor;
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
  excluded: ReadonlySet<number> = new Set(),
): Promise<number | undefined> {
  const bands: Array<[number, number]> = [
    [range.reservedBand, range.size],
    [0, range.reservedBand],
  ];
  for (const [low, high] of bands) {
    if (high <= low) continue;
    const start = low + Math.floor(random() * (high - low));
    const found =
      (await firstFree(read, start, high, excluded)) ??
      (await firstFree(read, low, start, excluded));
    if (found !== undefined) return found;
  }
  return undefined;
}

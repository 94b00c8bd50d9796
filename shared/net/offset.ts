/**
 * Offsets of values in a range, and the blocks they fall in. An IPv6 service range may be a /64
 * (2^64 addresses), past what a JavaScript number holds exactly (2^53), so an offset is a number
 * while it is a safe integer and a bigint beyond. Each offset has exactly one form (`toOffset`),
 * so `===`, `Set` and `Map` keep working across both; IPv4 and port ranges only ever see numbers.
 * Every computation on offsets and block indexes that may leave the safe range lives here.
 */

/** Values per block: 32 owner ids of 20 characters keep a block under 1 KB, so a write is 1 WCU. */
export const BLOCK_SIZE = 32;

/** A value's position in its range (also a block's index): a number up to 2^53 - 1, a bigint past it. */
export type Offset = number | bigint;

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const BLOCK = BigInt(BLOCK_SIZE);

/** The one form of an offset: a number while it is a safe integer, the bigint itself beyond. */
export function toOffset(value: bigint): Offset {
  return value <= SAFE ? Number(value) : value;
}

/** An offset as a bigint, for arithmetic that may pass 2^53. */
export function bigOffset(offset: Offset): bigint {
  return typeof offset === 'bigint' ? offset : BigInt(offset);
}

/** The index of the block an offset falls in. */
export function blockIndexOf(offset: Offset): Offset {
  return typeof offset === 'number' ? Math.floor(offset / BLOCK_SIZE) : toOffset(offset / BLOCK);
}

/** An offset's slot within its block, in `[0, BLOCK_SIZE)`. */
export function slotOf(offset: Offset): number {
  return typeof offset === 'number' ? offset % BLOCK_SIZE : Number(offset % BLOCK);
}

/** The offset of a slot of a block. */
export function offsetAt(index: Offset, slot: number): Offset {
  if (typeof index === 'number') {
    const offset = index * BLOCK_SIZE + slot;
    if (Number.isSafeInteger(offset)) return offset;
  }
  return toOffset(bigOffset(index) * BLOCK + BigInt(slot));
}

/** `offset + step`, in the one form. */
export function addOffset(offset: Offset, step: number): Offset {
  if (typeof offset === 'number') {
    const sum = offset + step;
    if (Number.isSafeInteger(sum)) return sum;
  }
  return toOffset(bigOffset(offset) + BigInt(step));
}

/** The index of a range's last block, for a scan of every block: the range holds `size` values. */
export function lastBlockOf(size: Offset): Offset {
  return size > 0 ? blockIndexOf(addOffset(size, -1)) : 0;
}

/** Ascending order of offsets (a sort comparator). */
export function compareOffsets(a: Offset, b: Offset): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A uniform offset in `[low, high)` from `random` (uniform in [0, 1)). Below 2^53 it is the
 * kube-apiserver's `low + rand.Int63n(high - low)` in one draw; past it, 64 random bits scaled to
 * the span (two draws), as `rand.Uint64` serves ranges past MaxInt64 upstream.
 */
export function randomOffset(low: Offset, high: Offset, random: () => number): Offset {
  if (typeof low === 'number' && typeof high === 'number') {
    return low + Math.floor(random() * (high - low));
  }
  const span = bigOffset(high) - bigOffset(low);
  const bits =
    (BigInt(Math.floor(random() * 2 ** 32)) << 32n) | BigInt(Math.floor(random() * 2 ** 32));
  return toOffset(bigOffset(low) + ((bits * span) >> 64n));
}

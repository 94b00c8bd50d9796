import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addOffset,
  BLOCK_SIZE,
  bigOffset,
  blockIndexOf,
  compareOffsets,
  lastBlockOf,
  offsetAt,
  randomOffset,
  slotOf,
  toOffset,
} from '../../shared/net/offset.js';

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** Offsets of a /64 and around 2^53, where a number stops being exact. */
const wide = fc.oneof(
  fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
  fc.bigInt({ min: SAFE - 100n, max: SAFE + 100n }),
  fc.bigInt({ min: 0n, max: 1000n }),
);

describe('toOffset', () => {
  it('keeps one form per value: a number up to 2^53 - 1, a bigint past it', () => {
    fc.assert(
      fc.property(wide, (value) => {
        const offset = toOffset(value);
        expect(typeof offset).toBe(value <= SAFE ? 'number' : 'bigint');
        expect(bigOffset(offset)).toBe(value);
      }),
    );
    expect(toOffset(SAFE)).toBe(Number.MAX_SAFE_INTEGER);
    expect(toOffset(SAFE + 1n)).toBe(SAFE + 1n);
  });
});

describe('block arithmetic', () => {
  it('splits an offset into its block and slot and puts it back exactly, past 2^53 too', () => {
    fc.assert(
      fc.property(wide, (value) => {
        const offset = toOffset(value);
        const index = blockIndexOf(offset);
        const slot = slotOf(offset);
        expect(bigOffset(index)).toBe(value / BigInt(BLOCK_SIZE));
        expect(slot).toBe(Number(value % BigInt(BLOCK_SIZE)));
        expect(offsetAt(index, slot)).toBe(offset);
      }),
    );
  });

  it('steps across 2^53 without losing a value', () => {
    const last = Number.MAX_SAFE_INTEGER;
    expect(addOffset(last, 1)).toBe(SAFE + 1n);
    expect(addOffset(SAFE + 1n, -1)).toBe(last);
    expect(offsetAt(toOffset((SAFE + 1n) / 32n), 31)).toBe(((SAFE + 1n) / 32n) * 32n + 31n);
  });

  it('names the last block of a range by its size, a /64 included', () => {
    expect(lastBlockOf(254)).toBe(7);
    expect(lastBlockOf(256)).toBe(7);
    expect(lastBlockOf(257)).toBe(8);
    expect(lastBlockOf(0)).toBe(0);
    expect(lastBlockOf((1n << 64n) - 1n)).toBe((1n << 59n) - 1n);
  });

  it('orders numbers and bigints together', () => {
    fc.assert(
      fc.property(wide, wide, (a, b) => {
        const order = compareOffsets(toOffset(a), toOffset(b));
        expect(order).toBe(a < b ? -1 : a > b ? 1 : 0);
      }),
    );
  });
});

describe('randomOffset', () => {
  it('stays inside [low, high) for any draw, a /64 included', () => {
    const draws = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
    fc.assert(
      fc.property(wide, wide, draws, draws, (a, b, r1, r2) => {
        fc.pre(a !== b);
        const [low, high] = a < b ? [a, b] : [b, a];
        const queue = [r1, r2];
        const picked = bigOffset(
          randomOffset(toOffset(low), toOffset(high), () => queue.shift() ?? 0),
        );
        expect(picked >= low && picked < high).toBe(true);
      }),
    );
  });

  it('reaches the top of a /64', () => {
    const top = (1n << 64n) - 1n;
    const almostOne = 1 - 2 ** -53;
    expect(bigOffset(randomOffset(256, toOffset(top), () => almostOne)) > top - (1n << 33n)).toBe(
      true,
    );
  });
});

/**
 * An allocation choosing again after a lost race draws a pod's later ports from the count items
 * its first port uses: one write a pod, and never a port above the lowest two counts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chooseWithSlack } from '../../shared/hostports/choice.js';
import { seededRandom } from '../../sim/random.js';

const itemOf = (offset: number) => Math.floor(offset / 64);

describe('chooseWithSlack with count items', () => {
  it('puts a pod’s second port in the item of its first while a candidate is left there', () => {
    // Items 0 and 1 both have room at the lowest two counts.
    const counts = Array.from({ length: 128 }, (_, i) => (i % 3 === 0 ? 1 : 0));
    for (let seed = 0; seed < 50; seed++) {
      const picks = chooseWithSlack(counts, 2, seededRandom(seed), itemOf) ?? [];
      expect(picks).toHaveLength(2);
      expect(new Set(picks.map(itemOf)).size).toBe(1);
    }
    // Without items, the two picks spread over both items in some of the draws.
    const spread = Array.from(
      { length: 50 },
      (_, seed) => chooseWithSlack(counts, 2, seededRandom(seed)) ?? [],
    );
    expect(spread.some((picks) => new Set(picks.map(itemOf)).size === 2)).toBe(true);
  });

  it('moves to another item only when the first has no candidate left', () => {
    // Only port 5 of item 0 is within the lowest two counts; item 1 has room.
    const counts = Array.from({ length: 128 }, (_, i) => (i < 64 && i !== 5 ? 9 : 0));
    const picks = chooseWithSlack(counts, 3, seededRandom(1), itemOf) ?? [];
    expect(picks).toHaveLength(3);
    expect(new Set(picks).size).toBe(3);
  });

  it('keeps every pick distinct and within one of the lowest count', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 8, maxLength: 200 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer(),
        (counts, amount, seed) => {
          const picks = chooseWithSlack(counts, amount, seededRandom(seed), itemOf);
          const lowest = Math.min(...counts);
          const room = counts.filter((c) => c <= lowest + 1).length;
          if (room < amount) {
            expect(picks).toBeUndefined();
            return;
          }
          expect(picks).toHaveLength(amount);
          expect(new Set(picks).size).toBe(amount);
          for (const p of picks ?? []) expect(counts[p]).toBeLessThanOrEqual(lowest + 1);
        },
      ),
    );
  });
});

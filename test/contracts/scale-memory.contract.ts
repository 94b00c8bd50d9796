/**
 * What every `ScaleMemoryStore` answers, registered against a factory so the in-process memory of
 * the scale-pass tests and the DynamoDB adapter cannot drift apart: the empty memory before the
 * first save, then the last memory saved, whole.
 */
import { describe, expect, it } from 'vitest';
import { rememberPass, withArrivals } from '../../shared/scale/memory.js';
import {
  EMPTY_SCALE_MEMORY,
  type ScaleMemory,
  type ScaleMemoryStore,
} from '../../shared/scale/store.js';

const T0 = Date.UTC(2099, 0, 1);
const MINUTE = 60_000;
export const WINDOWS = {
  demandWindowMs: 15 * MINUTE,
  burstWindowMs: 24 * 60 * MINUTE,
  defaultProvisionMs: 3 * MINUTE,
  reactionMs: MINUTE,
};
export const quiet = { readyNodes: 3, surplus: false, removalsStarted: 0 };

/** A memory two passes in: arrivals, a surplus start, growth awaited, a removal. */
export const twoPasses: ScaleMemory = rememberPass(
  withArrivals(withArrivals(EMPTY_SCALE_MEMORY, [], T0, WINDOWS), [T0 + 1], T0 + MINUTE, WINDOWS),
  { ...quiet, nowMs: T0 + MINUTE, surplus: true, grewTo: 4, removalsStarted: 1 },
);

/** Registers the contract's cases for the stores `make` builds, a fresh one per case. */
export function scaleMemoryContract(name: string, make: () => Promise<ScaleMemoryStore>): void {
  describe(`${name} keeps the ScaleMemoryStore contract`, () => {
    it('answers the empty memory before the first save', async () => {
      const store = await make();
      expect(await store.load()).toEqual(EMPTY_SCALE_MEMORY);
    });

    it('answers what was saved, every field of it', async () => {
      const store = await make();
      expect(twoPasses.arrivals).toHaveLength(1);
      expect(twoPasses.surplusSinceMs).toBe(T0 + MINUTE);
      await store.save(twoPasses);
      expect(await store.load()).toEqual(twoPasses);
      expect(await store.load()).toEqual(twoPasses);
    });

    it('answers the last memory saved, fields it dropped included', async () => {
      const store = await make();
      await store.save(twoPasses);
      const next = rememberPass(twoPasses, { ...quiet, nowMs: T0 + 2 * MINUTE });
      expect(next.surplusSinceMs).toBeUndefined();
      await store.save(next);
      expect(await store.load()).toEqual(next);
    });
  });
}

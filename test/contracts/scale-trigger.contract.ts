/**
 * What every `ScaleTriggerStore` answers, registered against a factory so the in-process store
 * and the DynamoDB adapter cannot drift apart: counts that survive a pass, a slack measured from
 * the pass, and one claim per debounce.
 */
import { describe, expect, it } from 'vitest';
import { NO_PASS_YET, type ScaleTriggerStore } from '../../shared/scale/store.js';

const T0 = Date.UTC(2099, 0, 1);
const DEBOUNCE = 10_000;

/** Registers the contract's cases for the stores `make` builds, a fresh one per case. */
export function scaleTriggerContract(name: string, make: () => Promise<ScaleTriggerStore>): void {
  describe(`${name} keeps the ScaleTriggerStore contract`, () => {
    it('counts admissions before any pass against no slack, as never asked', async () => {
      const store = await make();
      expect(await store.admitted(1)).toEqual({ ...NO_PASS_YET, admitted: 1 });
      expect(await store.admitted(2)).toEqual({ ...NO_PASS_YET, admitted: 3 });
    });

    it("counts from a pass's slack and time, and from the next pass's", async () => {
      const store = await make();
      await store.admitted(4);
      await store.passed(12, T0);
      expect(await store.admitted(1)).toEqual({ slack: 12, passAtMs: T0, admitted: 1 });
      await store.passed(-3, T0 + 60_000);
      expect(await store.admitted(2)).toEqual({ slack: -3, passAtMs: T0 + 60_000, admitted: 2 });
    });

    it('grants one claim a debounce, none within one of a pass', async () => {
      const store = await make();
      expect(await store.claim(T0, DEBOUNCE)).toBe(true);
      expect(await store.claim(T0 + DEBOUNCE - 1, DEBOUNCE)).toBe(false);
      // A claim counts as a pass asked for: the state answers its time.
      expect((await store.admitted(1)).passAtMs).toBe(T0);
      expect(await store.claim(T0 + DEBOUNCE, DEBOUNCE)).toBe(true);
      await store.passed(0, T0 + 15_000);
      expect(await store.claim(T0 + 15_000 + DEBOUNCE - 1, DEBOUNCE)).toBe(false);
      expect(await store.claim(T0 + 15_000 + DEBOUNCE, DEBOUNCE)).toBe(true);
    });

    it('grants exactly one of many claims made at once', async () => {
      const store = await make();
      const claims = await Promise.all(Array.from({ length: 8 }, () => store.claim(T0, DEBOUNCE)));
      expect(claims.filter(Boolean)).toHaveLength(1);
    });

    it('loses no admission counted at once from many callers', async () => {
      const store = await make();
      await store.passed(0, T0);
      await Promise.all(Array.from({ length: 20 }, () => store.admitted(1)));
      expect((await store.admitted(0)).admitted).toBe(20);
    });
  });
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { OwnerRecord } from '../../shared/allocation/store.js';
import { parseConfig } from '../../shared/config/schema.js';
import {
  FREED_AFTER_COMMIT_SECONDS,
  FREED_AFTER_NEVER_STORED_SECONDS,
  MAX_SETTLE_DELAY_SECONDS,
  settleBounds,
} from '../../shared/config/settle-schedule.js';
import { backoff, decideSettle, settleTiming } from '../../shared/settle/policy.js';
import type { SettleTask } from '../../shared/settle/task.js';

const T0 = Date.parse('2026-11-24T12:00:00Z');
const timing = settleTiming(5);
const claim = (offset: number, since = T0) => ({
  slot: `p${offset}`,
  range: 'nodePort#r',
  offset,
  since,
});
const record = (claims: number[], releasing: number[]): OwnerRecord => ({
  id: 'abcdefghijklmnopqrst',
  owner: { kind: 'Service', namespace: 'default', name: 'web' },
  claims: claims.map((o) => ({ slot: `p${o}`, range: 'nodePort#r', offset: o })),
  ...(releasing.length ? { releasing: releasing.map((o) => claim(o)) } : {}),
  version: 3,
  createdAt: T0,
});
const task = (reason: SettleTask['reason'], attempt = 0): SettleTask => ({
  id: 'abcdefghijklmnopqrst',
  reason,
  admittedAt: T0,
  attempt,
});
const carrying = (...offsets: number[]) => ({
  present: true as const,
  terminating: false,
  carries: new Set(offsets.map((o) => `nodePort#r#${o}`)),
});

/** When decideSettle frees a value given back whose object lets it go `commitAt` s after the review. */
function freedAfterRelease(delaySeconds: number, commitAt: number): number {
  const schedule = settleTiming(delaySeconds);
  let at = delaySeconds;
  for (let attempt = 0; ; attempt++) {
    // A finalizer holds the object until the commit, then it is gone.
    const reading =
      at < commitAt ? { ...carrying(2), terminating: true } : { present: false as const };
    const d = decideSettle(
      record([], [2]),
      reading,
      task('release', attempt),
      T0 + at * 1000,
      schedule,
    );
    if (d.free.length > 0) return at;
    at += d.recheckAfter ?? Number.NaN;
  }
}

describe('decideSettle', () => {
  it('frees what the stored object no longer carries and keeps waiting for the rest', () => {
    const d = decideSettle(record([1], [2, 3]), carrying(1, 3), task('release'), T0 + 5000, timing);
    expect(d.free.map((c) => c.offset)).toEqual([2]);
    expect(d.keep).toEqual([]);
    expect(d.recheckAfter).toBe(10);
  });

  it('waits out the commit window of a value an admission added before it was given back: that UPDATE may still commit on top of the object read', () => {
    // An UPDATE admitted at T0 allocated node port 2; another, from the same stored object,
    // gave it back at T0 + 1 s and was refused. The stored object (the UPDATEs' common base) does
    // not carry 2, yet the first UPDATE can still commit it until its deadline.
    const added = {
      ...record([1], []),
      releasing: [{ ...claim(2, T0 + 1000), claimedAt: T0, addedOn: '17' }],
    };
    const atBase = { ...carrying(1), resourceVersion: '17' };
    const early = decideSettle(added, atBase, task('release'), T0 + 6000, timing);
    expect(early.free).toEqual([]);
    expect(early.recheckAfter).toBeGreaterThan(0);
    const late = decideSettle(added, atBase, task('release'), T0 + 90_000, timing);
    expect(late.free.map((c) => c.offset)).toEqual([2]);
    // Stored at another version: the UPDATE that added it can no longer commit.
    const moved = { ...carrying(1), resourceVersion: '18' };
    expect(decideSettle(added, moved, task('release'), T0 + 6000, timing).free).toHaveLength(1);
    // Gone, no write can bring the object back: freed at once.
    const gone = decideSettle(added, { present: false }, task('release'), T0 + 6000, timing);
    expect(gone.free.map((c) => c.offset)).toEqual([2]);
  });

  it('frees everything given back once the object is gone', () => {
    const d = decideSettle(record([], [1, 2]), { present: false }, task('release'), T0, timing);
    expect(d.free.map((c) => c.offset)).toEqual([1, 2]);
    expect(d.recheckAfter).toBeUndefined();
  });

  it('never frees a value a terminating object carries, however long it waits', () => {
    const terminating = { ...carrying(1), terminating: true };
    const d = decideSettle(
      record([], [1]),
      terminating,
      task('release', 9),
      T0 + 86_400_000,
      timing,
    );
    expect(d.free).toEqual([]);
    expect(d.keep).toEqual([]);
    expect(d.recheckAfter).toBe(300);
  });

  it('holds a value again when the live object still carries it after the commit window', () => {
    const early = decideSettle(record([], [1]), carrying(1), task('release'), T0 + 89_000, timing);
    expect(early.keep).toEqual([]);
    const late = decideSettle(record([], [1]), carrying(1), task('release'), T0 + 90_000, timing);
    expect(late.keep.map((c) => c.offset)).toEqual([1]);
    expect(late.recheckAfter).toBeUndefined();
  });

  it('frees the values of a CREATE that never appeared only after the commit window, and looks again before it closes', () => {
    const waiting = decideSettle(
      record([1], []),
      { present: false },
      task('create', 3),
      T0 + 80_000,
      timing,
    );
    expect(waiting.free).toEqual([]);
    expect(waiting.recheckAfter).toBe(10);
    const closed = decideSettle(
      record([1], [2]),
      { present: false },
      task('create', 4),
      T0 + 90_000,
      timing,
    );
    expect(closed.free.map((c) => c.offset)).toEqual([1, 2]);
    expect(decideSettle(record([1], []), carrying(1), task('create'), T0 + 90_000, timing)).toEqual(
      {
        free: [],
        keep: [],
      },
    );
  });

  it('never frees a value the object carries', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { maxLength: 8 }),
        fc.uniqueArray(fc.integer({ min: 41, max: 80 }), { maxLength: 8 }),
        fc.array(fc.integer({ min: 0, max: 80 }), { maxLength: 12 }),
        fc.boolean(),
        fc.constantFrom<SettleTask['reason']>('create', 'release'),
        fc.integer({ min: 0, max: 3_600_000 }),
        (held, given, carried, terminating, reason, elapsed) => {
          const reading = { ...carrying(...carried), terminating };
          const d = decideSettle(record(held, given), reading, task(reason), T0 + elapsed, timing);
          return d.free.every((c) => !carried.some((offset) => offset === c.offset));
        },
      ),
    );
  });

  it('looks at least every 20 s for ten minutes after the admission, then backs off to five minutes', () => {
    const young = 9 * 60_000;
    const old = 10 * 60_000;
    expect([0, 1, 2, 3, 30].map((a) => backoff(a, timing, young))).toEqual([10, 20, 20, 20, 20]);
    expect([3, 4, 5, 6, 30].map((a) => backoff(a, timing, old))).toEqual([80, 160, 300, 300, 300]);
  });

  it('frees a value a terminating object gave back within 30 s of the object going', () => {
    // Looks follow the decisions' own recheckAfter, from the first at delaySeconds; the object
    // goes at any second of its first ten minutes.
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 600 }),
        (goneAtS) => freedAfterRelease(timing.delaySeconds, goneAtS) - goneAtS <= 30,
      ),
    );
  });
});

describe('the settle schedule and section 11 bounds', () => {
  /** When decideSettle frees the values of a CREATE whose object never appears. */
  function freedNeverStored(delaySeconds: number): number {
    const schedule = settleTiming(delaySeconds);
    let at = delaySeconds;
    for (let attempt = 0; ; attempt++) {
      const d = decideSettle(
        record([1], []),
        { present: false },
        task('create', attempt),
        T0 + at * 1000,
        schedule,
      );
      if (d.free.length > 0) return at;
      at += d.recheckAfter ?? Number.NaN;
    }
  }

  /** The longest from a commit on a whole second to its value's freeing, over two minutes. */
  const worstAfterCommit = (delaySeconds: number) =>
    Math.max(...Array.from({ length: 121 }, (_, c) => freedAfterRelease(delaySeconds, c) - c));

  it('keeps both promises for every delay the config allows, as settleBounds computes', () => {
    for (let delay = 1; delay <= MAX_SETTLE_DELAY_SECONDS; delay++) {
      expect(worstAfterCommit(delay)).toBeLessThanOrEqual(FREED_AFTER_COMMIT_SECONDS);
      expect(freedNeverStored(delay)).toBeLessThanOrEqual(FREED_AFTER_NEVER_STORED_SECONDS);
      // The schedule's bound is the worst a commit can wait: one on a whole second just after a
      // look waits it less a second, and one at the review waits the whole first delay.
      const bounds = settleBounds(settleTiming(delay));
      expect([0, 1]).toContain(bounds.afterCommit - worstAfterCommit(delay));
      expect(bounds.neverStored).toBe(freedNeverStored(delay));
    }
  });

  it('breaks the 30 s promise one second past the cap, which the config refuses', () => {
    const past = MAX_SETTLE_DELAY_SECONDS + 1;
    expect(worstAfterCommit(past)).toBeGreaterThan(FREED_AFTER_COMMIT_SECONDS);
    expect(() => parseConfig({ settle: { delaySeconds: past } })).toThrow(
      `settle.delaySeconds: ${past} is out of range 1-${MAX_SETTLE_DELAY_SECONDS}: `,
    );
  });
});

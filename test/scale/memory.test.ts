import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { demandBuffer, riseHorizonMs } from '../../shared/scale/demand.js';
import { PROVISION_SAMPLES, rememberPass, withArrivals } from '../../shared/scale/memory.js';
import { removalsInLastHour } from '../../shared/scale/plan.js';
import { riseWithin, withPeak } from '../../shared/scale/rise.js';
import { EMPTY_SCALE_MEMORY, type ScaleMemory } from '../../shared/scale/store.js';
import { DynamoScaleMemory } from '../../shared/store/dynamo-scale-memory.js';
import { twoPasses } from '../contracts/scale-memory.contract.js';
import { freshTable } from '../support/dynamo.js';
import { T0 } from './builders.js';

const MINUTE = 60_000;
const WINDOW = 15 * MINUTE;
const DAY = 24 * 60 * MINUTE;
const WINDOWS = {
  demandWindowMs: WINDOW,
  burstWindowMs: 24 * 60 * MINUTE,
  defaultProvisionMs: 3 * MINUTE,
  reactionMs: MINUTE,
};
const quiet = { readyNodes: 3, surplus: false, removalsStarted: 0 };

describe('the scale memory', () => {
  it('counts the game servers created since the last pass, from the second pass on, within the window', () => {
    const first = withArrivals(EMPTY_SCALE_MEMORY, [T0 - 5 * MINUTE, T0 - MINUTE], T0, WINDOWS);
    expect(first.arrivals).toEqual([]);
    expect(first.previousPassAtMs).toBeUndefined();
    const second = withArrivals(
      first,
      [T0 - MINUTE, T0 + 10_000, T0 + 50_000],
      T0 + MINUTE,
      WINDOWS,
    );
    expect(second.arrivals).toEqual([{ atMs: T0 + MINUTE, count: 2 }]);
    expect(second.previousPassAtMs).toBe(T0);
    const later = withArrivals(second, [], T0 + MINUTE + WINDOW, WINDOWS);
    expect(later.arrivals).toEqual([{ atMs: T0 + MINUTE + WINDOW, count: 0 }]);
  });

  it('keeps the surplus start while it lasts, and forgets it when it ends', () => {
    const start = rememberPass(EMPTY_SCALE_MEMORY, { ...quiet, nowMs: T0, surplus: true });
    const still = rememberPass(start, { ...quiet, nowMs: T0 + MINUTE, surplus: true });
    expect(still.surplusSinceMs).toBe(T0);
    expect(
      rememberPass(still, { ...quiet, nowMs: T0 + 2 * MINUTE }).surplusSinceMs,
    ).toBeUndefined();
  });

  it('times provisioning from the growth asked to its last node Ready, keeping the last few', () => {
    let memory = rememberPass(EMPTY_SCALE_MEMORY, { ...quiet, nowMs: T0, grewTo: 5 });
    memory = rememberPass(memory, { ...quiet, nowMs: T0 + MINUTE, readyNodes: 4 });
    expect(memory.provisionMs).toEqual([]);
    memory = rememberPass(memory, {
      ...quiet,
      nowMs: T0 + 4 * MINUTE,
      readyNodes: 5,
      lastReadyAtMs: T0 + 3 * MINUTE + 20_000,
    });
    expect(memory.provisionMs).toEqual([200_000]);
    expect(memory.growth).toBeUndefined();
    for (let i = 0; i < PROVISION_SAMPLES + 2; i++) {
      memory = rememberPass(memory, { ...quiet, nowMs: T0 + i, grewTo: 6 });
      memory = rememberPass(memory, { ...quiet, nowMs: T0 + i + MINUTE, readyNodes: 6 });
    }
    expect(memory.provisionMs).toHaveLength(PROVISION_SAMPLES);
  });

  it('times a chain of asks from the latest: its nodes are the last to come', () => {
    let memory = rememberPass(EMPTY_SCALE_MEMORY, { ...quiet, nowMs: T0, grewTo: 5 });
    memory = rememberPass(memory, { ...quiet, nowMs: T0 + MINUTE, readyNodes: 3, grewTo: 6 });
    memory = rememberPass(memory, {
      ...quiet,
      nowMs: T0 + 4 * MINUTE,
      readyNodes: 6,
      lastReadyAtMs: T0 + 4 * MINUTE,
    });
    expect(memory.provisionMs).toEqual([3 * MINUTE]);
  });

  it('counts the removals of the last hour only', () => {
    let memory = rememberPass(EMPTY_SCALE_MEMORY, { ...quiet, nowMs: T0, removalsStarted: 2 });
    memory = rememberPass(memory, { ...quiet, nowMs: T0 + 30 * MINUTE, removalsStarted: 1 });
    expect(removalsInLastHour(memory, T0 + 59 * MINUTE)).toBe(3);
    expect(removalsInLastHour(memory, T0 + 61 * MINUTE)).toBe(1);
  });
});

describe('the burst window', () => {
  it('keeps the busiest pass of the window, and the one before the latest pass', () => {
    const at = (minutes: number) => T0 + minutes * MINUTE;
    const created = (minutes: number, count: number) =>
      Array.from({ length: count }, () => at(minutes) - 1);
    let memory = withArrivals(EMPTY_SCALE_MEMORY, [], at(0), WINDOWS);
    memory = withArrivals(memory, created(1, 30), at(1), WINDOWS);
    memory = withArrivals(memory, created(2, 5), at(2), WINDOWS);
    expect(memory.burstPeaks.map((e) => e.count)).toEqual([30, 5]);
    expect(memory.priorPeak).toBe(30);
    memory = withArrivals(memory, created(3, 12), at(3), WINDOWS);
    // 12 ends the reign of 5, not of 30.
    expect(memory.burstPeaks.map((e) => e.count)).toEqual([30, 12]);
    // A day later the 30 has aged out: 12 is the busiest left.
    memory = withArrivals(memory, [], at(1 + 24 * 60), WINDOWS);
    expect(memory.priorPeak).toBe(12);
    expect(memory.burstPeaks.map((e) => e.count)).toEqual([12, 0]);
  });
});

describe('the rise of game servers', () => {
  const at = (minutes: number) => T0 + minutes * MINUTE;
  /** `level` game servers at minute `m`, made `age` minutes earlier. */
  const level = (count: number, m: number) => Array.from({ length: count }, () => at(m) - 1);
  const passes = (levels: number[]) =>
    levels.reduce((memory, count, m) => withArrivals(memory, level(count, m), at(m), WINDOWS), {
      ...EMPTY_SCALE_MEMORY,
    } as ScaleMemory);

  it('samples the level and keeps the largest rise within a horizon, net of sessions ending', () => {
    // Horizon: 3 min provisioning + a 60 s pass. 50 → 80 → 70 → 90: the rise within 4 min of
    // the lowest level is 40 (50 → 90), not the arrivals (which the level does not know).
    const memory = passes([50, 80, 70, 90]);
    expect(memory.levels?.map((e) => e.count)).toEqual([50, 80, 70, 90]);
    expect(memory.risePeaks?.[0]?.count).toBe(40);
    // A steady level rises by nothing, whatever comes and goes.
    expect(passes([60, 60, 60, 60]).risePeaks?.[0]?.count).toBe(0);
  });

  it('measures a rise only within the horizon', () => {
    // 10 at minute 0, then 30 from minute 1: at minute 5, minute 0 is past the 4 min horizon.
    const memory = passes([10, 30, 30, 30, 30, 30]);
    expect(memory.risePeaks?.map((e) => e.count)).toEqual([20, 0]);
    expect(riseWithin([{ atMs: at(0), count: 10 }], 50, at(5), 4 * MINUTE)).toBe(0);
    expect(riseWithin([{ atMs: at(0), count: 10 }], 50, at(4), 4 * MINUTE)).toBe(40);
  });

  it('keeps the window maximum in few entries, each ending the reign of smaller older ones', () => {
    const peaks = [
      { atMs: at(0), count: 30 },
      { atMs: at(1), count: 5 },
    ];
    expect(withPeak(peaks, { atMs: at(2), count: 12 }, at(2), DAY).map((e) => e.count)).toEqual([
      30, 12,
    ]);
    expect(withPeak(peaks, { atMs: at(2), count: 40 }, at(2), DAY).map((e) => e.count)).toEqual([
      40,
    ]);
    expect(withPeak(peaks, undefined, at(0) + DAY, DAY).map((e) => e.count)).toEqual([5]);
  });

  it("holds yesterday's tournament before it comes, and keeps only what no forecast saw", () => {
    // A level of 20 a minute, 60 from 20:00 to 20:10 every evening; T0 is midnight.
    const evening = (m: number) => {
      const ofDay = m % (24 * 60);
      return ofDay >= 20 * 60 && ofDay < 20 * 60 + 10 ? 60 : 20;
    };
    const days = (from: number, to: number, memory: ScaleMemory = EMPTY_SCALE_MEMORY) => {
      let out = memory;
      for (let m = from; m < to; m++) out = withArrivals(out, level(evening(m), m), at(m), WINDOWS);
      return out;
    };
    const policy = { followDemand: true, bufferSlots: 10, passIntervalMs: MINUTE, ...WINDOWS };
    // The first evening is a surprise: its rise of 40 is the reserve for the day after.
    const first = days(0, 21 * 60);
    expect(first.risePeaks?.[0]?.count).toBe(40);
    expect(demandBuffer(first, policy).forecast).toBe(0);
    // A day on, the profile forecasts it ahead of 20:00, on top of what the reserve holds.
    const before = days(21 * 60, (24 + 19) * 60 + 55, first);
    const held = demandBuffer(before, policy);
    expect(held.forecast).toBe(40);
    expect(held.slots).toBe(held.riseReserve + 40);
    // The evening it forecast is no surprise: once the first has aged out, no reserve stands.
    const after = days((24 + 19) * 60 + 55, (24 + 21) * 60, before);
    expect(after.risePeaks?.[0]?.count).toBe(0);
    expect(demandBuffer(after, policy).slots).toBe(10);
  });

  it('never keeps a rise above the level, and is the window maximum (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(500), { minLength: 1, maxLength: 40 }), (levels) => {
        const memory = passes(levels);
        const reserve = memory.risePeaks?.[0]?.count ?? 0;
        let expected = 0;
        levels.forEach((count, j) => {
          for (let i = Math.max(0, j - 4); i < j; i++) {
            expected = Math.max(expected, count - (levels[i] ?? 0));
          }
        });
        expect(reserve).toBe(expected);
        expect(reserve).toBeLessThanOrEqual(Math.max(...levels));
      }),
    );
  });
});

describe('the demand buffer', () => {
  const policy = {
    followDemand: true,
    bufferSlots: 10,
    passIntervalMs: MINUTE,
    defaultProvisionMs: 4 * MINUTE,
    reactionMs: MINUTE,
  };
  const memoryOf = (counts: number[], priorPeak: number, rise: number) => ({
    ...EMPTY_SCALE_MEMORY,
    arrivals: counts.map((count, i) => ({ atMs: T0 + i * MINUTE, count })),
    burstPeaks: [{ atMs: T0, count: Math.max(priorPeak, ...counts) }],
    priorPeak,
    risePeaks: [{ atMs: T0, count: rise }],
  });

  it('is the configured buffer while the game servers rise by few, and never less', () => {
    expect(demandBuffer(EMPTY_SCALE_MEMORY, policy).slots).toBe(10);
    expect(demandBuffer(memoryOf([1], 1, 4), policy).slots).toBe(10);
  });

  it("keeps the day's largest rise within a horizon, not the arrivals of one", () => {
    // 6 a minute arrive (30 over a provisioning time and a pass), but the level rose by 24 at most.
    const memory = memoryOf([4, 8, 6], 30, 24);
    expect(demandBuffer(memory, policy)).toEqual({
      slots: 24,
      arrivalsPerSecond: 0.1,
      riseReserve: 24,
      forecast: 0,
      wave: false,
      provisionSeconds: 240,
      observed: false,
    });
    expect(demandBuffer(memory, { ...policy, followDemand: false }).slots).toBe(10);
    // The horizon is the longest observed provisioning time and the reaction.
    const observed = { ...memory, provisionMs: [2 * MINUTE, 3 * MINUTE] };
    expect(riseHorizonMs(observed, policy)).toBe(4 * MINUTE);
    expect(riseHorizonMs(observed, { ...policy, reactionMs: 10_000 })).toBe(190_000);
  });

  it('follows a wave at once: a pass more than twice anything the day saw', () => {
    // 90 after a day whose busiest pass was 30: 90 a minute over 4 minutes and a pass, and the
    // day's largest rise on top.
    const wave = demandBuffer(memoryOf([6, 6, 90], 30, 25), policy);
    expect(wave.wave).toBe(true);
    expect(wave.slots).toBe(Math.ceil(1.5 * 300 + 25));
    // 60 is a burst like the day's: the reserve covers it.
    expect(demandBuffer(memoryOf([6, 6, 60], 30, 25), policy).wave).toBe(false);
  });
});

describe('DynamoScaleMemory', () => {
  // What every ScaleMemoryStore answers is test/contracts/scale-memory.contract.ts.
  it('keeps one memory per cluster', async () => {
    const { client, tableName } = await freshTable();
    const a = new DynamoScaleMemory({ client, tableName, cluster: 'games-a' });
    const b = new DynamoScaleMemory({ client, tableName, cluster: 'games-b' });
    await a.save(twoPasses);
    expect(await b.load()).toEqual(EMPTY_SCALE_MEMORY);
    expect(await a.load()).toEqual(twoPasses);
  });
});

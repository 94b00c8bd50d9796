import { describe, expect, it } from 'vitest';
import { demandBuffer } from '../../shared/scale/demand.js';
import {
  EMPTY_SCALE_MEMORY,
  PROVISION_SAMPLES,
  rememberPass,
  removalsInLastHour,
  withArrivals,
} from '../../shared/scale/memory.js';
import { DynamoScaleMemory } from '../../shared/store/dynamo-scale-memory.js';
import { freshTable } from '../support/dynamo.js';
import { T0 } from './builders.js';

const MINUTE = 60_000;
const WINDOW = 15 * MINUTE;
const WINDOWS = { demandWindowMs: WINDOW, burstWindowMs: 24 * 60 * MINUTE };
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

describe('the demand buffer', () => {
  const policy = {
    followDemand: true,
    bufferSlots: 10,
    passIntervalMs: MINUTE,
    defaultProvisionMs: 4 * MINUTE,
  };
  const memoryOf = (counts: number[], priorPeak: number, peak: number) => ({
    ...EMPTY_SCALE_MEMORY,
    arrivals: counts.map((count, i) => ({ atMs: T0 + i * MINUTE, count })),
    burstPeaks: [{ atMs: T0, count: peak }],
    priorPeak,
  });

  it('is the configured buffer while arrivals are few, and never less', () => {
    expect(demandBuffer(EMPTY_SCALE_MEMORY, policy).slots).toBe(10);
    expect(demandBuffer(memoryOf([1], 1, 1), policy).slots).toBe(10);
  });

  it("covers the mean over a provisioning time and a pass, and the day's largest burst on top", () => {
    // A mean of 6 a minute over 4 minutes and a pass (30), and a burst of 30 seen today (+24).
    const memory = memoryOf([4, 8, 6], 30, 30);
    expect(demandBuffer(memory, policy)).toEqual({
      slots: 54,
      arrivalsPerSecond: 0.1,
      burstReserve: 24,
      wave: false,
      provisionSeconds: 240,
      observed: false,
    });
    // Observed provisioning replaces the configured one: the longest of the samples.
    const observed = { ...memory, provisionMs: [2 * MINUTE, 3 * MINUTE] };
    expect(demandBuffer(observed, policy).slots).toBe(48);
    expect(demandBuffer(observed, { ...policy, followDemand: false }).slots).toBe(10);
  });

  it('follows a wave at once: a pass more than twice anything the day saw', () => {
    // 90 after a day whose busiest pass was 30: the rate is 90 a minute, not the mean.
    const wave = demandBuffer(memoryOf([6, 6, 90], 30, 90), policy);
    expect(wave.wave).toBe(true);
    expect(wave.slots).toBe(Math.ceil(1.5 * 300 + (90 - 34)));
    // 60 is a burst like the day's: the mean and the reserve cover it.
    expect(demandBuffer(memoryOf([6, 6, 60], 30, 60), policy).wave).toBe(false);
  });
});

describe('DynamoScaleMemory', () => {
  it('answers an empty memory before the first save, then what was saved, per cluster', async () => {
    const { client, tableName } = await freshTable();
    const a = new DynamoScaleMemory({ client, tableName, cluster: 'games-a' });
    const b = new DynamoScaleMemory({ client, tableName, cluster: 'games-b' });
    expect(await a.load()).toEqual(EMPTY_SCALE_MEMORY);
    const saved = rememberPass(withArrivals(EMPTY_SCALE_MEMORY, [], T0, WINDOWS), {
      ...quiet,
      nowMs: T0,
      surplus: true,
      grewTo: 4,
      removalsStarted: 1,
    });
    await a.save(saved);
    expect(await a.load()).toEqual(saved);
    expect(await b.load()).toEqual(EMPTY_SCALE_MEMORY);
  });
});

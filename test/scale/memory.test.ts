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
const quiet = { readyNodes: 3, surplus: false, removalsStarted: 0 };

describe('the scale memory', () => {
  it('counts the game servers created since the last pass, from the second pass on, within the window', () => {
    const first = withArrivals(EMPTY_SCALE_MEMORY, [T0 - 5 * MINUTE, T0 - MINUTE], T0, WINDOW);
    expect(first.arrivals).toEqual([]);
    expect(first.previousPassAtMs).toBeUndefined();
    const second = withArrivals(
      first,
      [T0 - MINUTE, T0 + 10_000, T0 + 50_000],
      T0 + MINUTE,
      WINDOW,
    );
    expect(second.arrivals).toEqual([{ atMs: T0 + MINUTE, count: 2 }]);
    expect(second.previousPassAtMs).toBe(T0);
    const later = withArrivals(second, [], T0 + MINUTE + WINDOW, WINDOW);
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

describe('the demand buffer', () => {
  const policy = {
    followDemand: true,
    bufferSlots: 10,
    passIntervalMs: MINUTE,
    defaultProvisionMs: 4 * MINUTE,
  };

  it('is the configured buffer while arrivals are few, and never less', () => {
    expect(demandBuffer(EMPTY_SCALE_MEMORY, policy).slots).toBe(10);
    const few = { ...EMPTY_SCALE_MEMORY, arrivals: [{ atMs: T0, count: 1 }] };
    expect(demandBuffer(few, policy).slots).toBe(10);
  });

  it('covers the busiest pass of the window over a provisioning time and a pass', () => {
    const memory = {
      ...EMPTY_SCALE_MEMORY,
      arrivals: [
        { atMs: T0, count: 6 },
        { atMs: T0 + MINUTE, count: 12 },
      ],
    };
    // 12 a minute over the configured 4 minutes and one pass: 60.
    expect(demandBuffer(memory, policy)).toEqual({
      slots: 60,
      arrivalsPerSecond: 0.2,
      provisionSeconds: 240,
      observed: false,
    });
    // Observed provisioning replaces the configured one: the longest of the samples.
    const observed = { ...memory, provisionMs: [2 * MINUTE, 3 * MINUTE] };
    expect(demandBuffer(observed, policy).slots).toBe(48);
    expect(demandBuffer(observed, { ...policy, followDemand: false }).slots).toBe(10);
  });
});

describe('DynamoScaleMemory', () => {
  it('answers an empty memory before the first save, then what was saved, per cluster', async () => {
    const { client, tableName } = await freshTable();
    const a = new DynamoScaleMemory({ client, tableName, cluster: 'games-a' });
    const b = new DynamoScaleMemory({ client, tableName, cluster: 'games-b' });
    expect(await a.load()).toEqual(EMPTY_SCALE_MEMORY);
    const saved = rememberPass(withArrivals(EMPTY_SCALE_MEMORY, [], T0, WINDOW), {
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

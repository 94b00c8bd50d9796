import { describe, expect, it } from 'vitest';
import { arrivals, MAIN_SCENARIO, MINUTE, SECOND } from '../../bench/scale/day.js';
import {
  clairvoyantNodeHours,
  nodeHourFloors,
  packedNodeHours,
  runningPerStep,
} from '../../bench/scale/floor.js';
import { gameSlotsPerNode } from '../../bench/scale/pending.js';
import type { Arrival } from '../../sim/arrivals.js';

const at = (...seconds: number[]): Arrival[] =>
  seconds.map((s) => ({ atMs: s * SECOND, sessionMs: 10 * MINUTE }));

describe('runningPerStep', () => {
  const sc = { ...MAIN_SCENARIO, durationMs: 2 * 60 * MINUTE };

  it('counts a game from the step it starts for its whole session, as the day runs it', () => {
    const running = runningPerStep(sc, at(0, 5, 600));
    expect(running[0]).toBe(1);
    expect(running[1]).toBe(2);
    // The first game ends at 600 s as the third starts; the second started at 10 s, ends at 610 s.
    expect(running[60]).toBe(2);
    expect(running[61]).toBe(1);
    expect(running[121]).toBe(0);
  });

  it('ends a game that arrived between steps a whole session after its start', () => {
    // Arrives at 5 s, starts at 10 s, plays 601 s: still running at 610 s, gone at 620 s.
    const running = runningPerStep(sc, [{ atMs: 5 * SECOND, sessionMs: 601 * SECOND }]);
    expect(running[61]).toBe(1);
    expect(running[62]).toBe(0);
  });
});

describe('the clairvoyant schedule', () => {
  // 10 s steps and a 180 s boot: 18 steps.
  const sc = { ...MAIN_SCENARIO, scale: { ...MAIN_SCENARIO.scale, minNodes: 0 } };
  const slots = gameSlotsPerNode(sc);
  const hours = (steps: number) => Math.round(((steps * 10) / 3600) * 100) / 100;

  it('pays a boot before every node it adds, but not for one the day starts with', () => {
    const pods = [...Array(100).fill(0), ...Array(100).fill(slots)];
    expect(clairvoyantNodeHours(sc, pods)).toBe(hours(100 + 18));
    expect(clairvoyantNodeHours(sc, [...Array(100).fill(slots)])).toBe(hours(100));
    expect(packedNodeHours(sc, pods)).toBe(hours(100));
  });

  it('keeps a node over a dip shorter than a boot, and boots again after a longer one', () => {
    const dip = (steps: number) => [
      ...Array(50).fill(slots),
      ...Array(steps).fill(0),
      ...Array(50).fill(slots),
    ];
    expect(clairvoyantNodeHours(sc, dip(10))).toBe(hours(110));
    expect(clairvoyantNodeHours(sc, dip(40))).toBe(hours(100 + 18));
  });

  it('counts each node apart: the second node of a peak pays its own boot', () => {
    const pods = [...Array(50).fill(slots), ...Array(50).fill(slots + 1), ...Array(50).fill(slots)];
    expect(clairvoyantNodeHours(sc, pods)).toBe(hours(150 + 50 + 18));
    // Free slots kept are slots needed.
    expect(clairvoyantNodeHours(sc, Array(50).fill(slots), 1)).toBe(hours(100));
  });
});

describe('nodeHourFloors', () => {
  it('orders the main day: packed, then clairvoyant, then no foresight', () => {
    const floors = nodeHourFloors(MAIN_SCENARIO, arrivals(MAIN_SCENARIO));
    expect(floors.packed).toBeLessThan(floors.clairvoyant);
    expect(floors.clairvoyant).toBeLessThan(floors.noForesight.nodeHours);
    expect(floors.noForesight.burst).toBe(MAIN_SCENARIO.bursts.maxSize);
    const running = runningPerStep(MAIN_SCENARIO, arrivals(MAIN_SCENARIO));
    expect(floors.noForesight.nodeHours).toBeGreaterThanOrEqual(
      packedNodeHours(MAIN_SCENARIO, running, MAIN_SCENARIO.bursts.maxSize),
    );
  });
});

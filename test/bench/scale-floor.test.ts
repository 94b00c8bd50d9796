import { describe, expect, it } from 'vitest';
import { arrivals, MAIN_SCENARIO, MINUTE, SECOND } from '../../bench/scale/day.js';
import { largestRise, nodeHourFloors, runningPerStep } from '../../bench/scale/floor.js';
import type { Arrival } from '../../sim/arrivals.js';

const at = (...seconds: number[]): Arrival[] =>
  seconds.map((s) => ({ atMs: s * SECOND, sessionMs: 10 * MINUTE }));

describe('largestRise', () => {
  it('is the most the count grows within the window, net of what ends', () => {
    expect(largestRise([5, 7, 6, 9, 2, 4], 2)).toBe(3);
    expect(largestRise([5, 7, 6, 9, 2, 4], 3)).toBe(4);
    expect(largestRise([9, 8, 7], 2)).toBe(0);
  });
});

describe('nodeHourFloors', () => {
  const sc = { ...MAIN_SCENARIO, durationMs: 2 * 60 * MINUTE };
  const burstOf40 = at(...Array.from({ length: 40 }, () => 30));

  it('counts running games per step from arrival to session end', () => {
    const running = runningPerStep(sc, at(0, 5, 600));
    expect(running[0]).toBe(1);
    expect(running[1]).toBe(2);
    // The first game ends at 600 s as the third starts; the second ends at 605 s.
    expect(running[60]).toBe(2);
    expect(running[61]).toBe(1);
    expect(running[121]).toBe(0);
  });

  it('packs 37 games a node and keeps minNodes', () => {
    // 40 games at 30 s for 10 minutes: two nodes then, one (minNodes) the rest of the 2 h.
    const floors = nodeHourFloors(sc, burstOf40);
    expect(floors.packed).toBe(2.17);
    expect(floors.largestRise).toBe(40);
    // 40 running + 40 free = three nodes for 10 minutes, then 40 free alone = two.
    expect(floors.packedWithFree(40)).toBe(4.17);
  });

  it('finds the most free slots a budget leaves room for', () => {
    const floors = nodeHourFloors(sc, burstOf40);
    // 34 free: 74 slots = two nodes during the burst, one after; 35 free needs a second node after.
    expect(floors.freeSlotsWithin(2.17)).toBe(34);
    expect(floors.freeSlotsWithin(floors.packed - 0.01)).toBe(-1);
  });

  it('leaves the main day less room under 0.9 x 110.51 node-hours than its largest rise', () => {
    const floors = nodeHourFloors(MAIN_SCENARIO, arrivals(MAIN_SCENARIO));
    expect(floors.packed).toBeLessThan(99.46);
    expect(floors.freeSlotsWithin(99.46)).toBeLessThan(floors.largestRise);
  });
});

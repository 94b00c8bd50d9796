import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import {
  dayOf,
  floorFor,
  GROUP_MEMORY_DAYS,
  groupPeak,
  heldFloor,
  hourOf,
  hourPeak,
  openingFor,
  SHORTAGE_MEMORY_MS,
  withUse,
} from '../../shared/eni/group-use.js';
import { type IpRecord, NO_GROUP_USE } from '../../shared/eni/model.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { planPool, poolPolicy } from '../../shared/eni/policy.js';
import { assignIp } from '../../shared/eni/service.js';
import { eniWorld, SUBNET_ID } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';

const DAY = 86_400_000;
const MONDAY = Date.parse('2026-03-02T12:00:00Z');

describe('what a node group needed', () => {
  it("raises today's peak, and changes nothing when the pass saw no more", () => {
    const first = withUse(NO_GROUP_USE, new Map([['c5.large', 9]]), MONDAY);
    expect(first.byType['c5.large']?.map(({ day, inUse }) => ({ day, inUse }))).toEqual([
      { day: dayOf(MONDAY), inUse: 9 },
    ]);
    expect(withUse(first, new Map([['c5.large', 7]]), MONDAY + 60_000)).toBe(first);
    const higher = withUse(first, new Map([['c5.large', 12]]), MONDAY + 3_600_000);
    expect(higher.byType['c5.large']?.map((p) => p.inUse)).toEqual([12]);
  });

  it('keeps the most of each UTC hour beside the day peak', () => {
    const HOUR = 3_600_000;
    const night = MONDAY - 10 * HOUR; // 02:00
    let use = withUse(NO_GROUP_USE, new Map([['c5.4xlarge', 30]]), night);
    use = withUse(use, new Map([['c5.4xlarge', 64]]), MONDAY);
    // A quieter hour later in the day is a change too: its own hour's most rose.
    const quiet = withUse(use, new Map([['c5.4xlarge', 20]]), MONDAY + 6 * HOUR);
    expect(quiet).not.toBe(use);
    const [peak] = quiet.byType['c5.4xlarge'] ?? [];
    expect(peak?.inUse).toBe(64);
    expect(peak?.byHour?.[hourOf(night)]).toBe(30);
    expect(peak?.byHour?.[hourOf(MONDAY)]).toBe(64);
    expect(peak?.byHour?.[hourOf(MONDAY + 6 * HOUR)]).toBe(20);
    // From the next day on: the hour's most, and the day's at every other time.
    expect(hourPeak(quiet, 'c5.4xlarge', night + DAY)).toBe(30);
    expect(hourPeak(quiet, 'c5.4xlarge', MONDAY + DAY)).toBe(64);
    expect(hourPeak(quiet, 'c5.4xlarge', night)).toBe(0);
  });

  it('counts a day recorded without its hours as its peak in every hour', () => {
    const use = { byType: { 'm5.xlarge': [{ day: dayOf(MONDAY), inUse: 16 }] }, version: 3 };
    expect(hourPeak(use, 'm5.xlarge', MONDAY + DAY)).toBe(16);
  });

  it('counts a peak from the next day, for a week', () => {
    const use = withUse(NO_GROUP_USE, new Map([['m5.xlarge', 16]]), MONDAY);
    // Today's peak is what the day is doing, not what it will need.
    expect(groupPeak(use, 'm5.xlarge', MONDAY)).toBe(0);
    expect(groupPeak(use, 'm5.xlarge', MONDAY + DAY)).toBe(16);
    expect(groupPeak(use, 'm5.xlarge', MONDAY + (GROUP_MEMORY_DAYS - 1) * DAY)).toBe(16);
    expect(groupPeak(use, 'm5.xlarge', MONDAY + GROUP_MEMORY_DAYS * DAY)).toBe(0);
    expect(groupPeak(use, 'c5.large', MONDAY + DAY)).toBe(0);
  });

  it('keeps the highest of the remembered days and forgets the rest', () => {
    let use = NO_GROUP_USE;
    for (const [d, inUse] of [
      [0, 30],
      [1, 50],
      [2, 20],
    ] as const) {
      use = withUse(use, new Map([['c5.4xlarge', inUse]]), MONDAY + d * DAY);
    }
    expect(groupPeak(use, 'c5.4xlarge', MONDAY + 3 * DAY)).toBe(50);
    // A week after the 50, only the 20 is left.
    const later = withUse(use, new Map(), MONDAY + (GROUP_MEMORY_DAYS + 1) * DAY);
    expect(later.byType['c5.4xlarge']?.map(({ day, inUse }) => ({ day, inUse }))).toEqual([
      { day: dayOf(MONDAY) + 2, inUse: 20 },
    ]);
    expect(groupPeak(later, 'c5.4xlarge', MONDAY + (GROUP_MEMORY_DAYS + 1) * DAY)).toBe(20);
  });

  it('holds no floor within the shortage memory of a subnet mark', () => {
    expect(heldFloor(48, MONDAY - SHORTAGE_MEMORY_MS, MONDAY)).toBe(48);
    expect(heldFloor(48, MONDAY - SHORTAGE_MEMORY_MS + 1, MONDAY)).toBe(0);
    expect(heldFloor(undefined, 0, MONDAY)).toBe(0);
  });

  it("opens a pool at its hour's most plus minIdle, at most the floor", () => {
    expect(openingFor(40, 66, 2)).toBe(42);
    expect(openingFor(64, 66, 2)).toBe(66);
    expect(openingFor(70, 66, 2)).toBe(66);
    // An hour nothing was learned of opens at the floor; no floor, no opening.
    expect(openingFor(0, 66, 2)).toBe(66);
    expect(openingFor(40, 0, 2)).toBe(0);
  });

  it('puts minIdle on top of a peak, and no floor without one', () => {
    expect(floorFor(0, 2)).toBe(0);
    expect(floorFor(16, 2)).toBe(18);
  });
});

const policy = poolPolicy(parseConfig({}).eni);
const c54xl = { maxInterfaces: 8, ipv4PerInterface: 30, prefixDelegation: true, maxPods: 110 };
const primary = { eniId: 'eni-0', createdAt: 0, primary: true as const };

/** A /28 of `eni-0` with `busy` of its addresses held by pods. */
const prefixOf = (k: number, busy: number, releasedAt = 0): IpRecord[] =>
  Array.from({ length: 16 }, (_, i) => ({
    kind: 'ip' as const,
    ip: `10.0.${k}.${i}`,
    eniId: 'eni-0',
    prefix: `10.0.${k}.0/28`,
    state: i < busy ? ('assigned' as const) : ('free' as const),
    ...(i < busy ? { pod: `g/p${k}-${i}` } : {}),
    sticky: false,
    releasedAt,
    createdAt: 0,
    version: 1,
  }));

const plan = (ips: IpRecord[], floor: number, growByPrefix = true, opening?: number) =>
  planPool({
    limits: c54xl,
    enis: [primary],
    ips,
    policy,
    now: 10 * DAY,
    draining: false,
    mayGrow: true,
    growByPrefix,
    floor,
    ...(opening === undefined ? {} : { opening }),
  });

describe('a pool with a floor', () => {
  it("grows to its group's day in the one call that falls due", () => {
    const grown = plan([], 66);
    expect(grown.assign).toEqual([{ eniId: 'eni-0', unit: 'prefix', count: 5 }]);
    // Should the subnet have no free /28, single addresses without the floor: maxIdle of them.
    expect(grown.fallback?.assign).toEqual([{ eniId: 'eni-0', unit: 'ip', count: policy.maxIdle }]);
    // Without the floor, one /28 for the batch.
    expect(plan([], 0).assign).toEqual([{ eniId: 'eni-0', unit: 'prefix', count: 1 }]);
  });

  it('opens at its opening, and its next growth that falls due goes to the floor', () => {
    expect(plan([], 66, true, 42).assign).toEqual([{ eniId: 'eni-0', unit: 'prefix', count: 3 }]);
    // An opening above the floor opens at the floor.
    expect(plan([], 66, true, 90).assign).toEqual([{ eniId: 'eni-0', unit: 'prefix', count: 5 }]);
    // 48 held, 47 in use: due, and to the floor in one call whatever the opening.
    const opened = [...prefixOf(0, 16), ...prefixOf(1, 16), ...prefixOf(2, 15)];
    expect(plan(opened, 66, true, 42).assign).toEqual([
      { eniId: 'eni-0', unit: 'prefix', count: 2 },
    ]);
    // 48 held, 30 in use: nothing due yet.
    const quiet = [...prefixOf(0, 16), ...prefixOf(1, 14), ...prefixOf(2, 0)];
    expect(plan(quiet, 66, true, 42).assign).toEqual([]);
  });

  it('keeps no floor while the pool grows by single addresses', () => {
    expect(plan([], 66, false).assign).toEqual([
      { eniId: 'eni-0', unit: 'ip', count: policy.maxIdle },
    ]);
  });

  it('at its floor grows only when nothing is ready', () => {
    // 80 addresses, 79 held: one ready, below minIdle, and no growth.
    const one = [...prefixOf(0, 16), ...prefixOf(1, 16), ...prefixOf(2, 16), ...prefixOf(3, 16)];
    expect(plan([...one, ...prefixOf(4, 15)], 66).assign).toEqual([]);
    expect(plan([...one, ...prefixOf(4, 15)], 0).assign).not.toEqual([]);
    // All 80 held: it grows.
    expect(plan([...one, ...prefixOf(4, 16)], 66).assign).not.toEqual([]);
  });

  it('is never trimmed below, however long its addresses rested', () => {
    const rested = [0, 1, 2, 3, 4].flatMap((k) => prefixOf(k, k === 0 ? 4 : 0, 1));
    const trimmed = plan(rested, 34).unassign.flatMap((u) => u.ips);
    expect(trimmed).toHaveLength(32);
    expect(80 - trimmed.length).toBeGreaterThanOrEqual(34);
    expect(plan(rested, 0).unassign.flatMap((u) => u.ips)).toHaveLength(64);
  });
});

describe('the pass', () => {
  /** A prefix-mode world whose pass saw one c5.4xlarge node run 40 pods. */
  async function busyDay() {
    const world = eniWorld({ eni: { mode: 'prefix' } });
    world.addNode('node-a', 'c5.4xlarge');
    await runEniPass(world.deps);
    for (let i = 0; i < 40; i++) {
      world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` });
    }
    await runEniPass(world.deps);
    return world;
  }

  it("learns a node group's peak and gives the next day's new node its floor in one call", async () => {
    const world = await busyDay();
    const learned = await world.store.groupUse();
    expect(groupPeak(learned, 'c5.4xlarge', world.clock.now + DAY)).toBe(40);

    world.clock.now += DAY;
    world.addNode('node-b', 'c5.4xlarge');
    const before = world.ec2.calls.length;
    await runEniPass(world.deps);
    expect((await world.store.getPool('node-b'))?.floor).toBe(40 + policy.minIdle);
    const assigns = world.ec2.calls
      .slice(before)
      .filter((call) => call.action === 'AssignPrivateIpAddresses');
    expect(assigns).toHaveLength(1);
    const state = await world.store.loadNode('node-b');
    expect(state.ips.length).toBe(48);
  });

  it("opens the next day's new node at its group's hour, then grows it to the floor", async () => {
    const world = eniWorld({ eni: { mode: 'prefix' } });
    world.addNode('node-a', 'c5.4xlarge');
    const assign = async (node: string, from: number, to: number) => {
      for (let i = from; i < to; i++) {
        world.cluster.withPods(boundPod('g', `${node}-${i}`, node));
        await assignIp(world.deps, node, { namespace: 'g', pod: `${node}-${i}` });
      }
    };
    await runEniPass(world.deps);
    // A quiet hour of 10 pods, then a busy one of 40 two hours later.
    await assign('node-a', 0, 10);
    await runEniPass(world.deps);
    world.clock.now += 2 * 3_600_000;
    await assign('node-a', 10, 40);
    await runEniPass(world.deps);

    // The next day, in the quiet hour: one /28 (10 + minIdle), the floor kept for later.
    world.clock.now += DAY - 2 * 3_600_000;
    world.addNode('node-b', 'c5.4xlarge');
    await runEniPass(world.deps);
    const pool = await world.store.getPool('node-b');
    expect(pool?.floor).toBe(40 + policy.minIdle);
    expect(pool?.opening).toBe(10 + policy.minIdle);
    expect((await world.store.loadNode('node-b')).ips.length).toBe(16);
    // Its own pods come near the opening: the growth that falls due goes to the floor.
    await assign('node-b', 0, 15);
    await runEniPass(world.deps);
    expect((await world.store.loadNode('node-b')).ips.length).toBe(48);
  });

  it('holds no floor on a subnet found short within the hour', async () => {
    const world = await busyDay();
    world.clock.now += DAY;
    // The mark has lapsed, but the subnet was short a minute ago: its free addresses go to the
    // nodes that need them now.
    await world.store.markSubnetShort(SUBNET_ID, 'addresses', world.clock.now - 60_000);
    world.addNode('node-b', 'c5.4xlarge');
    await runEniPass(world.deps);
    expect((await world.store.getPool('node-b'))?.floor).toBe(40 + policy.minIdle);
    expect((await world.store.loadNode('node-b')).ips.length).toBeLessThan(40);

    world.clock.now += SHORTAGE_MEMORY_MS;
    world.addNode('node-c', 'c5.4xlarge');
    await runEniPass(world.deps);
    expect((await world.store.loadNode('node-c')).ips.length).toBe(48);
  });
});

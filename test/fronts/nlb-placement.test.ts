import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_LISTENERS_PER_NLB } from '../../shared/fronts/elbv2.js';
import {
  describePoolFull,
  type PlacementPolicy,
  type PoolLoadBalancer,
  placeListeners,
} from '../../shared/fronts/nlb-placement.js';
import type { PortRange } from '../../shared/net/port-range.js';
import { seededRandom } from '../../sim/random.js';

const RANGE: PortRange = { base: 10_000, size: 50_000 };
const arn = (i: number) => `arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/net/nlb${i}/id`;

const lb = (i: number, listeners: number, taken: number[] = []): PoolLoadBalancer => ({
  arn: arn(i),
  listeners,
  takenPorts: new Set(taken),
});

const place = (
  pool: readonly PoolLoadBalancer[],
  count: number,
  policy: PlacementPolicy = 'balanced',
  random: () => number = seededRandom(1),
  range: PortRange = RANGE,
) => placeListeners({ pool, range, policy, random, count });

/** How many more listeners a load balancer takes: its listener and port room, the smaller. */
function roomOf(balancer: PoolLoadBalancer, range: PortRange): number {
  const inRange = [...balancer.takenPorts].filter(
    (p) => p >= range.base && p < range.base + range.size,
  ).length;
  return Math.max(0, Math.min(MAX_LISTENERS_PER_NLB - balancer.listeners, range.size - inRange));
}

describe('placeListeners', () => {
  it('puts a port on the load balancer with the fewest listeners when balanced', () => {
    const answer = place([lb(0, 7), lb(1, 3), lb(2, 5)], 1);
    expect(answer).toMatchObject({ kind: 'placed', slots: [{ arn: arn(1) }] });
  });

  it('spreads a pod of several ports over the pool when balanced', () => {
    const answer = place([lb(0, 4), lb(1, 4), lb(2, 5)], 3);
    if (answer.kind !== 'placed') throw new Error('expected a placement');
    const arns = answer.slots.map((s) => s.arn);
    expect(arns.filter((a) => a === arn(2))).toHaveLength(1);
    expect(new Set(arns).size).toBe(3);
  });

  it('breaks ties between equally used load balancers at random', () => {
    const firsts = new Set<string>();
    const random = seededRandom(3);
    for (let i = 0; i < 40; i++) {
      const answer = place([lb(0, 2), lb(1, 2), lb(2, 9)], 1, 'balanced', random);
      if (answer.kind === 'placed') firsts.add(answer.slots[0]?.arn ?? '');
    }
    expect(firsts).toEqual(new Set([arn(0), arn(1)]));
  });

  it('fills the first load balancer with room, in pool order, when fill-first', () => {
    const answer = place([lb(0, MAX_LISTENERS_PER_NLB), lb(1, 48), lb(2, 0)], 3, 'fill-first');
    if (answer.kind !== 'placed') throw new Error('expected a placement');
    expect(answer.slots.map((s) => s.arn)).toEqual([arn(1), arn(1), arn(2)]);
  });

  it('never hands out a taken port, and takes the last free one', () => {
    const range = { base: 100, size: 3 };
    const answer = place([lb(0, 2, [100, 102])], 1, 'balanced', () => 0.99, range);
    expect(answer).toEqual({ kind: 'placed', slots: [{ arn: arn(0), port: 101 }] });
  });

  it('stays in the range when the random source returns its upper bound', () => {
    const answer = place([lb(0, 0), lb(1, 0)], 2, 'balanced', () => 1, { base: 100, size: 4 });
    expect(answer).toEqual({
      kind: 'placed',
      slots: [
        { arn: arn(1), port: 103 },
        { arn: arn(0), port: 103 },
      ],
    });
  });

  it('draws listener ports uniformly among the free ones', () => {
    const range = { base: 200, size: 10 };
    const hits = new Map<number, number>();
    const random = seededRandom(11);
    for (let i = 0; i < 8_000; i++) {
      const answer = place([lb(0, 2, [203, 207])], 1, 'balanced', random, range);
      if (answer.kind !== 'placed') throw new Error('expected a placement');
      const port = answer.slots[0]?.port ?? 0;
      hits.set(port, (hits.get(port) ?? 0) + 1);
    }
    expect([...hits.keys()].sort()).toEqual([200, 201, 202, 204, 205, 206, 208, 209]);
    // Mean 1000, standard deviation about 33: seeded, so deterministic.
    for (const h of hits.values()) expect(Math.abs(h - 1000)).toBeLessThan(150);
  });

  it('counts listeners outside the range against the limit but leaves the range whole', () => {
    const range = { base: 100, size: 2 };
    const answer = place([lb(0, 48, [443, 80])], 2, 'balanced', seededRandom(2), range);
    if (answer.kind !== 'placed') throw new Error('expected a placement');
    expect(answer.slots.map((s) => s.port).sort()).toEqual([100, 101]);
    expect(place([lb(0, 49, [443])], 2, 'balanced', seededRandom(2), range)).toMatchObject({
      kind: 'pool-full',
      reason: 'listener-limit',
      room: 1,
    });
  });

  it('merges a load balancer listed twice so no port goes out twice', () => {
    const range = { base: 100, size: 2 };
    const answer = place([lb(0, 1, [100]), lb(0, 0, [])], 2, 'balanced', seededRandom(4), range);
    expect(answer).toEqual({
      kind: 'pool-full',
      reason: 'ports-exhausted',
      wanted: 2,
      room: 1,
      loadBalancers: [{ arn: arn(0), full: 'ports-exhausted' }],
    });
  });

  it('answers pool-full at the listener limit, placing nothing', () => {
    const answer = place([lb(0, 50), lb(1, 49)], 2);
    expect(answer).toEqual({
      kind: 'pool-full',
      reason: 'listener-limit',
      wanted: 2,
      room: 1,
      loadBalancers: [
        { arn: arn(0), full: 'listener-limit' },
        { arn: arn(1), full: 'listener-limit' },
      ],
    });
  });

  it('names the ports when every range port is taken, and both causes when they differ', () => {
    const range = { base: 100, size: 1 };
    expect(place([lb(0, 1, [100])], 1, 'fill-first', Math.random, range)).toMatchObject({
      reason: 'ports-exhausted',
      room: 0,
    });
    expect(place([lb(0, 1, [100]), lb(1, 50)], 1, 'fill-first', Math.random, range)).toMatchObject({
      reason: 'both',
      room: 0,
    });
  });

  it('answers an empty pool as such', () => {
    expect(place([], 1)).toEqual({
      kind: 'pool-full',
      reason: 'empty-pool',
      wanted: 1,
      room: 0,
      loadBalancers: [],
    });
  });

  it('places nothing for a pod with no fronted port, and refuses a count that is not whole', () => {
    expect(place([], 0)).toEqual({ kind: 'placed', slots: [] });
    expect(() => place([lb(0, 0)], -1)).toThrow(RangeError);
    expect(() => place([lb(0, 0)], 1.5)).toThrow(RangeError);
  });

  it('keeps every placed port within the limit, the range and free, none twice', () => {
    const poolArb = fc.array(
      fc.record({
        listeners: fc.integer({ min: 0, max: MAX_LISTENERS_PER_NLB }),
        taken: fc.uniqueArray(fc.integer({ min: 95, max: 125 }), { maxLength: 20 }),
      }),
      { maxLength: 6 },
    );
    fc.assert(
      fc.property(
        poolArb,
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 12 }),
        fc.constantFrom<PlacementPolicy>('balanced', 'fill-first'),
        fc.integer(),
        (shape, size, count, policy, seed) => {
          const range = { base: 100, size };
          const pool = shape.map((s, i) => lb(i, s.listeners, s.taken));
          const capacity = pool.reduce((sum, b) => sum + roomOf(b, range), 0);
          const answer = place(pool, count, policy, seededRandom(seed), range);
          if (answer.kind === 'pool-full') {
            expect(capacity).toBeLessThan(count);
            expect(answer.room).toBe(capacity);
            return;
          }
          expect(capacity).toBeGreaterThanOrEqual(count);
          expect(answer.slots).toHaveLength(count);
          const keys = answer.slots.map((s) => `${s.arn} ${s.port}`);
          expect(new Set(keys).size).toBe(count);
          pool.forEach((balancer) => {
            const mine = answer.slots.filter((s) => s.arn === balancer.arn);
            expect(balancer.listeners + mine.length).toBeLessThanOrEqual(MAX_LISTENERS_PER_NLB);
            for (const { port } of mine) {
              expect(balancer.takenPorts.has(port)).toBe(false);
              expect(port).toBeGreaterThanOrEqual(range.base);
              expect(port).toBeLessThan(range.base + range.size);
            }
          });
        },
      ),
    );
  });

  it('keeps a balanced pool within one listener of even', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: MAX_LISTENERS_PER_NLB - 1 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer(),
        (level, ahead, count, seed) => {
          const pool = ahead.map((up, i) => lb(i, level + (up ? 1 : 0), [RANGE.base + i]));
          const answer = place(pool, count, 'balanced', seededRandom(seed));
          if (answer.kind !== 'placed') return;
          const after = pool.map(
            (b) => b.listeners + answer.slots.filter((s) => s.arn === b.arn).length,
          );
          expect(Math.max(...after) - Math.min(...after)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it('fills in pool order when fill-first: a load balancer gets a port only once those before it are full', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 40, max: MAX_LISTENERS_PER_NLB }), { maxLength: 6 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer(),
        (counts, count, seed) => {
          const pool = counts.map((c, i) => lb(i, c));
          const answer = place(pool, count, 'fill-first', seededRandom(seed));
          if (answer.kind !== 'placed') return;
          const used = answer.slots.map((s) => Number(/nlb(\d+)/.exec(s.arn)?.[1]));
          expect(used).toEqual([...used].sort((a, b) => a - b));
          const lastUsed = Math.max(-1, ...used);
          for (let i = 0; i < lastUsed; i++) {
            const added = used.filter((u) => u === i).length;
            expect((counts[i] ?? 0) + added).toBe(MAX_LISTENERS_PER_NLB);
          }
        },
      ),
    );
  });
});

describe('describePoolFull', () => {
  it('names the cause and the fix', () => {
    const full = place([lb(0, 50)], 2);
    if (full.kind !== 'pool-full') throw new Error('expected pool-full');
    expect(describePoolFull(full)).toBe(
      '2 NLB listeners asked, room for 0: every Network Load Balancer of the pool has 50 listeners (the AWS limit); add a load balancer to fronts.nlb.loadBalancers',
    );
    const empty = place([], 1);
    if (empty.kind !== 'pool-full') throw new Error('expected pool-full');
    expect(describePoolFull(empty)).toContain('no Network Load Balancer in the pool');
    const ports = place([lb(0, 1, [100])], 1, 'balanced', Math.random, { base: 100, size: 1 });
    if (ports.kind !== 'pool-full') throw new Error('expected pool-full');
    expect(describePoolFull(ports)).toContain('widen the range');
  });
});

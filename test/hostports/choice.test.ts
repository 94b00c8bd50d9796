import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../shared/hostports/allocator.js';
import {
  assignRangePorts,
  chooseLeastUsed,
  chooseOneLeastUsed,
} from '../../shared/hostports/choice.js';
import type { PortProtocol } from '../../shared/hostports/model.js';
import { seededRandom } from '../../sim/random.js';

const spread = (counts: readonly number[]): number => Math.max(...counts) - Math.min(...counts);

const countsArb = fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 40 });
const protocolArb = fc.constantFrom<PortProtocol>('UDP', 'TCP', 'TCPUDP');

describe('chooseLeastUsed', () => {
  it('takes distinct ports, none used more than any port it leaves', () => {
    fc.assert(
      fc.property(countsArb, fc.nat(), fc.integer(), (counts, want, seed) => {
        const amount = want % (counts.length + 1);
        const chosen = chooseLeastUsed(counts, amount, seededRandom(seed));
        expect(new Set(chosen).size).toBe(amount);
        const left = counts.filter((_, i) => !chosen.includes(i));
        const highestChosen = Math.max(-1, ...chosen.map((i) => counts[i] ?? 0));
        expect(highestChosen).toBeLessThanOrEqual(Math.min(Number.POSITIVE_INFINITY, ...left));
      }),
    );
  });

  it('refuses more ports than the range has', () => {
    expect(() => chooseLeastUsed([0, 0], 3, Math.random)).toThrow(RangeError);
  });

  it('picks uniformly among equally used ports', () => {
    const random = seededRandom(7);
    const hits = new Array<number>(11).fill(0);
    const counts = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    for (let i = 0; i < 11_000; i++) {
      const offset = chooseLeastUsed(counts, 1, random)[0] ?? 0;
      hits[offset] = (hits[offset] ?? 0) + 1;
    }
    // Mean 1000, standard deviation about 30: every port within 5 of them (seeded, deterministic).
    for (const h of hits) expect(Math.abs(h - 1000)).toBeLessThan(150);
  });
});

describe('chooseOneLeastUsed', () => {
  it('agrees with chooseLeastUsed on the level it picks from', () => {
    fc.assert(
      fc.property(countsArb, fc.integer(), (counts, seed) => {
        const offset = chooseOneLeastUsed(counts, seededRandom(seed));
        expect(counts[offset]).toBe(Math.min(...counts));
      }),
    );
  });

  it('stays in range when the random source returns its upper bound', () => {
    expect(chooseOneLeastUsed([1, 0, 0], () => 1)).toBe(2);
    expect(chooseLeastUsed([0, 0, 0], 2, () => 1)).toHaveLength(2);
  });
});

describe('assignRangePorts', () => {
  it('never gives a pod one host port twice for one protocol, and keeps ports distinct when they fit', () => {
    fc.assert(
      fc.property(
        fc.array(protocolArb, { minLength: 1, maxLength: 12 }),
        countsArb,
        fc.integer(),
        (protocols, counts, seed) => {
          const both = protocols.filter((p) => p === 'TCPUDP').length;
          const udp = protocols.filter((p) => p === 'UDP').length;
          const tcp = protocols.filter((p) => p === 'TCP').length;
          fc.pre(both + udp <= counts.length && both + tcp <= counts.length);
          const offsets = assignRangePorts(protocols, counts, seededRandom(seed));
          for (const carrier of ['UDP', 'TCP'] as const) {
            const mine = offsets.filter(
              (_, i) => protocols[i] === carrier || protocols[i] === 'TCPUDP',
            );
            expect(new Set(mine).size).toBe(mine.length);
          }
          if (protocols.length <= counts.length)
            expect(new Set(offsets).size).toBe(protocols.length);
        },
      ),
    );
  });

  it('keeps counts within one of each other for pods of mixed protocols, their ports beyond the range too', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.array(protocolArb, { minLength: 1, maxLength: 8 }), { maxLength: 30 }),
        fc.integer(),
        (size, pods, seed) => {
          const random = seededRandom(seed);
          const counts = new Array<number>(size).fill(0);
          for (const protocols of pods) {
            const both = protocols.filter((p) => p === 'TCPUDP').length;
            const udp = protocols.filter((p) => p === 'UDP').length;
            const tcp = protocols.filter((p) => p === 'TCP').length;
            if (both + udp > size || both + tcp > size) continue;
            for (const o of assignRangePorts(protocols, counts, random))
              counts[o] = (counts[o] ?? 0) + 1;
            expect(spread(counts)).toBeLessThanOrEqual(1);
          }
        },
      ),
    );
  });
});

describe('the count invariant under sequences of allocations and releases', () => {
  // A model of one range: counts per port, and the pods holding ports.
  const opArb = fc.oneof(
    fc.record({ kind: fc.constant('allocate' as const), ports: fc.integer({ min: 1, max: 4 }) }),
    fc.record({ kind: fc.constant('release' as const), which: fc.nat() }),
  );

  it('keeps counts within one of each other for allocations alone', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 4, max: 30 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 60 }),
        fc.integer(),
        (size, pods, seed) => {
          const random = seededRandom(seed);
          const counts = new Array<number>(size).fill(0);
          for (const ports of pods) {
            for (const o of chooseLeastUsed(counts, ports, random))
              counts[o] = (counts[o] ?? 0) + 1;
            expect(spread(counts)).toBeLessThanOrEqual(1);
          }
        },
      ),
    );
  });

  it('never widens the spread beyond max(1, previous spread), and fills the lowest counts first after releases', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 4, max: 30 }),
        fc.array(opArb, { maxLength: 80 }),
        fc.integer(),
        (size, ops, seed) => {
          const random = seededRandom(seed);
          const counts = new Array<number>(size).fill(0);
          const held: number[][] = [];
          for (const op of ops) {
            if (op.kind === 'release') {
              const [pod] = held.splice(op.which % Math.max(1, held.length), 1);
              for (const o of pod ?? []) counts[o] = (counts[o] ?? 0) - 1;
              continue;
            }
            const before = [...counts];
            const taken = chooseLeastUsed(counts, op.ports, random);
            const highestTaken = Math.max(...taken.map((o) => before[o] ?? 0));
            const lowestLeft = Math.min(
              Number.POSITIVE_INFINITY,
              ...before.filter((_, i) => !taken.includes(i)),
            );
            expect(highestTaken).toBeLessThanOrEqual(lowestLeft);
            for (const o of taken) counts[o] = (counts[o] ?? 0) + 1;
            expect(spread(counts)).toBeLessThanOrEqual(Math.max(1, spread(before)));
            held.push(taken);
          }
          expect(Math.min(...counts)).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });

  it('shows why "within one" cannot survive releases: A=1, B=1, allocate, release the holder of B', () => {
    const taken = chooseLeastUsed([1, 1], 1, () => 0)[0] ?? 0;
    const other = 1 - taken;
    const counts = [1, 1];
    counts[taken] = 2;
    counts[other] = 0;
    expect(spread(counts)).toBe(2);
    // The next allocation takes the least-used port and narrows it again.
    expect(chooseLeastUsed(counts, 1, Math.random)).toEqual([other]);
  });
});

describe('backoffMs', () => {
  it('grows with the attempt and stays under 200 ms', () => {
    expect(backoffMs(1, () => 0.999)).toBeLessThan(10);
    expect(backoffMs(3, () => 0.999)).toBeGreaterThan(39);
    expect(backoffMs(8, () => 0.999)).toBeLessThan(200);
  });
});

describe('busy ports (a write of this process is on them)', () => {
  it('come last among the lowest counts, never before a lower count', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 }), (seed) => {
        const random = seededRandom(seed);
        expect(chooseOneLeastUsed([1, 1, 1, 2], random, new Set([0, 1]))).toBe(2);
        // Every lowest-count port busy: still the lowest count, one of them.
        expect([0, 1]).toContain(chooseOneLeastUsed([1, 1, 2], random, new Set([0, 1])));
        expect(new Set(chooseLeastUsed([0, 0, 0, 1], 2, random, { busy: new Set([0]) }))).toEqual(
          new Set([1, 2]),
        );
        // Three wanted at level 0: both idle ones, then the busy one, before level 1.
        expect(new Set(chooseLeastUsed([0, 0, 0, 1], 3, random, { busy: new Set([0]) }))).toEqual(
          new Set([0, 1, 2]),
        );
      }),
      { numRuns: 50 },
    );
  });
});

describe('count items (ports whose counts are stored together)', () => {
  const itemOf = (offset: number) => Math.floor(offset / 64);

  it('puts a pod’s ports in the count item of its first port when counts are equal', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 }), (seed) => {
        const picks = chooseLeastUsed(new Array(1001).fill(0), 3, seededRandom(seed), { itemOf });
        expect(new Set(picks.map(itemOf)).size).toBe(1);
        expect(new Set(picks).size).toBe(3);
      }),
      { numRuns: 100 },
    );
  });

  it('never prefers an item over a lower count', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 70, maxLength: 200 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (counts, amount, seed) => {
          const picks = chooseLeastUsed(counts, amount, seededRandom(seed), { itemOf });
          // Every port taken had, before it, a count no higher than any port not taken.
          const highestTaken = Math.max(...picks.map((p) => counts[p] ?? 0));
          const lowestLeft = Math.min(
            ...counts.filter((_, i) => !picks.includes(i)).concat([Number.POSITIVE_INFINITY]),
          );
          expect(highestTaken).toBeLessThanOrEqual(lowestLeft);
          expect(new Set(picks).size).toBe(amount);
        },
      ),
      { numRuns: 200 },
    );
  });
});

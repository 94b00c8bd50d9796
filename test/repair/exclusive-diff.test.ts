import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rangeKey } from '../../shared/allocation/allocator.js';
import type { OwnerRecord } from '../../shared/allocation/store.js';
import type { Offset } from '../../shared/net/offset.js';
import { diffExclusive, mergeClaims } from '../../shared/repair/exclusive-diff.js';
import type { LeakCounter } from '../../shared/repair/ledger.js';
import { type ServiceReading, valueKey } from '../../shared/repair/live.js';
import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';
import { NODE_PORTS } from './support.js';

const KEY = rangeKey(NODE_PORTS);
const ids = ['a', 'b', 'c', 'd'];
/** When the pass began listing; a claim stamped after `LISTED - COMMIT_WINDOW_MS` is young. */
const LISTED = 10_000_000;
const YOUNG = LISTED - COMMIT_WINDOW_MS + 1_000;

/** A random store view and cluster over 8 node ports and 4 ids. */
const world = fc.record({
  held: fc.dictionary(fc.integer({ min: 0, max: 7 }).map(String), fc.constantFrom(...ids)),
  services: fc.array(
    fc.record({
      id: fc.constantFrom(...ids),
      terminating: fc.boolean(),
      offsets: fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 3 }),
    }),
    { maxLength: 4 },
  ),
  counters: fc.dictionary(
    fc.integer({ min: 0, max: 7 }).map(String),
    fc.record({ holder: fc.constantFrom(...ids), passes: fc.integer({ min: 1, max: 2 }) }),
  ),
  /** Offsets whose block says they were claimed less than the commit window ago. */
  young: fc.subarray([0, 1, 2, 3, 4, 5, 6, 7]),
});

type World = Omit<typeof world extends fc.Arbitrary<infer T> ? T : never, 'young'> & {
  readonly young?: readonly number[];
};

function decide(w: World) {
  const held = new Map<Offset, string>(Object.entries(w.held).map(([o, id]) => [Number(o), id]));
  const services: ServiceReading[] = w.services.map((s, i) => ({
    owner: {
      id: s.id,
      recordable: true,
      terminating: s.terminating,
      object: { kind: 'Service', namespace: 'default', name: `s${i}` },
      values: s.offsets.map((offset) => ({
        range: NODE_PORTS,
        offset,
        slot: `nodePort/${offset}`,
      })),
    },
    problems: [],
  }));
  const counters = new Map<string, LeakCounter>(
    Object.entries(w.counters).map(([o, c]) => {
      const key = `value#${valueKey(NODE_PORTS, Number(o))}`;
      return [key, { key, ...c, firstSeenAt: 0 }];
    }),
  );
  const claimedAt = new Map<Offset, number>((w.young ?? []).map((offset) => [offset, YOUNG]));
  const plan = diffExclusive({
    snapshot: {
      ranges: [NODE_PORTS],
      held: new Map([[KEY, held]]),
      claimedAt: new Map([[KEY, claimedAt]]),
      owners: new Map(),
    },
    services,
    counters,
    grace: 3,
    now: LISTED,
    listedAt: LISTED,
  });
  return { plan, held, services, counters, claimedAt };
}

describe('diffExclusive', () => {
  it('writes no record for a live owner created without one, whose object carries what it holds', () => {
    const plan = decide({
      held: { '1': 'a', '2': 'a' },
      services: [{ id: 'a', terminating: false, offsets: [1, 2] }],
      counters: {},
    }).plan;
    expect(plan.intents).toEqual([]);
    expect(plan.claims).toEqual([]);
    expect(plan.findings).toEqual([]);
    // A record that exists but lacks a claim is still amended.
    const withRecord = diffExclusive({
      snapshot: {
        ranges: [NODE_PORTS],
        held: new Map([[KEY, new Map([[1, 'a']])]]),
        owners: new Map([
          [
            'a',
            {
              id: 'a',
              owner: { kind: 'Service', namespace: 'default', name: 's0' },
              claims: [],
              version: 1,
              createdAt: 0,
            } satisfies OwnerRecord,
          ],
        ]),
      },
      services: decide({
        held: {},
        services: [{ id: 'a', terminating: false, offsets: [1] }],
        counters: {},
      }).services,
      counters: new Map(),
      grace: 3,
      now: 1,
      listedAt: 1,
    });
    expect(withRecord.intents.map((i) => i.claims.map((c) => c.offset))).toEqual([[1]]);
  });

  it('never takes a value from a live Service that holds and carries it', () => {
    fc.assert(
      fc.property(world, (w) => {
        const { plan, held, services } = decide(w);
        const protectedOffsets = new Set(
          services.flatMap((s) =>
            s.owner.values.filter((v) => held.get(v.offset) === s.owner.id).map((v) => v.offset),
          ),
        );
        for (const free of plan.frees) expect(protectedOffsets.has(free.offset)).toBe(false);
        for (const move of plan.transfers) expect(protectedOffsets.has(move.offset)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('frees only on the grace-th sighting by the same holder, and only what nobody carries', () => {
    fc.assert(
      fc.property(world, (w) => {
        const { plan, services, counters } = decide(w);
        const carried = new Set(
          services
            .filter((s) => !s.owner.terminating)
            .flatMap((s) => s.owner.values.map((v) => v.offset)),
        );
        for (const free of plan.frees) {
          const counter = counters.get(`value#${valueKey(NODE_PORTS, free.offset)}`);
          expect(counter).toMatchObject({ holder: free.holder, passes: 2 });
          expect(carried.has(free.offset)).toBe(false);
        }
      }),
    );
  });

  it('never frees, moves away or counts down a value claimed less than the commit window ago', () => {
    fc.assert(
      fc.property(world, (w) => {
        const { plan, claimedAt } = decide(w);
        const young = (offset: Offset) => claimedAt.has(offset);
        for (const free of plan.frees) expect(young(free.offset)).toBe(false);
        for (const move of plan.transfers) if (move.leak) expect(young(move.offset)).toBe(false);
        for (const counter of plan.counters)
          expect(young(Number(counter.key.slice(counter.key.lastIndexOf('#') + 1)))).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('counts a young suspect of the records neither: a record written, or a claim it lists', () => {
    const record = (createdAt: number, claimedAt?: number): OwnerRecord => ({
      id: 'a',
      owner: { kind: 'Service', namespace: 'default', name: 's0' },
      claims: [
        { slot: 'nodePort/http', range: KEY, offset: 3, ...(claimedAt ? { claimedAt } : {}) },
      ],
      version: 1,
      createdAt,
    });
    const plan = (owner: OwnerRecord, live: boolean) =>
      diffExclusive({
        snapshot: {
          ranges: [NODE_PORTS],
          held: new Map([[KEY, new Map()]]),
          owners: new Map([['a', owner]]),
        },
        services: live
          ? decide({
              held: {},
              services: [{ id: 'a', terminating: false, offsets: [] }],
              counters: {},
            }).services
          : [],
        counters: new Map(),
        grace: 1,
        now: LISTED,
        listedAt: LISTED,
      });
    const old = LISTED - COMMIT_WINDOW_MS - 1;
    // A record holding nothing, of no live object: a CREATE's intent whose claims have not landed.
    expect(plan(record(YOUNG), false)).toMatchObject({ deletions: [], counters: [] });
    expect(plan(record(old, YOUNG), false)).toMatchObject({ deletions: [], counters: [] });
    expect(plan(record(old, old), false).deletions).toEqual([{ id: 'a', version: 1 }]);
    // A claim a live owner's record lists and neither holds nor carries: an UPDATE in flight.
    expect(plan(record(old, YOUNG), true)).toMatchObject({ trims: [], counters: [] });
    expect(plan(record(old, old), true).trims).toHaveLength(1);
  });

  it('claims only free values, each at most once, and counts every suspect it keeps', () => {
    fc.assert(
      fc.property(world, (w) => {
        const { plan, held } = decide(w);
        const written = [...plan.claims, ...plan.transfers].map((a) => a.offset);
        expect(new Set(written).size).toBe(written.length);
        for (const claim of plan.claims) expect(held.has(claim.offset)).toBe(false);
        for (const move of plan.transfers) expect(held.get(move.offset)).toBe(move.from);
        for (const counter of plan.counters) expect(counter.passes).toBeLessThan(3);
      }),
    );
  });
});

describe('mergeClaims', () => {
  it('replaces a claim of the same slot and drops the values named', () => {
    const current: OwnerRecord['claims'] = [
      { slot: 'nodePort/http', range: KEY, offset: 1 },
      { slot: 'nodePort/x', range: KEY, offset: 2 },
      { slot: 'nodePort/y', range: KEY, offset: 3 },
    ];
    expect(
      mergeClaims(
        current,
        [{ slot: 'nodePort/http', range: KEY, offset: 9 }],
        [{ range: KEY, offset: 3 }],
      ),
    ).toEqual([
      { slot: 'nodePort/x', range: KEY, offset: 2 },
      { slot: 'nodePort/http', range: KEY, offset: 9 },
    ]);
  });
});

/**
 * The slack of concurrent allocations (contract section 4): with allocations one after another
 * the use counts of any two ports in a range differ by at most one; with allocations made at
 * once by several processes, each choosing from its own view, by at most two. Processes share
 * an in-memory store whose order of calls the test (or fast-check's scheduler) decides.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AllocationOutcome, allocateHostPorts } from '../../shared/hostports/allocator.js';
import { chooseWithSlack } from '../../shared/hostports/choice.js';
import { CountView } from '../../shared/hostports/count-view.js';
import { HostPortContentionError } from '../../shared/hostports/errors.js';
import type { HostPortRange } from '../../shared/hostports/model.js';
import { type PortSpec, parsePortSpecs } from '../../shared/hostports/spec.js';
import { MemoryHostPortStore } from '../../sim/fakes/host-port-store.js';
import { seededRandom } from '../../sim/random.js';

/** A shared clock: every reading is later than the one before, as a synchronised clock. */
function logicalClock(): () => number {
  let t = 1_000;
  return () => ++t;
}

/** One process (a Lambda container): its own view of the counts, the shared store and clock. */
function container(store: MemoryHostPortStore, now: () => number, random: () => number) {
  let ids = 0;
  const deps = {
    store,
    view: new CountView({ now: () => 0, maxAgeMs: Number.POSITIVE_INFINITY }),
    random,
    now,
    sleep: async () => {},
    randomBytes: (size: number) => new Uint8Array(size).map(() => Math.floor(random() * 256)),
  };
  return {
    /** Reads the range into the view: a warm container. */
    warm: (range: HostPortRange) => deps.view.refresh(range, () => store.readCounts(range)),
    allocate: (range: HostPortRange, ports: number): Promise<AllocationOutcome> =>
      allocateHostPorts(deps, {
        id: `${Math.floor(random() * 1e9)}-${ids++}`,
        pod: { kind: 'Pod', namespace: 'default', name: `gs-${ids}`, generateName: '' },
        specs: specs(range, ports),
        ranges: new Map([[range.name, range]]),
        dryRun: false,
      }),
  };
}

function specs(range: HostPortRange, ports: number): readonly PortSpec[] {
  const parsed = parsePortSpecs(
    JSON.stringify(
      Array.from({ length: ports }, (_, i) => ({ name: `p${i}`, containerPort: i + 1 })),
    ),
    { containers: ['game'], initContainers: [] },
    new Map([[range.name, range]]),
  );
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  return parsed.specs;
}

/** Gives each port of the range `counts[offset]` uses. */
async function fill(store: MemoryHostPortStore, range: HostPortRange, counts: readonly number[]) {
  const ports = counts.flatMap((uses, offset) =>
    Array.from({ length: uses }, () => ({
      name: 'f',
      range: range.name,
      port: range.first + offset,
      protocol: 'UDP' as const,
    })),
  );
  if (ports.length > 0) await store.addUses(ports);
}

const spreadOf = (counts: readonly number[]) => Math.max(...counts) - Math.min(...counts);

const RANGE: HostPortRange = { name: 'default', first: 7000, size: 4 };

describe('host port slack between concurrent allocations', () => {
  it('lets two processes that both chose the last port at the lowest count land, one level apart', async () => {
    const store = new MemoryHostPortStore();
    await fill(store, RANGE, [1, 0, 1, 1]);
    const now = logicalClock();
    const [a, b] = [container(store, now, Math.random), container(store, now, Math.random)];
    await Promise.all([a.warm(RANGE), b.warm(RANGE)]);
    const outcomes = await Promise.all([a.allocate(RANGE, 1), b.allocate(RANGE, 1)]);
    // Both views saw 7001 alone at the lowest count; the second use lands as well, instead of
    // losing its race and choosing again.
    expect(outcomes.map((o) => o.record.ports[0]?.port)).toEqual([7001, 7001]);
    expect(outcomes.map((o) => o.conflicts)).toEqual([0, 0]);
    expect(store.peek(RANGE)).toEqual([1, 2, 1, 1]);
  });

  it('refuses a stale view a use that an allocation finished before this one began made', async () => {
    const store = new MemoryHostPortStore();
    await fill(store, RANGE, [1, 0, 1, 1]);
    const now = logicalClock();
    const [a, b] = [container(store, now, Math.random), container(store, now, Math.random)];
    await Promise.all([a.warm(RANGE), b.warm(RANGE)]);
    await a.allocate(RANGE, 1);
    const late = await b.allocate(RANGE, 1);
    // B's view still shows 7001 at 0; taking it would leave 7001 two above the others. Refused,
    // B reads the range again and chooses from [1, 1, 1, 1].
    expect(late.conflicts).toBe(1);
    expect(store.peek(RANGE).toSorted()).toEqual([1, 1, 1, 2]);
  });

  it('sends a loser of a race among the lowest two counts, with no second read', async () => {
    const range: HostPortRange = { name: 'default', first: 7000, size: 16 };
    const store = new MemoryHostPortStore();
    await fill(store, range, [0, ...Array.from({ length: 15 }, () => 1)]);
    const now = logicalClock();
    const processes = [0, 1, 2].map(() => container(store, now, Math.random));
    await Promise.all(processes.map((p) => p.warm(range)));
    const reads = store.reads;
    const outcomes = await Promise.all(processes.map((p) => p.allocate(range, 1)));
    // Two land on 7000 (0 → 2); the third is refused there and lands elsewhere at once.
    expect(outcomes.map((o) => o.conflicts)).toEqual([0, 0, 1]);
    expect(outcomes[2]?.record.ports[0]?.port).not.toBe(7000);
    expect(store.reads).toBe(reads);
    expect(spreadOf(store.peek(range))).toBeLessThanOrEqual(2);
  });

  it('chooses with slack among the lowest two counts only, each port once', () => {
    const random = seededRandom(7);
    for (let trial = 0; trial < 200; trial++) {
      const counts = [3, 2, 4, 2, 3, 5, 2];
      const picks = chooseWithSlack(counts, 3, random) ?? [];
      expect(new Set(picks).size).toBe(3);
      for (const offset of picks) expect(counts[offset]).toBeLessThanOrEqual(3);
    }
    expect(chooseWithSlack([0, 1, 2, 2], 3, random)).toBeUndefined();
  });
});

/** Counts within one of each other (a range as sequential allocations leave it). */
const levelArb = fc
  .record({ base: fc.nat(3), bumps: fc.array(fc.boolean(), { minLength: 1, maxLength: 10 }) })
  .map(({ base, bumps }) => bumps.map((b) => base + (b ? 1 : 0)));

const allocationsArb = (size: number) =>
  fc.array(
    fc.record({
      process: fc.nat(3),
      ports: fc.integer({ min: 1, max: Math.min(3, size) }),
    }),
    { minLength: 1, maxLength: 12 },
  );

const scenarioArb = levelArb.chain((counts) =>
  fc.record({
    counts: fc.constant(counts),
    allocations: allocationsArb(counts.length),
    seed: fc.integer(),
  }),
);

describe('host port use counts (property)', () => {
  it('differ by at most one with allocations one after another, whichever process makes each', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ counts, allocations, seed }) => {
        const range: HostPortRange = { name: 'default', first: 7030, size: counts.length };
        const store = new MemoryHostPortStore();
        await fill(store, range, counts);
        const now = logicalClock();
        const random = seededRandom(seed);
        const processes = [0, 1, 2, 3].map(() => container(store, now, random));
        // Every view is read now and goes stale as the others allocate.
        await Promise.all(processes.map((p) => p.warm(range)));
        for (const { process: which, ports } of allocations) {
          await processes[which]?.allocate(range, ports);
          expect(spreadOf(store.peek(range))).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('differ by at most two with allocations made at once by several processes', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, fc.scheduler(), async (scenario, s) => {
        const { counts, allocations, seed } = scenario;
        const range: HostPortRange = { name: 'default', first: 7030, size: counts.length };
        let widest = 0;
        const store = new MemoryHostPortStore(async () => {
          widest = Math.max(widest, spreadOf(store.peek(range)));
          await s.schedule(Promise.resolve());
        });
        await s.waitFor(fill(store, range, counts));
        const now = logicalClock();
        const random = seededRandom(seed);
        const processes = [0, 1, 2, 3].map(() => container(store, now, random));
        await s.waitFor(Promise.all(processes.map((p) => p.warm(range))));
        widest = 0;
        // An allocation that loses every race is refused (409, the caller retries) and leaves
        // nothing behind; the scheduler can starve one in a range of two ports.
        const done = Promise.all(
          allocations.map(({ process: which, ports }) =>
            processes[which]?.allocate(range, ports).then(
              () => ports,
              (error: unknown) => {
                if (error instanceof HostPortContentionError) return 0;
                throw error;
              },
            ),
          ),
        );
        const landed = await s.waitFor(done);
        widest = Math.max(widest, spreadOf(store.peek(range)));
        expect(widest).toBeLessThanOrEqual(2);
        expect(store.peek(range).reduce((a, b) => a + b, 0)).toBe(
          counts.reduce((a, b) => a + b, 0) +
            landed.reduce((sum: number, ports) => sum + (ports ?? 0), 0),
        );
      }),
      { numRuns: 150 },
    );
  });
});

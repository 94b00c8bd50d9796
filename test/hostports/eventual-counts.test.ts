/**
 * A view of the host port counts read again because it aged is read eventually consistent (half
 * the read units), and may miss the last writes: every count write still re-checks it, so
 * allocations one after another keep every count within one of the others.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { podAdmission } from '../../shared/admission/pods.js';
import { parseConfig } from '../../shared/config/schema.js';
import { COUNT_VIEW_MAX_AGE_MS, CountView } from '../../shared/hostports/count-view.js';
import type { HostPortRange } from '../../shared/hostports/model.js';
import type { CountsRead, RangeCounts } from '../../shared/hostports/store.js';
import { MemoryHostPortStore } from '../../sim/fakes/host-port-store.js';
import { seededRandom } from '../../sim/random.js';
import { gamePod, podRequest } from './support.js';

const RANGE: HostPortRange = { name: 'default', first: 7000, size: 8 };

/**
 * The in-memory store whose eventually consistent reads answer the counts as they stood `lag`
 * allocations ago (a replica behind), and which records each read's consistency.
 */
class LaggingCounts extends MemoryHostPortStore {
  lag = 0;
  readonly reads_: CountsRead[] = [];
  readonly #history: number[][] = [];
  snapshot(): void {
    this.#history.push(this.peek(RANGE));
  }
  override async readCounts(
    range: HostPortRange,
    read: CountsRead = 'strong',
  ): Promise<RangeCounts> {
    this.reads_.push(read);
    const now = await super.readCounts(range);
    const past = this.#history[this.#history.length - 1 - this.lag];
    return read === 'eventual' && past ? { ...now, counts: past } : now;
  }
}

describe('eventually consistent reads of the host port counts', () => {
  it('reads a first view and one proven stale strongly, a view that only aged eventually', async () => {
    const clock = { now: 0 };
    const view = new CountView({ now: () => clock.now, maxAgeMs: 1_000 });
    const asked: CountsRead[] = [];
    const read = async (consistency: CountsRead) => {
      asked.push(consistency);
      return { range: RANGE, counts: new Array<number>(RANGE.size).fill(0) };
    };
    await view.refresh(RANGE, read);
    clock.now = 1_000;
    const began = view.stamp();
    await view.refresh(RANGE, read);
    // An eventual read may miss an allocation that finished before this stamp: it proves nothing.
    expect(view.seenSince('default', 7001, began)).toBe(false);
    view.apply(
      [{ range: 'default', firstPort: 6976, ports: 64, counts: new Map([[7001, 1]]) }],
      view.stamp(),
    );
    expect(view.seenSince('default', 7001, began)).toBe(true);
    view.expire(['default']);
    await view.refresh(RANGE, read);
    expect(view.seenSince('default', 7002, began)).toBe(true);
    expect(asked).toEqual(['strong', 'eventual', 'strong']);
  });

  it('keeps counts within one for allocations one after another whose aged views are read stale', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ process: fc.integer({ min: 0, max: 2 }), lag: fc.nat(3) }), {
          minLength: 4,
          maxLength: 24,
        }),
        fc.integer(),
        async (steps, seed) => {
          const store = new LaggingCounts();
          const clock = { now: 1_700_000_000_000 };
          const random = seededRandom(seed);
          const config = parseConfig({ hostPortRanges: { default: '7000-7007' } });
          const processes = [0, 1, 2].map(() =>
            podAdmission({
              config,
              store,
              random,
              randomBytes: (size) => new Uint8Array(randomBytes(size)),
              now: () => clock.now,
            }),
          );
          store.snapshot();
          for (const [n, step] of steps.entries()) {
            // Each view has aged: the next allocation of its process reads it again, stale.
            clock.now += COUNT_VIEW_MAX_AGE_MS + 1;
            store.lag = step.lag;
            const admit = processes[step.process] as (typeof processes)[number];
            const verdict = await admit(
              podRequest(gamePod([{ name: 'p', containerPort: 7777 }], { name: `gs-${n}` })),
            );
            expect(verdict.allowed).toBe(true);
            store.snapshot();
            const counts = store.peek(RANGE);
            expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
          }
          expect(store.reads_).toContain('eventual');
        },
      ),
      { numRuns: 60 },
    );
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExclusiveAllocator, rangeKey } from '../../shared/allocation/allocator.js';
import { BlockView, MAX_BLOCKS_PER_RANGE } from '../../shared/allocation/block-view.js';
import { RangeFullError } from '../../shared/allocation/errors.js';
import type { AllocationStore, Block } from '../../shared/allocation/store.js';
import { parseCidr } from '../../shared/net/ip.js';
import {
  BLOCK_SIZE,
  blockIndexOf,
  lastBlockOf,
  type Offset,
  offsetAt,
  slotOf,
} from '../../shared/net/offset.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';
import { clusterIpRange, nodePortRange, type ValueRange } from '../../shared/net/value-range.js';
import { CapacityMeter } from '../../shared/store/capacity.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import type { Owner } from '../../shared/vocabulary/owner.js';
import { forwardingAllocationStore } from '../support/allocation-store.js';
import { freshTable } from '../support/dynamo.js';

const owner: Owner = { kind: 'Service', namespace: 'default', name: 'svc' };
const FRESH = { current: 'none' } as const;
let seq = 0;

async function world() {
  const { client, tableName } = await freshTable();
  const meter = new CapacityMeter();
  const store = new DynamoAllocationStore({ client, tableName, cluster: `bv${seq++}`, meter });
  /** One process: its own allocator and view over the shared store. */
  const process = (random: () => number = Math.random) =>
    new ExclusiveAllocator({ store, random, now: () => 1_700_000_000_000 });
  /** Every held offset of the range, from the store itself. */
  const held = async (range: ValueRange) => {
    const offsets = new Map<Offset, string>();
    for await (const block of store.scanBlocks(rangeKey(range), 0, lastBlockOf(range.exactSize))) {
      for (const [slot, holder] of block.holders) offsets.set(offsetAt(block.index, slot), holder);
    }
    return offsets;
  };
  return { store, meter, process, held };
}

describe('BlockView', () => {
  it('picks only free values of the upper band in blocks it has seen, skipping those being claimed', () => {
    const range = nodePortRange(parsePortRange('30000-30099') as PortRange);
    const view = new BlockView();
    const random = () => 0.5;
    expect(view.pick(range, 'r', random, new Set())).toBeUndefined();
    // Block 2 (offsets 64-95): every slot taken but 80.
    const holders = new Map(Array.from({ length: BLOCK_SIZE }, (_, slot) => [slot, 'x']));
    holders.delete(16);
    view.apply('r', { index: 2, holders }, view.stamp());
    expect(view.pick(range, 'r', random, new Set())).toBe(80);
    view.hold('r', 80);
    expect(view.pick(range, 'r', random, view.claiming('r'))).toBeUndefined();
    view.settled('r', 80);
    expect([...view.claiming('r')]).toEqual([]);
    // Block 0 starts in the reserved band: only its upper-band slots are ever answered.
    view.apply('r', { index: 0, holders: new Map() }, view.stamp());
  });

  it('keeps the newest answer of a block when answers arrive out of order, with the late claim shown', () => {
    const range = nodePortRange(parsePortRange('30000-30399') as PortRange);
    const view = new BlockView();
    const older = view.stamp();
    const newer = view.stamp();
    const all = new Map(Array.from({ length: BLOCK_SIZE }, (_, slot) => [slot, 'x']));
    all.delete(3);
    all.delete(4);
    view.apply('r', { index: 5, holders: all }, newer);
    // The older answer, sent before but arriving after, shows the block empty but for its claim.
    view.apply('r', { index: 5, holders: new Map([[4, 'mine']]) }, older, {
      offset: 5 * BLOCK_SIZE + 4,
      holder: 'mine',
    });
    expect(view.pick(range, 'r', () => 0, new Set())).toBe(5 * BLOCK_SIZE + 3);
    for (let i = 0; i < 20; i++) {
      const offset = view.pick(range, 'r', Math.random, new Set()) ?? -1;
      expect(offset).toBeGreaterThanOrEqual(range.reservedBand);
    }
  });
});

describe('BlockView with two claims of one block in flight together', () => {
  it("keeps both claims' values when the later-sent one was applied first by the store", () => {
    const range = nodePortRange(parsePortRange('30000-30399') as PortRange);
    const view = new BlockView();
    const block = (taken: readonly number[]) => ({
      index: 5,
      holders: new Map(taken.map((slot) => [slot, `o${slot}`])),
    });
    view.apply('r', block([]), view.stamp());
    const first = view.stamp();
    const second = view.stamp();
    // The store applied the second claim (slot 2) before the first (slot 1): the first's answer
    // shows both and arrives first; the second's, sent later, shows only its own.
    view.apply('r', block([1, 2]), first, { offset: 5 * BLOCK_SIZE + 1, holder: 'o1' });
    view.apply('r', block([2]), second, { offset: 5 * BLOCK_SIZE + 2, holder: 'o2' });
    // Every start slot in turn (the view knows only this block), so the picks are exhaustive,
    // not a sample that may miss the one value the assertion is about.
    const everyStart = () =>
      new Set(
        Array.from({ length: BLOCK_SIZE }, (_, i) =>
          view.pick(range, 'r', () => (i + 0.5) / BLOCK_SIZE, new Set()),
        ),
      );
    const free = everyStart();
    expect(free.has(5 * BLOCK_SIZE + 1)).toBe(false);
    expect(free.has(5 * BLOCK_SIZE + 2)).toBe(false);
    // A request sent after both answers came is answered from a later state: it replaces them.
    view.apply('r', block([2]), view.stamp());
    expect(everyStart()).toContain(5 * BLOCK_SIZE + 1);
  });
});

describe('allocation from a view of the blocks', () => {
  it('never sends two of its own concurrent claims at one value: no lost race within a process', async () => {
    const w = await world();
    const range = nodePortRange(parsePortRange('30000-30199') as PortRange);
    const one = w.process();
    // A warm view, then most of the upper band taken, so concurrent picks crowd the few left.
    await one.assign('warm-00000000000000', owner, [{ slot: 'p', range }], FRESH);
    const fill = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        one.assign(`fill-${String(i).padStart(14, '0')}`, owner, [{ slot: 'p', range }], FRESH),
      ),
    );
    const conflicts = fill.reduce((sum, assignment) => sum + assignment.conflicts, 0);
    expect(conflicts).toBe(0);
    expect(new Set(fill.map((a) => a.grants[0]?.value)).size).toBe(150);
  });

  it('does not claim a value a scan showed free that another of its own claims took and settled meanwhile', async () => {
    const w = await world();
    const range = nodePortRange(parsePortRange('30000-30199') as PortRange);
    // The first scan reads the store at once but answers only when let go: its blocks are then
    // older than a claim this process sent and settled in between.
    let release = () => {};
    const letGo = new Promise<void>((resolve) => {
      release = resolve;
    });
    let readDone = () => {};
    const firstRead = new Promise<void>((resolve) => {
      readDone = resolve;
    });
    let scans = 0;
    const store = w.store;
    const slowFirstScan: AllocationStore = {
      ...forwardingAllocationStore(store),
      scanBlocks: (key, from, to) => {
        const first = scans++ === 0;
        return (async function* () {
          const read: Block[] = [];
          for await (const block of store.scanBlocks(key, from, to)) read.push(block);
          if (first) {
            readDone();
            await letGo;
          }
          yield* read;
        })();
      },
    };
    // The same random draws for both requests: both scans start at one value.
    const one = new ExclusiveAllocator({ store: slowFirstScan, random: () => 0.5, now: () => 0 });
    const slow = one.assign('slow-00000000000000', owner, [{ slot: 'p', range }], FRESH);
    await firstRead;
    const quick = await one.assign('quick-0000000000000', owner, [{ slot: 'p', range }], FRESH);
    release();
    const late = await slow;
    expect(late.conflicts).toBe(0);
    expect(late.grants[0]?.value).not.toBe(quick.grants[0]?.value);
  });

  const cidr = (text: string) => clusterIpRange(parseCidr(text) ?? fail(text));
  const fail = (text: string): never => {
    throw new Error(`bad CIDR ${text}`);
  };

  it('reads the store once, then claims with no read while the view has free values', async () => {
    const w = await world();
    const range = cidr('10.96.0.0/24');
    // The first value lands mid-range, in a block whose 32 slots are all in the upper band: the
    // claim's answer teaches the view that block, which holds the next 20 (a block that overlaps
    // the reserved band would hold fewer, and the view would rightly send the pick to the store).
    const a = w.process(() => 0.5);
    await a.assign('first-000000000000000', owner, [{ slot: 'ip', range }], FRESH);
    const warm = w.meter.totals();
    for (let i = 0; i < 20; i++) {
      await a.assign(`warm-${String(i).padStart(15, '0')}`, owner, [{ slot: 'ip', range }], FRESH);
    }
    const after = w.meter.totals();
    expect(after.readRequests - warm.readRequests).toBe(0);
    // An owner record and a claim each.
    expect(after.writeRequests - warm.writeRequests).toBe(40);
  });

  it('never hands one value to two owners when processes with stale views race, and fills the range exactly', async () => {
    const w = await world();
    const range = nodePortRange(parsePortRange('30000-30099') as PortRange);
    const processes = [w.process(), w.process(), w.process()];
    const grants = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const process = processes[i % processes.length] as ExclusiveAllocator;
        const id = `race-${String(i).padStart(15, '0')}`;
        const { grants: got } = await process.assign(id, owner, [{ slot: 'p', range }], FRESH);
        return { id, value: got[0]?.value ?? '' };
      }),
    );
    expect(new Set(grants.map((g) => g.value)).size).toBe(100);
    const held = await w.held(range);
    expect(held.size).toBe(100);
    for (const { id, value } of grants) expect(held.get(range.offsetOf(value) ?? -1)).toBe(id);
    await expect(
      (processes[0] as ExclusiveAllocator).assign(
        'late-00000000000000',
        owner,
        [{ slot: 'p', range }],
        FRESH,
      ),
    ).rejects.toThrow(RangeFullError);
  });

  it('takes the reserved band only once the upper band is full, whatever a stale view shows', async () => {
    const w = await world();
    const range = cidr('10.97.0.0/26');
    const processes = [w.process(), w.process()];
    const usable = range.size;
    for (let i = 0; i < usable; i++) {
      const process = processes[i % 2] as ExclusiveAllocator;
      const { grants } = await process.assign(
        `band-${String(i).padStart(15, '0')}`,
        owner,
        [{ slot: 'ip', range }],
        FRESH,
      );
      const offset = range.offsetOf(grants[0]?.value ?? '') ?? -1;
      if (offset < range.reservedBand) {
        const held = await w.held(range);
        for (let upper = range.reservedBand; upper < range.size; upper++) {
          expect(held.has(upper)).toBe(true);
        }
      }
    }
  });
});

describe('BlockView picks', () => {
  it('finds the one free value past blocks with room only in the reserved band', () => {
    const range = nodePortRange(parsePortRange('30000-32767') as PortRange);
    expect(range.reservedBand).toBeGreaterThanOrEqual(BLOCK_SIZE);
    const view = new BlockView();
    view.apply('r', { index: 0, holders: new Map() }, view.stamp());
    const holders = new Map(Array.from({ length: BLOCK_SIZE }, (_, slot) => [slot, 'x']));
    holders.delete(7);
    view.apply('r', { index: 5, holders }, view.stamp());
    // Random draws that always land on the first block with room, block 0, first.
    expect(view.pick(range, 'r', () => 0, new Set())).toBe(5 * BLOCK_SIZE + 7);
  });

  it('answers a value free in the newest known block whenever one exists, and undefined only when none does', () => {
    const range = nodePortRange(parsePortRange('30000-30999') as PortRange);
    const blocks = Math.ceil(range.size / BLOCK_SIZE);
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            index: fc.integer({ min: 0, max: blocks - 1 }),
            taken: fc.array(fc.integer({ min: 0, max: BLOCK_SIZE - 1 }), {
              maxLength: BLOCK_SIZE * 2,
            }),
          }),
          { maxLength: 40 },
        ),
        fc.array(fc.integer({ min: 0, max: range.size - 1 }), { maxLength: 50 }),
        (answers, skipped) => {
          const view = new BlockView();
          const latest = new Map<number, Set<number>>();
          for (const { index, taken } of answers) {
            const holders = new Map(taken.map((slot) => [slot, 'x']));
            view.apply('r', { index, holders }, view.stamp());
            latest.set(index, new Set(taken));
          }
          const skip = new Set<Offset>(skipped);
          const free = (offset: Offset) =>
            offset >= range.reservedBand &&
            offset < range.size &&
            !skip.has(offset) &&
            latest.get(Number(blockIndexOf(offset)))?.has(slotOf(offset)) === false;
          const any = [...latest.keys()].some((index) =>
            Array.from({ length: BLOCK_SIZE }, (_, slot) => index * BLOCK_SIZE + slot).some(free),
          );
          const picked = view.pick(range, 'r', Math.random, skip);
          if (picked === undefined) expect(any).toBe(false);
          else expect(free(picked)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('BlockView memory', () => {
  it('forgets the least recently learned block past its bound', () => {
    const range = clusterIpRange(parseCidr('10.0.0.0/8') ?? (undefined as never));
    const view = new BlockView();
    for (let index = 10; index < 10 + MAX_BLOCKS_PER_RANGE + 1; index++) {
      view.apply('r', { index, holders: new Map() }, view.stamp());
    }
    // Block 10, learned first, is unknown again; block 11 is still known and free.
    const seen = new Set<Offset>();
    for (let i = 0; i < 2_000; i++) {
      const offset = view.pick(range, 'r', Math.random, new Set());
      if (offset !== undefined) seen.add(blockIndexOf(offset));
    }
    expect(seen.has(10)).toBe(false);
    expect(seen.size).toBeGreaterThan(100);
    expect(Math.min(...[...seen].map(Number))).toBeGreaterThanOrEqual(11);
  });
});

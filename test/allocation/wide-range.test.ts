/**
 * IPv6 service ranges up to a /64: allocation, the store's block keys past 10^7 blocks, and
 * usage, all against DynamoDB Local, with costs that follow what the range holds, never its width.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimKey, ExclusiveAllocator, rangeKey } from '../../shared/allocation/allocator.js';
import { ValueAllocatedError } from '../../shared/allocation/errors.js';
import type { AllocationStore, Block } from '../../shared/allocation/store.js';
import { exclusiveRangeUsage } from '../../shared/allocation/usage.js';
import { cidrContains, parseCidr, parseIp } from '../../shared/net/ip.js';
import {
  bigOffset,
  blockIndexOf,
  compareOffsets,
  lastBlockOf,
  type Offset,
  offsetAt,
  toOffset,
} from '../../shared/net/offset.js';
import { clusterIpRange, type ValueRange } from '../../shared/net/value-range.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import type { Owner } from '../../shared/vocabulary/owner.js';
import { seededRandom } from '../../sim/random.js';
import { forwardingAllocationStore } from '../support/allocation-store.js';
import { freshTable } from '../support/dynamo.js';

const owner: Owner = { kind: 'Service', namespace: 'default', name: 'svc' };
const NOW = 1_700_000_000_000;
let seq = 0;

async function newStore(): Promise<DynamoAllocationStore> {
  const { client, tableName } = await freshTable();
  return new DynamoAllocationStore({ client, tableName, cluster: `w${seq++}` });
}

/** A /64 or a /108 at a random place in fd00::/8. */
const wideRange = fc
  .record({
    network: fc.bigInt({ min: 0n, max: (1n << 56n) - 1n }),
    hostBits: fc.constantFrom(64, 20),
  })
  .map(({ network, hostBits }) => {
    const value = ((0xfdn << 120n) | (network << 64n)) & ~((1n << BigInt(hostBits)) - 1n);
    return clusterIpRange({
      family: 'IPv6',
      network: value,
      prefixLength: 128 - hostBits,
      hostBits,
    });
  });

/** The store calls an allocator made: a scan and a claim are one round trip each. */
function counting(store: AllocationStore) {
  const calls = { scans: 0, blocksRead: 0, claims: 0 };
  const counted: AllocationStore = {
    ...forwardingAllocationStore(store),
    scanBlocks: async function* (key, from, to) {
      calls.scans++;
      for await (const block of store.scanBlocks(key, from, to)) {
        calls.blocksRead++;
        yield block;
      }
    },
    claim: (key, offset, id) => {
      calls.claims++;
      return store.claim(key, offset, id);
    },
  };
  return { calls, store: counted };
}

function cidr(text: string): ValueRange {
  const block = parseCidr(text);
  if (!block) throw new Error(`bad test CIDR ${text}`);
  return clusterIpRange(block);
}

const inRange = (range: ValueRange, value: string) => {
  const block = parseCidr(range.name);
  const address = parseIp(value);
  return block !== undefined && address !== undefined && cidrContains(block, address);
};

type Step =
  | { readonly kind: 'dynamic'; readonly process: number }
  | {
      readonly kind: 'static';
      readonly process: number;
      readonly near: number;
      readonly by: number;
    }
  | { readonly kind: 'release'; readonly which: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('dynamic' as const), process: fc.nat(1) }),
  fc.record({
    kind: fc.constant('static' as const),
    process: fc.nat(1),
    near: fc.nat(),
    by: fc.integer({ min: -2, max: 2 }),
  }),
  fc.record({ kind: fc.constant('release' as const), which: fc.nat() }),
);

describe('ExclusiveAllocator on a /64 or a /108', () => {
  it('never hands one address to two owners, and every address is in the range', async () => {
    await fc.assert(
      fc.asyncProperty(
        wideRange,
        fc.array(step, { minLength: 5, maxLength: 25 }),
        fc.integer(),
        async (range, steps, seed) => {
          const store = await newStore();
          const random = seededRandom(seed);
          // Two processes, each with its own view of the blocks, over one store.
          const processes = [0, 1].map(
            () => new ExclusiveAllocator({ store, random, now: () => NOW }),
          );
          const holder = new Map<string, string>();
          const live: string[] = [];
          for (const [n, s] of steps.entries()) {
            const id = `o${n}`;
            if (s.kind === 'release') {
              const gone = live.splice(s.which % Math.max(1, live.length), 1)[0];
              if (gone === undefined) continue;
              const a = processes[0] as ExclusiveAllocator;
              const record = await a.giveBack(gone);
              if (record)
                expect(await a.settle(record, { free: record.releasing ?? [] })).toBe(true);
              for (const [value, who] of holder) if (who === gone) holder.delete(value);
              continue;
            }
            const a = processes[s.process] as ExclusiveAllocator;
            let value: string | undefined;
            if (s.kind === 'static') {
              // An address next to one handed out, so requests meet taken values.
              const known = [...holder.keys()];
              const base = known[s.near % Math.max(1, known.length)] ?? range.valueAt(300);
              const offset = bigOffset(range.offsetOf(base) ?? 300) + BigInt(s.by);
              value = range.valueAt(toOffset(offset < 0n ? 0n : offset));
            }
            const request = { slot: 'clusterIP/IPv6', range, ...(value ? { value } : {}) };
            try {
              const { grants } = await a.assign(id, owner, [request], { current: 'none' });
              const granted = grants[0]?.value ?? '';
              expect(inRange(range, granted)).toBe(true);
              expect(holder.get(granted)).toBeUndefined();
              holder.set(granted, id);
              live.push(id);
            } catch (error) {
              expect(error).toBeInstanceOf(ValueAllocatedError);
              expect(value === undefined ? false : holder.has(value)).toBe(true);
            }
          }
          // The store agrees with the model: the same values, each under its one owner.
          const stored = new Map<string, string>();
          for await (const block of store.scanBlocks(
            rangeKey(range),
            0,
            lastBlockOf(range.exactSize),
          )) {
            for (const [slot, id] of block.holders) {
              stored.set(range.valueAt(offsetAt(block.index, slot)), id);
            }
          }
          expect(stored).toEqual(holder);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('allocates from a fresh /64 with one scan, then one claim per allocation and no read', async () => {
    const range = cidr('fd00:1:2:3::/64');
    const { calls, store } = counting(await newStore());
    const a = new ExclusiveAllocator({ store, random: seededRandom(7), now: () => NOW });
    await a.assign('first', owner, [{ slot: 'ip', range }], { current: 'none' });
    expect(calls).toMatchObject({ scans: 1, claims: 1 });
    for (let i = 0; i < 40; i++) {
      await a.assign(`o${i}`, owner, [{ slot: 'ip', range }], { current: 'none' });
    }
    // A warm process picks from blocks it knows: 31 more values fit the first block, and the
    // next block is learned from the scan that finds it, never from a walk over the range.
    expect(calls.claims).toBe(41);
    expect(calls.scans).toBeLessThanOrEqual(2);
    expect(calls.blocksRead).toBeLessThanOrEqual(2);
  });
});

describe('DynamoAllocationStore block keys', () => {
  it('scans the blocks of a /64 in index order across 10^7 and 2^53', async () => {
    const range = cidr('fd00::/64');
    const store = await newStore();
    const key = rangeKey(range);
    const offsets: Offset[] = [
      5,
      9_999_999 * 32,
      10_000_000 * 32 + 3,
      10_000_001 * 32,
      Number.MAX_SAFE_INTEGER,
      toOffset(bigOffset(Number.MAX_SAFE_INTEGER) + 40n),
      toOffset((1n << 64n) - 2n),
    ];
    for (const [i, offset] of [...offsets].reverse().entries()) {
      expect((await store.claim(key, offset, `o${i}`)).taken).toBe(true);
    }
    const indexes: Offset[] = [];
    const values: string[] = [];
    for await (const block of store.scanBlocks(key, 0, lastBlockOf(range.exactSize))) {
      indexes.push(block.index);
      for (const slot of block.holders.keys()) {
        values.push(range.valueAt(offsetAt(block.index, slot)));
      }
    }
    const expected = [...new Set(offsets.map(blockIndexOf))].sort(compareOffsets);
    expect(indexes).toEqual(expected);
    expect(values).toEqual(offsets.map((o) => range.valueAt(o)));
    expect(values.at(-1)).toBe('fd00::ffff:ffff:ffff:ffff');
    // A part of the range: only the blocks in it.
    const middle: Block[] = [];
    for await (const block of store.scanBlocks(key, 9_999_999, 10_000_000)) middle.push(block);
    expect(middle.map((b) => b.index)).toEqual([9_999_999, 10_000_000]);
  });
});

describe('exclusiveRangeUsage on a /64', () => {
  it('counts values and blocks from the blocks in use, reading nothing else', async () => {
    const range = cidr('fd00:aa::/64');
    const base = await newStore();
    const key = rangeKey(range);
    const taken = [300, 301, 2_000_000, toOffset(1n << 60n), toOffset((1n << 64n) - 2n)];
    for (const [i, offset] of taken.entries()) await base.claim(key, offset, `o${i}`);
    const { calls, store } = counting(base);
    const usage = await exclusiveRangeUsage(store, range);
    expect(usage).toEqual({
      name: range.name,
      kind: 'clusterIP',
      size: 2 ** 64,
      used: 5,
      blocks: 4,
    });
    expect(calls.blocksRead).toBe(4);
    expect(claimKey({ range: key, offset: taken[3] as Offset })).toBe(`${key}#${1n << 60n}`);
  });

  it('reports no block count for a range a share of which still means something', async () => {
    const range = cidr('fd00::/108');
    const usage = await exclusiveRangeUsage(await newStore(), range);
    expect(usage).toEqual({ name: 'fd00::/108', kind: 'clusterIP', size: 1048575, used: 0 });
  });
});

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExclusiveAllocator, rangeKey } from '../../shared/allocation/allocator.js';
import {
  RangeFullError,
  ValueAllocatedError,
  ValueNotInRangeError,
} from '../../shared/allocation/errors.js';
import type { AllocationStore } from '../../shared/allocation/store.js';
import { parseCidr } from '../../shared/net/ip.js';
import { type Offset, offsetAt } from '../../shared/net/offset.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';
import { clusterIpRange, nodePortRange, type ValueRange } from '../../shared/net/value-range.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import type { Owner } from '../../shared/vocabulary/owner.js';
import { forwardingAllocationStore } from '../support/allocation-store.js';
import { freshTable } from '../support/dynamo.js';
import { freeOwner } from '../support/free-owner.js';

const owner: Owner = { kind: 'Service', namespace: 'default', name: 'svc' };

function cidr(text: string): ValueRange {
  const block = parseCidr(text);
  if (!block) throw new Error(`bad test CIDR ${text}`);
  return clusterIpRange(block);
}

function ports(text: string): ValueRange {
  return nodePortRange(parsePortRange(text) as PortRange);
}

let store: DynamoAllocationStore;
let seq = 0;
const newStore = async () => {
  const { client, tableName } = await freshTable();
  return new DynamoAllocationStore({ client, tableName, cluster: `c${seq++}` });
};
const allocator = (s: AllocationStore = store, random = Math.random) =>
  new ExclusiveAllocator({ store: s, random, now: () => 1_700_000_000_000 });

beforeAll(async () => {
  store = await newStore();
});

describe('ExclusiveAllocator', () => {
  it('hands out every usable address of a /29 once, then answers range is full', async () => {
    const range = cidr('192.168.7.0/29');
    const a = allocator(await newStore());
    const got = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const { grants } = await a.assign(`o${i}`, owner, [{ slot: 'ip', range }]);
      got.add(grants[0]?.value ?? '');
    }
    expect([...got].sort()).toEqual([
      '192.168.7.1',
      '192.168.7.2',
      '192.168.7.3',
      '192.168.7.4',
      '192.168.7.5',
      '192.168.7.6',
    ]);
    await expect(a.assign('o6', owner, [{ slot: 'ip', range }])).rejects.toThrow(RangeFullError);
    await expect(a.assign('o6', owner, [{ slot: 'ip', range }])).rejects.toThrow('range is full');
  });

  it('fills the upper band before touching the reserved lower band', async () => {
    const range = cidr('10.1.0.0/27'); // 30 usable, band min(max(16, 32/16), 256) = 16
    expect(range.reservedBand).toBe(16);
    const a = allocator(await newStore());
    const offsets: Offset[] = [];
    for (let i = 0; i < 30; i++) {
      const { grants } = await a.assign(`o${i}`, owner, [{ slot: 'ip', range }]);
      offsets.push(range.offsetOf(grants[0]?.value ?? '') ?? -1);
    }
    expect(offsets.slice(0, 14).every((o) => o >= 16)).toBe(true);
    expect(offsets.slice(14).every((o) => o < 16)).toBe(true);
    expect(new Set(offsets).size).toBe(30);
  });

  it('picks a released value again when it is the only free one', async () => {
    const range = ports('30000-30009');
    const a = allocator(await newStore());
    for (let i = 0; i < 10; i++) await a.assign(`o${i}`, owner, [{ slot: 'p', range }]);
    const record = await a.holding('o4');
    const value = range.valueAt(record?.claims[0]?.offset ?? -1);
    await freeOwner(a, 'o4');
    const { grants } = await a.assign('late', owner, [{ slot: 'p', range }]);
    expect(grants[0]?.value).toBe(value);
  });

  it('answers the kube-apiserver texts for taken and out-of-range requests', async () => {
    const ipRange = cidr('10.100.0.0/16');
    const portRange = ports('30000-32767');
    const a = allocator();
    await a.assign('first', owner, [{ slot: 'ip', range: ipRange, value: '10.100.0.10' }]);
    await expect(
      a.assign('second', owner, [{ slot: 'ip', range: ipRange, value: '10.100.0.10' }]),
    ).rejects.toThrow(new ValueAllocatedError(ipRange, '10.100.0.10').message);
    await expect(
      a.assign('x', owner, [{ slot: 'ip', range: ipRange, value: '10.101.0.1' }]),
    ).rejects.toThrow(
      'the provided IP (10.101.0.1) is not in the valid range. The range of valid IPs is 10.100.0.0/16',
    );
    await expect(
      a.assign('y', owner, [{ slot: 'p', range: portRange, value: '80' }]),
    ).rejects.toThrow(
      'provided port is not in the valid range. The range of valid ports is 30000-32767',
    );
    await a.assign('np', owner, [{ slot: 'p', range: portRange, value: '30080' }]);
    await expect(
      a.assign('np2', owner, [{ slot: 'p', range: portRange, value: '30080' }]),
    ).rejects.toThrow('provided port is already allocated');
  });

  it('never hands out the network or the IPv4 broadcast address', async () => {
    const range = cidr('10.9.9.0/30');
    expect(range.size).toBe(2);
    expect(range.offsetOf('10.9.9.0')).toBeUndefined();
    expect(range.offsetOf('10.9.9.3')).toBeUndefined();
    const a = allocator(await newStore());
    await expect(a.assign('n', owner, [{ slot: 'ip', range, value: '10.9.9.3' }])).rejects.toThrow(
      ValueNotInRangeError,
    );
    const values = [];
    for (let i = 0; i < 2; i++)
      values.push((await a.assign(`o${i}`, owner, [{ slot: 'ip', range }])).grants[0]?.value);
    expect(values.sort()).toEqual(['10.9.9.1', '10.9.9.2']);
  });

  it('allocates IPv6 addresses, the last one of the block included', async () => {
    const range = cidr('fd00:10::/124');
    expect(range.size).toBe(15);
    const a = allocator(await newStore());
    const { grants } = await a.assign('v6', owner, [{ slot: 'ip', range, value: 'fd00:10::f' }]);
    expect(grants[0]?.value).toBe('fd00:10::f');
    const dynamic = await a.assign('v6b', owner, [{ slot: 'ip', range }]);
    expect(dynamic.grants[0]?.value).toMatch(/^fd00:10::[0-9a-e]$/);
  });

  it('gives the same owner the same value when it asks again, and frees once', async () => {
    const range = ports('30000-32767');
    const s = await newStore();
    const a = allocator(s);
    const first = await a.assign('same', owner, [{ slot: 'p', range }]);
    const again = await a.assign('same', owner, [{ slot: 'p', range }]);
    expect(again.grants).toEqual(first.grants);
    expect(await freeOwner(a, 'same')).toHaveLength(1);
    expect(await freeOwner(a, 'same')).toHaveLength(0);
  });

  it('completes an allocation that crashed between the owner record and the claim', async () => {
    const range = ports('30000-32767');
    const s = await newStore();
    // The process dies after writing its intent: the claim and the rollback never happen.
    const died = () => Promise.reject(new Error('lambda timed out'));
    const crashing: AllocationStore = {
      ...forwardingAllocationStore(s),
      deleteOwner: died,
      claim: died,
      release: died,
    };
    await expect(
      allocator(crashing).assign('crash', owner, [{ slot: 'p', range }]),
    ).rejects.toThrow('lambda timed out');
    const intended = (await s.getOwner('crash'))?.claims[0]?.offset ?? -1;
    expect(intended).toBeGreaterThanOrEqual(0);

    const { grants } = await allocator(s).assign('crash', owner, [{ slot: 'p', range }]);
    expect(grants[0]?.value).toBe(range.valueAt(intended));
    await expect(
      allocator(s).assign('other', owner, [{ slot: 'p', range, value: range.valueAt(intended) }]),
    ).rejects.toThrow(ValueAllocatedError);
  });

  it('gives back what it claimed when a later static request of the same owner fails', async () => {
    const range = ports('30000-30100');
    const s = await newStore();
    const a = allocator(s);
    await a.assign('holder', owner, [{ slot: 'p', range, value: '30050' }]);
    await expect(
      a.assign('multi', owner, [
        { slot: 'a', range, value: '30010' },
        { slot: 'b', range, value: '30050' },
      ]),
    ).rejects.toThrow(ValueAllocatedError);
    expect(await a.holding('multi')).toBeUndefined();
    const { grants } = await a.assign('next', owner, [{ slot: 'p', range, value: '30010' }]);
    expect(grants[0]?.value).toBe('30010');
  });

  it('lets one of two Services asking for the same IP and node port at once have both', async () => {
    const ip = cidr('10.7.0.0/24');
    const port = ports('30000-30100');
    const base = await newStore();
    // Each write of the one reaches the store slowly where the other's is quick: claimed all at
    // once, a wins the IP and b the port, and both give up.
    const slow = new Set([`a#${rangeKey(port)}`, `b#${rangeKey(ip)}`]);
    const s: AllocationStore = {
      ...forwardingAllocationStore(base),
      claim: async (key, offset, id) => {
        if (slow.has(`${id}#${key}`)) await new Promise((resolve) => setTimeout(resolve, 50));
        return base.claim(key, offset, id);
      },
    };
    const both = (id: string) =>
      allocator(s).assign(id, owner, [
        { slot: 'clusterIP', range: ip, value: '10.7.0.200' },
        { slot: 'nodePort', range: port, value: '30060' },
      ]);
    const outcomes = await Promise.allSettled([both('a'), both('b')]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    const winner = outcomes[0]?.status === 'fulfilled' ? 'a' : 'b';
    expect((await allocator(s).holding(winner))?.claims).toHaveLength(2);
  });

  it('changes nothing on a dry run and still denies a taken static value', async () => {
    const range = ports('30000-30100');
    const s = await newStore();
    const a = allocator(s);
    await a.assign('holder', owner, [{ slot: 'p', range, value: '30050' }]);
    const dry = await a.assign('dry', owner, [{ slot: 'p', range }], { dryRun: true });
    expect(range.offsetOf(dry.grants[0]?.value ?? '')).toBeDefined();
    expect(await a.holding('dry')).toBeUndefined();
    await expect(
      a.assign('dry2', owner, [{ slot: 'p', range, value: '30050' }], { dryRun: true }),
    ).rejects.toThrow('provided port is already allocated');
  });

  it('keeps held values, allocates new slots and releases dropped ones on reassignment', async () => {
    const range = ports('30000-32767');
    const s = await newStore();
    const a = allocator(s);
    const first = await a.assign('svc', owner, [
      { slot: 'a', range },
      { slot: 'b', range },
    ]);
    const kept = first.grants.find((g) => g.slot === 'a')?.value;
    const dropped = first.grants.find((g) => g.slot === 'b')?.value ?? '';
    const second = await a.assign('svc', owner, [
      { slot: 'a', range },
      { slot: 'c', range },
    ]);
    expect(second.grants.find((g) => g.slot === 'a')?.value).toBe(kept);
    expect(second.releasing.map((c) => c.slot)).toEqual(['b']);
    // Given back, still held: nobody gets it before the settle step frees it.
    await expect(
      a.assign('other', owner, [{ slot: 'x', range, value: dropped }]),
    ).rejects.toBeInstanceOf(ValueAllocatedError);
    const record = await a.holding('svc');
    expect(record && (await a.settle(record, { free: record.releasing ?? [] }))).toBe(true);
    const reuse = await a.assign('other', owner, [{ slot: 'x', range, value: dropped }]);
    expect(reuse.grants[0]?.value).toBe(dropped);
  });

  it('stamps each value with the admission that last added it: allocated or taken back now, kept as it was', async () => {
    const range = ports('30000-32767');
    const clock = { now: 1_000 };
    const a = new ExclusiveAllocator({
      store: await newStore(),
      random: Math.random,
      now: () => clock.now,
    });
    const first = await a.assign('svc', owner, [
      { slot: 'a', range },
      { slot: 'b', range },
    ]);
    const b = first.grants.find((g) => g.slot === 'b')?.value ?? '';
    clock.now = 2_000;
    await a.assign('svc', owner, [{ slot: 'a', range }]);
    clock.now = 3_000;
    // A refused change retried: the value given back is asked for again before it was freed.
    await a.assign(
      'svc',
      owner,
      [
        { slot: 'a', range },
        { slot: 'b', range, value: b },
      ],
      { base: '42' },
    );
    const record = await a.holding('svc');
    expect(record?.claims.map((c) => [c.slot, c.claimedAt, c.addedOn])).toEqual([
      ['a', 1_000, undefined],
      ['b', 3_000, '42'],
    ]);
    expect(record?.releasing ?? []).toEqual([]);
  });

  it('never gives one value to two of 32 concurrent allocators, and accounts for every value', async () => {
    const range = ports('30000-30063'); // 64 ports in two blocks, 32 owners taking two each
    const s = await newStore();
    const results = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        allocator(s).assign(`c${i}`, owner, [
          { slot: 'a', range },
          { slot: 'b', range },
        ]),
      ),
    );
    const values = results.flatMap((r) => r.grants.map((g) => g.value));
    expect(values).toHaveLength(64);
    expect(new Set(values).size).toBe(64);
    const holders = new Map<Offset, string>();
    for await (const block of s.scanBlocks(rangeKey(range), 0, 3)) {
      for (const [slot, holder] of block.holders) holders.set(offsetAt(block.index, slot), holder);
    }
    expect(holders.size).toBe(64);
    for (const [i, r] of results.entries()) {
      for (const g of r.grants) expect(holders.get(range.offsetOf(g.value) ?? -1)).toBe(`c${i}`);
    }
    await expect(allocator(s).assign('late', owner, [{ slot: 'a', range }])).rejects.toThrow(
      RangeFullError,
    );
  });

  it('claims a fresh id while its intent is written, and still never duplicates under 32 writers', async () => {
    const range = ports('30000-30063');
    const s = await newStore();
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        allocator(s).assign(`f${i}`, owner, [{ slot: 'p', range }], { current: 'none' }),
      ),
    );
    const values = results.map((r) => r.grants[0]?.value);
    expect(new Set(values).size).toBe(64);
    for (const [i, r] of results.entries()) {
      expect((await s.getOwner(`f${i}`))?.claims[0]?.offset).toBe(
        range.offsetOf(r.grants[0]?.value ?? ''),
      );
    }
  });

  it('continues the scan after a lost claim inside the block the failed write returned', async () => {
    const range = ports('30000-30099'); // band 16: dynamic picks start at offset 16
    const s = await newStore();
    // A rival takes the value the scan starts at, between our read and our claim.
    let scans = 0;
    const racing: AllocationStore = {
      ...forwardingAllocationStore(s),
      scanBlocks: (key, from, to) => {
        scans++;
        return s.scanBlocks(key, from, to);
      },
      claim: async (key, offset, id) => {
        if (id === 'me' && offset === 40) await s.claim(key, 40, 'rival');
        return s.claim(key, offset, id);
      },
    };
    const startAt40 = () => (40 - 16) / (100 - 16);
    const { grants, conflicts } = await allocator(racing, startAt40).assign('me', owner, [
      { slot: 'p', range },
    ]);
    expect(conflicts).toBe(1);
    expect(grants[0]?.value).toBe('30041');
    expect(scans).toBe(1); // only the first pick read blocks; the re-pick used the returned one
    expect((await s.getOwner('me'))?.claims[0]?.offset).toBe(41);
  });

  it('keeps store and model equal under random assign, release and dry-run sequences', async () => {
    const range = ports('30000-30019');
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            op: fc.constantFrom('assign', 'release', 'dry'),
            owner: fc.integer({ min: 0, max: 7 }),
            slots: fc.integer({ min: 1, max: 3 }),
            seed: fc.double({ min: 0, max: 0.999, noNaN: true }),
          }),
          { maxLength: 25 },
        ),
        async (steps) => {
          const s = await newStore();
          const model = new Map<string, string[]>();
          for (const step of steps) {
            const id = `o${step.owner}`;
            const a = allocator(s, () => step.seed);
            const requests = Array.from({ length: step.slots }, (_, i) => ({
              slot: `s${i}`,
              range,
            }));
            if (step.op === 'release') {
              await freeOwner(a, id);
              model.delete(id);
              continue;
            }
            try {
              const result = await a.assign(id, owner, requests, { dryRun: step.op === 'dry' });
              if (step.op === 'assign') {
                // What it gave back stays its own until the settle step frees it.
                const given = result.releasing.map((c) => range.valueAt(c.offset));
                const before = (model.get(id) ?? []).filter(
                  (v) => !result.grants.some((g) => g.value === v),
                );
                expect(before.sort()).toEqual(expect.arrayContaining(given.sort()));
                model.set(id, [...result.grants.map((g) => g.value), ...before]);
              }
            } catch (error) {
              expect(error).toBeInstanceOf(RangeFullError);
            }
          }
          const held = [...model.values()].flat();
          expect(new Set(held).size).toBe(held.length);
          const stored = new Map<string, string>();
          for await (const block of s.scanBlocks(rangeKey(range), 0, 0)) {
            for (const [slot, holder] of block.holders)
              stored.set(range.valueAt(offsetAt(block.index, slot)), holder);
          }
          expect(stored.size).toBe(held.length);
          for (const [id, values] of model) for (const v of values) expect(stored.get(v)).toBe(id);
        },
      ),
      { numRuns: 15 },
    );
  });
});

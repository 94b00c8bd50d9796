/**
 * What every `HostPortStore` answers, registered against a factory so the in-memory store of the
 * allocation tests and benches and the DynamoDB adapter cannot drift apart: records only their own
 * allocation rewrites or deletes, counts per port number across count blocks, uses refused above
 * the level an allocation chose, and a release that happens once.
 */
import { describe, expect, it } from 'vitest';
import { recordHostPorts, releaseHostPorts } from '../../shared/hostports/allocator.js';
import {
  AllocationIdTakenError,
  HostPortConflictError,
  NamespaceQuotaFullError,
} from '../../shared/hostports/errors.js';
import type { HostPortRange } from '../../shared/hostports/model.js';
import {
  ANY_COUNT,
  type HostPortStore,
  levelKey,
  type PodPortRecord,
  type RangeCounts,
  type UseLevel,
} from '../../shared/hostports/store.js';
import type { HostPortRepairStore } from '../../shared/repair/store.js';

export const range: HostPortRange = { name: 'default', first: 7000, size: 200 };

/** The pod a test record names: its id is its name. */
export const podNamed = (name: string, namespace = 'default') => ({
  kind: 'Pod' as const,
  namespace,
  name,
  generateName: '',
});

export function record(
  id: string,
  ports: readonly number[],
  options: { namespace?: string; token?: string; quotaUnits?: number } = {},
): PodPortRecord {
  return {
    id,
    pod: { kind: 'Pod', namespace: options.namespace ?? 'default', name: id, generateName: '' },
    ports: ports.map((port, i) => ({ name: `p${i}`, range: 'default', port, protocol: 'UDP' })),
    createdAt: 1,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.quotaUnits === undefined ? {} : { quotaUnits: options.quotaUnits }),
  };
}

/** Every port at the level `counts` shows for it: what an allocation choosing from them sends. */
function levels(r: PodPortRecord, counts: RangeCounts): Map<string, UseLevel> {
  return new Map(
    r.ports.map((p) => [levelKey(p.range, p.port), { level: countAt(counts, p.port) }]),
  );
}

export const countAt = (counts: RangeCounts, port: number): number =>
  counts.counts[port - range.first] ?? 0;

/** Registers the contract's cases for the stores `make` builds, a fresh one per case. */
export function hostPortStoreContract(
  name: string,
  make: () => Promise<HostPortStore & HostPortRepairStore>,
): void {
  describe(`${name} keeps the HostPortStore contract`, () => {
    it('keeps a record and its uses and reads both back, across count blocks', async () => {
      const store = await make();
      // 7039/7040 straddle the 64-port block boundary at 7040 (110 × 64).
      await recordHostPorts(store, record('a', [7000, 7039, 7040, 7199]));
      await recordHostPorts(store, record('b', [7040]));
      const counts = await store.readCounts(range);
      expect([7000, 7039, 7040, 7199, 7001].map((p) => countAt(counts, p))).toEqual([
        1, 1, 2, 1, 0,
      ]);
      expect(await store.getRecord('a')).toEqual(record('a', [7000, 7039, 7040, 7199]));
      const ids: string[] = [];
      for await (const r of store.listRecords()) ids.push(r.id);
      expect(ids.sort()).toEqual(['a', 'b']);
    });

    it('answers every count item it wrote as it left it, for the caller’s view', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7039]));
      const blocks = await store.addUses(record('b', [7039, 7040]).ports);
      const byPort = new Map(blocks.flatMap((b) => [...b.counts]));
      expect(byPort.get(7039)).toBe(2);
      expect(byPort.get(7040)).toBe(1);
      expect(blocks.map((b) => b.firstPort).sort()).toEqual([6976, 7040]);
    });

    it('adds two uses when two held ports share a number (TCP-only and UDP-only of one pod)', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7005, 7005]));
      expect(countAt(await store.readCounts(range), 7005)).toBe(2);
      await releaseHostPorts({ store }, 'a', podNamed('a', 'default'));
      expect(countAt(await store.readCounts(range), 7005)).toBe(0);
    });

    it('refuses uses above the level chosen, takes back the items it did change, and answers them as found', async () => {
      const store = await make();
      const seen = await store.readCounts(range);
      await recordHostPorts(store, record('a', [7010]));
      const late = record('b', [7010, 7100]);
      const refusal = await store
        .addUses(late.ports, levels(late, seen))
        .catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(HostPortConflictError);
      const found = new Map(
        (refusal as HostPortConflictError).blocks.flatMap((b) => [...b.counts]),
      );
      expect(found.get(7010)).toBe(1);
      const counts = await store.readCounts(range);
      expect([countAt(counts, 7010), countAt(counts, 7100)]).toEqual([1, 0]);
    });

    it('takes one use above the level chosen only when its item had a use added since the allocation began', async () => {
      const store = await make();
      const port = record('a', [7020]).ports;
      const level = (since: number) =>
        new Map([[levelKey('default', 7020), { level: 0, concurrentSince: since }]]);
      await store.addUses(port, undefined, 100);
      // The use the choice missed was added at 100, not after 100: an allocation finished before.
      const refusal = await store.addUses(port, level(100), 101).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(HostPortConflictError);
      expect((refusal as HostPortConflictError).blocks[0]?.writtenAt).toBe(100);
      // Added after 99: a concurrent allocation's; this one lands beside it.
      const landed = await store.addUses(port, level(99), 102);
      expect(landed[0]?.counts.get(7020)).toBe(2);
      expect(landed[0]?.writtenAt).toBe(102);
      // Never two above the level chosen.
      await expect(store.addUses(port, level(0), 103)).rejects.toThrow(HostPortConflictError);
      expect(countAt(await store.readCounts(range), 7020)).toBe(2);
    });

    it('takes a use whose count fell below the level chosen (a release meanwhile)', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7010]));
      const seen = await store.readCounts(range);
      await releaseHostPorts({ store }, 'a', podNamed('a', 'default'));
      const next = record('b', [7010]);
      await store.addUses(next.ports, levels(next, seen));
      expect(countAt(await store.readCounts(range), 7010)).toBe(1);
    });

    it('takes a use at ANY_COUNT whatever the count, with no conflict', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7020, 7020, 7020]));
      const next = record('b', [7020]);
      await store.addUses(next.ports, new Map([[levelKey('default', 7020), { level: ANY_COUNT }]]));
      expect(countAt(await store.readCounts(range), 7020)).toBe(4);
    });

    it('lets an allocation rewrite its own record, and nobody else', async () => {
      const store = await make();
      await store.putRecord(record('a', [7010], { token: 't1' }));
      await store.putRecord(record('a', [7011], { token: 't1' }));
      expect((await store.getRecord('a'))?.ports.map((p) => p.port)).toEqual([7011]);
      await expect(store.putRecord(record('a', [7012], { token: 't2' }))).rejects.toThrow(
        AllocationIdTakenError,
      );
      await expect(store.putRecord(record('a', [7012]))).rejects.toThrow(AllocationIdTakenError);
      // Only its own allocation deletes a record by token.
      expect(await store.deleteRecord('a', podNamed('a', 'default'), 't2')).toBeUndefined();
      expect((await store.deleteRecord('a', podNamed('a', 'default'), 't1'))?.id).toBe('a');
    });

    it('records ports for repair without a second record under one id', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7010]));
      await expect(recordHostPorts(store, record('a', [7011]))).rejects.toThrow(
        AllocationIdTakenError,
      );
      expect(countAt(await store.readCounts(range), 7011)).toBe(0);
    });

    it('releases exactly once, even when many releases of one id run at once', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7010, 7011]));
      await recordHostPorts(store, record('b', [7010]));
      const results = await Promise.all(
        Array.from({ length: 6 }, () => releaseHostPorts({ store }, 'a', podNamed('a', 'default'))),
      );
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      const counts = await store.readCounts(range);
      expect([countAt(counts, 7010), countAt(counts, 7011)]).toEqual([1, 0]);
      expect(await releaseHostPorts({ store }, 'a', podNamed('a', 'default'))).toBeUndefined();
    });

    it("releases nothing for a pod that only carries another pod's id", async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7010]));
      expect(await releaseHostPorts({ store }, 'a', podNamed('copy'))).toBeUndefined();
      expect(countAt(await store.readCounts(range), 7010)).toBe(1);
      expect((await releaseHostPorts({ store }, 'a', podNamed('a')))?.id).toBe('a');
    });

    it('releases a record written before the apiserver named the pod for the pod it named', async () => {
      const store = await make();
      const unnamed = record('a', [7010]);
      await recordHostPorts(store, {
        ...unnamed,
        pod: { kind: 'Pod', namespace: 'default', name: '', generateName: 'gs-' },
      });
      const other = {
        kind: 'Pod' as const,
        namespace: 'default',
        name: 'lobby-x1',
        generateName: 'lobby-',
      };
      expect(await releaseHostPorts({ store }, 'a', other)).toBeUndefined();
      const named = {
        kind: 'Pod' as const,
        namespace: 'default',
        name: 'gs-x7k2p',
        generateName: 'gs-',
      };
      expect((await releaseHostPorts({ store }, 'a', named))?.id).toBe('a');
      expect(countAt(await store.readCounts(range), 7010)).toBe(0);
    });

    it('hands an unnamed record to a re-invocation once, and a release decided before then loses', async () => {
      const store = await make();
      const first = {
        kind: 'Pod' as const,
        namespace: 'default',
        name: '',
        generateName: 'gs-',
        request: 'uid-1',
      };
      await recordHostPorts(store, { ...record('a', [7010]), pod: first });
      // Another namespace, generateName or request, or a record gone: nothing is handed over.
      expect(await store.handOver('a', { ...first, namespace: 'games' }, 'uid-2')).toBe(false);
      expect(await store.handOver('a', { ...first, generateName: 'lobby-' }, 'uid-2')).toBe(false);
      expect(await store.handOver('a', { ...first, request: 'uid-9' }, 'uid-2')).toBe(false);
      expect(await store.handOver('zzz', first, 'uid-2')).toBe(false);
      expect(await store.handOver('a', first, 'uid-2')).toBe(true);
      expect((await store.getRecord('a'))?.pod.request).toBe('uid-2');
      // The same hand-over retried (it landed, then the caller saw a 500) is still the hand-over.
      expect(await store.handOver('a', first, 'uid-2')).toBe(true);
      // Another request's hand-over of the record as first read finds it another request's.
      expect(await store.handOver('a', first, 'uid-3')).toBe(false);
      // A release of the record as first read frees nothing; as handed over, everything.
      expect(await releaseHostPorts({ store }, 'a', first)).toBeUndefined();
      expect(countAt(await store.readCounts(range), 7010)).toBe(1);
      expect((await releaseHostPorts({ store }, 'a', { ...first, request: 'uid-2' }))?.id).toBe(
        'a',
      );
      expect(countAt(await store.readCounts(range), 7010)).toBe(0);
      expect(await store.handOver('a', { ...first, request: 'uid-2' }, 'uid-4')).toBe(false);
    });

    it('releases nothing for another namespace or an unknown id', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7010], { namespace: 'games' }));
      expect(await releaseHostPorts({ store }, 'a', podNamed('a', 'default'))).toBeUndefined();
      expect(await releaseHostPorts({ store }, 'zzz', podNamed('zzz', 'games'))).toBeUndefined();
      expect(countAt(await store.readCounts(range), 7010)).toBe(1);
    });

    it('takes a record’s quota units with its first write, within the quota, and never on a rewrite', async () => {
      const store = await make();
      const first = record('a', [7010, 7011], { namespace: 'games', token: 't1', quotaUnits: 2 });
      await store.putRecord(first, 3);
      expect(await store.namespaceUse('games')).toBe(2);
      await store.putRecord({ ...first, ports: first.ports.slice(1), createdAt: 2 }, 3);
      await store.putRecord({ ...first, createdAt: 3 });
      expect(await store.namespaceUse('games')).toBe(2);
      // No room left: refused with the count as found, and no record written.
      const late = record('b', [7012, 7013], { namespace: 'games', token: 't2', quotaUnits: 2 });
      await expect(store.putRecord(late, 3)).rejects.toThrow(NamespaceQuotaFullError);
      await expect(store.putRecord(late, 3)).rejects.toMatchObject({ used: 2 });
      expect(await store.getRecord('b')).toBeUndefined();
      // Larger than the whole quota, on a namespace never counted.
      const big = record('c', [7014, 7015], { namespace: 'lobby', token: 't3', quotaUnits: 2 });
      await expect(store.putRecord(big, 1)).rejects.toMatchObject({ used: 0 });
      expect(await store.getRecord('c')).toBeUndefined();
      // A record of a namespace without a quota takes nothing.
      await store.putRecord(record('d', [7016], { namespace: 'free', quotaUnits: 0 }), 5);
      expect(await store.namespaceUse('free')).toBe(0);
    });

    it('gives a record’s quota units back with its delete, once, however many deletes run at once', async () => {
      const store = await make();
      const held = record('a', [7010, 7011], { namespace: 'games', token: 't1', quotaUnits: 2 });
      await store.putRecord(held, 5);
      await store.addUses(held.ports);
      await store.putRecord(
        record('b', [7012], { namespace: 'games', token: 't2', quotaUnits: 1 }),
        5,
      );
      // Another pod carrying the id gives back nothing.
      expect(await store.deleteRecord('a', podNamed('copy', 'games'))).toBeUndefined();
      expect(await store.namespaceUse('games')).toBe(3);
      const results = await Promise.all(
        Array.from({ length: 6 }, () => releaseHostPorts({ store }, 'a', podNamed('a', 'games'))),
      );
      expect(results.filter((r) => r !== undefined)).toEqual([held]);
      expect(await store.namespaceUse('games')).toBe(1);
      expect(countAt(await store.readCounts(range), 7010)).toBe(0);
      // A record that carries no units (0.2.0's) leaves the count alone.
      await store.adjustNamespaceUse('games', 1);
      await store.putRecord(record('c', [7013], { namespace: 'games' }));
      expect((await store.deleteRecord('c', podNamed('c', 'games')))?.quotaUnits).toBeUndefined();
      expect(await store.namespaceUse('games')).toBe(2);
    });

    it('marks a port held outside berth, refuses a conditioned use of it, and clears the mark', async () => {
      const store = await make();
      await store.markForeign('default', 7030, true);
      expect([...((await store.readCounts(range)).foreign ?? [])]).toEqual([30]);
      const pod = record('a', [7030]);
      await expect(
        store.addUses(pod.ports, levels(pod, await store.readCounts(range))),
      ).rejects.toThrow(HostPortConflictError);
      // Repair's own record of a pod already holding it is not conditioned.
      await store.addUses(pod.ports);
      await store.markForeign('default', 7030, false);
      const counts = await store.readCounts(range);
      expect(counts.foreign).toBeUndefined();
      expect(countAt(counts, 7030)).toBe(1);
    });

    it('corrects a use count only from the count it read', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7040]));
      expect(await store.correctCount('default', 7040, 2, 0)).toBe(false);
      expect(await store.correctCount('default', 7040, 1, 3)).toBe(true);
      // A port never used counts 0.
      expect(await store.correctCount('default', 7041, 0, 1)).toBe(true);
      const counts = await store.readCounts(range);
      expect([countAt(counts, 7040), countAt(counts, 7041)]).toEqual([3, 1]);
    });

    it('keeps counts on their port numbers when a range is widened or moved', async () => {
      const store = await make();
      await recordHostPorts(store, record('a', [7000, 7100]));
      const wider = await store.readCounts({ name: 'default', first: 6990, size: 300 });
      expect(wider.counts[10]).toBe(1);
      expect(wider.counts[110]).toBe(1);
      expect(wider.counts.reduce((a, b) => a + b, 0)).toBe(2);
    });
  });
}

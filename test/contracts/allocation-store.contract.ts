/**
 * What every `AllocationStore` answers, registered against a factory so the in-memory store the
 * benches measure with and the DynamoDB adapter cannot drift apart: versioned owner records,
 * exclusive per-value claims answered with their block, and block scans in index order.
 */
import { describe, expect, it } from 'vitest';
import type { AllocationStore, OwnerRecord } from '../../shared/allocation/store.js';
import type { RepairAllocationStore } from '../../shared/repair/store.js';

const record = (version: number, id = 'svc-1'): OwnerRecord => ({
  id,
  owner: { kind: 'Service', namespace: 'default', name: id },
  claims: [],
  version,
  createdAt: 1,
});

/** Registers the contract's cases for the store `make` builds, empty, for each case. */
export function allocationStoreContract(
  name: string,
  make: () => Promise<AllocationStore & Pick<RepairAllocationStore, 'transfer'>>,
): void {
  describe(`${name} keeps the AllocationStore contract`, () => {
    it('writes an owner record at version 0, then only at the version it holds', async () => {
      const store = await make();
      expect(await store.getOwner('svc-1')).toBeUndefined();
      await store.putOwner(record(1), 0);
      await expect(store.putOwner(record(2), 0)).rejects.toMatchObject({
        name: 'OwnerVersionConflictError',
        id: 'svc-1',
      });
      await store.putOwner(record(2), 1);
      expect(await store.getOwner('svc-1')).toEqual(record(2));
    });

    it('deletes unconditionally without an expected version, also an absent record', async () => {
      const store = await make();
      await store.putOwner(record(1), 0);
      expect(await store.deleteOwner('svc-1')).toBe(true);
      expect(await store.getOwner('svc-1')).toBeUndefined();
      expect(await store.deleteOwner('svc-1')).toBe(true);
    });

    it('deletes only the expected version, answering false for a rewritten or absent record', async () => {
      const store = await make();
      await store.putOwner(record(1), 0);
      await store.putOwner(record(2), 1);
      expect(await store.deleteOwner('svc-1', 1)).toBe(false);
      expect((await store.getOwner('svc-1'))?.version).toBe(2);
      expect(await store.deleteOwner('svc-1', 2)).toBe(true);
      expect(await store.getOwner('svc-1')).toBeUndefined();
      expect(await store.deleteOwner('svc-1', 2)).toBe(false);
    });

    it('lists every owner record once', async () => {
      const store = await make();
      await store.putOwner(record(1, 'a'), 0);
      await store.putOwner(record(1, 'b'), 0);
      const ids: string[] = [];
      for await (const owner of store.listOwners()) ids.push(owner.id);
      expect(ids.sort()).toEqual(['a', 'b']);
    });

    it('claims a value for one owner, answering others its holder, with the block either way', async () => {
      const store = await make();
      const won = await store.claim('r', 33, 'a');
      expect(won).toEqual({ taken: true, block: { index: 1, holders: new Map([[1, 'a']]) } });
      const lost = await store.claim('r', 33, 'b');
      expect(lost).toEqual({
        taken: false,
        holder: 'a',
        block: { index: 1, holders: new Map([[1, 'a']]) },
      });
      const racing = await Promise.all(['c', 'd'].map((id) => store.claim('r', 40, id)));
      expect(racing.filter((outcome) => outcome.taken)).toHaveLength(1);
    });

    it('remembers when a value was claimed, to the second rounded up, until it is released', async () => {
      const store = await make();
      await store.claim('r', 1, 'a', 1_700_000_000_001);
      await store.claim('r', 2, 'b');
      const claimed = await store.claim('r', 3, 'c', 1_700_000_005_000);
      const times = new Map([
        [1, 1_700_000_001_000],
        [3, 1_700_000_005_000],
      ]);
      expect(claimed.block?.claimedAt).toEqual(times);
      const scanned = async () => {
        for await (const block of store.scanBlocks('r', 0, 0)) return block.claimedAt;
        return undefined;
      };
      expect(await scanned()).toEqual(times);
      await store.release('r', 1, 'a');
      await store.release('r', 3, 'c');
      // Claimed again without a time: none is left from the value's last holder.
      await store.claim('r', 3, 'd');
      expect(await scanned()).toBeUndefined();
    });

    it('hands a value over from its holder only, for repair', async () => {
      const store = await make();
      await store.claim('r', 7, 'a', 1_700_000_000_000);
      expect(await store.transfer('r', 7, 'b', 'c')).toBe(false);
      expect(await store.transfer('r', 7, 'a', 'c')).toBe(true);
      for await (const block of store.scanBlocks('r', 0, 0)) {
        expect(block.holders).toEqual(new Map([[7, 'c']]));
        // The live owner it went to carries it: no claim time of the last holder's is kept.
        expect(block.claimedAt).toBeUndefined();
      }
      expect(await store.release('r', 7, 'c')).toBe(true);
    });

    it('releases a value only for its holder', async () => {
      const store = await make();
      await store.claim('r', 5, 'a');
      expect(await store.release('r', 5, 'b')).toBe(false);
      expect(await store.release('r', 5, 'a')).toBe(true);
      expect(await store.release('r', 5, 'a')).toBe(false);
      expect((await store.claim('r', 5, 'b')).taken).toBe(true);
    });

    it('scans the blocks written in a span of a range, in index order, each range apart', async () => {
      const store = await make();
      for (const offset of [100, 3, 64, 65]) await store.claim('r', offset, `o${offset}`);
      await store.claim('other', 1, 'x');
      const scanned = [];
      for await (const block of store.scanBlocks('r', 0, 2)) scanned.push(block);
      expect(scanned).toEqual([
        { index: 0, holders: new Map([[3, 'o3']]) },
        {
          index: 2,
          holders: new Map([
            [0, 'o64'],
            [1, 'o65'],
          ]),
        },
      ]);
    });
  });
}

/**
 * What every `SlotChainStore` answers, registered against a factory so the in-memory store the
 * tests and the benchmark use and the DynamoDB adapter cannot drift apart: both must refuse the
 * same writes (a stale version, a second claim of a slot, a node's host port another chain holds),
 * so that a test passing on memory says something about AWS.
 */
import { describe, expect, it } from 'vitest';
import {
  type ChainHolder,
  revised,
  type SlotChain,
  type SlotChainStore,
  slotKey,
} from '../../shared/fronts/slots/store.js';
import type { ListenerSlot } from '../../shared/fronts/work.js';
import { NLB_A, NLB_B, slot } from './front-store.contract.js';

export { NLB_A, NLB_B, slot } from './front-store.contract.js';

/** A chain just claimed: version 1, not made, no holder. */
export const claimed = (s: ListenerSlot, claimedAt = 1_000): SlotChain => ({
  slot: s,
  claimedAt,
  version: 1,
});

/** Node `node`'s host port `hostPort`, just assigned. */
export const holder = (node: string, hostPort: number, assignedAt = 2_000): ChainHolder => ({
  node,
  address: `10.0.1.${node.length}`,
  hostPort,
  assignedAt,
});

/** Chains in key order, for comparing listings. */
export const bySlot = (chains: readonly SlotChain[]): SlotChain[] =>
  [...chains].sort((a, b) => slotKey(a.slot).localeCompare(slotKey(b.slot)));

/** Registers the contract's cases for the stores `make` builds, a fresh one per case. */
export function slotChainStoreContract(name: string, make: () => Promise<SlotChainStore>): void {
  describe(`${name} keeps the SlotChainStore contract`, () => {
    describe('versions', () => {
      it('lands a first write and lists it', async () => {
        const store = await make();
        const chain = claimed(slot(NLB_A, 20_001));
        expect(await store.write(undefined, chain)).toBe(true);
        expect(await store.listChains()).toEqual([chain]);
      });

      it('refuses a second first write of the same slot', async () => {
        const store = await make();
        const first = claimed(slot(NLB_A, 20_001), 1_000);
        expect(await store.write(undefined, first)).toBe(true);
        expect(await store.write(undefined, claimed(slot(NLB_A, 20_001), 3_000))).toBe(false);
        expect(await store.listChains()).toEqual([first]);
      });

      it('refuses a write from a stale version and keeps the stored chain', async () => {
        const store = await make();
        const v1 = claimed(slot(NLB_A, 20_001));
        await store.write(undefined, v1);
        const v2 = revised(v1, { madeAt: 1_500, targetGroupArn: 'arn:tg/one' });
        expect(await store.write(v1, v2)).toBe(true);
        // A writer that read v1 and lost: its write names v1, which is no longer stored.
        expect(await store.write(v1, revised(v1, { holder: holder('node-a', 7_001) }))).toBe(false);
        expect(await store.listChains()).toEqual([v2]);
        expect(await store.chainAt('node-a', 7_001)).toBeUndefined();
      });

      it('refuses a next whose version is not one more than the previous', async () => {
        const store = await make();
        const v1 = claimed(slot(NLB_A, 20_001));
        await store.write(undefined, v1);
        expect(await store.write(v1, { ...v1, madeAt: 1_500, version: 3 })).toBe(false);
        expect(await store.write(v1, { ...v1, madeAt: 1_500 })).toBe(false);
        expect(await store.write(undefined, claimed(slot(NLB_B, 20_002)))).toBe(true);
        expect(await store.write(undefined, { ...claimed(slot(NLB_B, 20_003)), version: 2 })).toBe(
          false,
        );
        expect(bySlot(await store.listChains())).toEqual(
          bySlot([v1, claimed(slot(NLB_B, 20_002))]),
        );
      });

      it('keeps a made, held chain whole through the store', async () => {
        const store = await make();
        const v1 = claimed(slot(NLB_B, 59_999), 1_234);
        await store.write(undefined, v1);
        const full = revised(v1, {
          madeAt: 1_500,
          targetGroupArn:
            'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/berth-s0123/0123456789abcdef',
          holder: {
            ...holder('ip-10-0-1-7.eu-west-1.compute.internal', 7_999, 2_000),
            registeredAt: 2_100,
            servingAt: 2_200,
            releasingAt: 2_300,
          },
        });
        expect(await store.write(v1, full)).toBe(true);
        expect(await store.listChains()).toEqual([full]);
        expect(await store.chainAt('ip-10-0-1-7.eu-west-1.compute.internal', 7_999)).toEqual(full);
      });

      it('lands exactly one of concurrent writes from one version', async () => {
        const store = await make();
        const v1 = claimed(slot(NLB_A, 20_001));
        await store.write(undefined, v1);
        const nexts = [0, 1, 2, 3, 4].map((i) =>
          revised(v1, { holder: holder('node-a', 7_000 + i) }),
        );
        const answers = await Promise.all(nexts.map((next) => store.write(v1, next)));
        expect(answers.filter(Boolean)).toHaveLength(1);
        const winner = nexts[answers.indexOf(true)];
        expect(await store.listChains()).toEqual([winner]);
        const held = await Promise.all(nexts.map((_, i) => store.chainAt('node-a', 7_000 + i)));
        expect(held).toEqual(nexts.map((next) => (next === winner ? winner : undefined)));
      });
    });

    describe('holders', () => {
      it('answers the chain a node host port holds, through every write that keeps it', async () => {
        const store = await make();
        const v1 = claimed(slot(NLB_A, 20_001));
        await store.write(undefined, v1);
        expect(await store.chainAt('node-a', 7_001)).toBeUndefined();
        const v2 = revised(v1, { holder: holder('node-a', 7_001) });
        expect(await store.write(v1, v2)).toBe(true);
        expect(await store.chainAt('node-a', 7_001)).toEqual(v2);
        const v3 = revised(v2, { holder: { ...holder('node-a', 7_001), registeredAt: 2_500 } });
        expect(await store.write(v2, v3)).toBe(true);
        expect(await store.chainAt('node-a', 7_001)).toEqual(v3);
        expect(await store.chainAt('node-a', 7_002)).toBeUndefined();
        expect(await store.chainAt('node-b', 7_001)).toBeUndefined();
      });

      it('answers undefined for a node it never heard of', async () => {
        const store = await make();
        const v1 = claimed(slot(NLB_A, 20_001));
        await store.write(undefined, v1);
        await store.write(v1, revised(v1, { holder: holder('node-a', 7_001) }));
        expect(await store.chainAt('node-unknown', 7_001)).toBeUndefined();
      });

      it('holds a first write with a holder to one chain per node host port', async () => {
        const store = await make();
        const a = { ...claimed(slot(NLB_A, 20_001)), holder: holder('node-a', 7_001) };
        const b = { ...claimed(slot(NLB_B, 20_001)), holder: holder('node-a', 7_001) };
        expect(await store.write(undefined, a)).toBe(true);
        expect(await store.write(undefined, b)).toBe(false);
        expect(await store.listChains()).toEqual([a]);
        expect(await store.chainAt('node-a', 7_001)).toEqual(a);
      });

      it('refuses a second chain on a held host port until the first lets it go', async () => {
        const store = await make();
        const a1 = claimed(slot(NLB_A, 20_001));
        const b1 = claimed(slot(NLB_A, 20_002));
        await store.write(undefined, a1);
        await store.write(undefined, b1);
        const a2 = revised(a1, { holder: holder('node-a', 7_001) });
        expect(await store.write(a1, a2)).toBe(true);
        const b2 = revised(b1, { holder: holder('node-a', 7_001, 3_000) });
        expect(await store.write(b1, b2)).toBe(false);
        expect(await store.chainAt('node-a', 7_001)).toEqual(a2);
        expect(bySlot(await store.listChains())).toEqual(bySlot([a2, b1]));

        const a3 = revised(a2, { holder: undefined });
        expect(await store.write(a2, a3)).toBe(true);
        expect(await store.chainAt('node-a', 7_001)).toBeUndefined();
        expect(await store.write(b1, b2)).toBe(true);
        expect(await store.chainAt('node-a', 7_001)).toEqual(b2);
        expect(bySlot(await store.listChains())).toEqual(bySlot([a3, b2]));
      });

      it('moves a chain to another host port and forgets the old one', async () => {
        const store = await make();
        const v1 = claimed(slot(NLB_A, 20_001));
        await store.write(undefined, v1);
        const v2 = revised(v1, { holder: holder('node-a', 7_001) });
        await store.write(v1, v2);
        const v3 = revised(v2, { holder: holder('node-a', 7_002, 4_000) });
        expect(await store.write(v2, v3)).toBe(true);
        expect(await store.chainAt('node-a', 7_002)).toEqual(v3);
        expect(await store.chainAt('node-a', 7_001)).toBeUndefined();

        // The old host port is free for another chain now.
        const other1 = claimed(slot(NLB_B, 20_001));
        await store.write(undefined, other1);
        const other2 = revised(other1, { holder: holder('node-a', 7_001) });
        expect(await store.write(other1, other2)).toBe(true);
        expect(await store.chainAt('node-a', 7_001)).toEqual(other2);

        // And to another node.
        const v4 = revised(v3, { holder: holder('node-b', 7_002, 5_000) });
        expect(await store.write(v3, v4)).toBe(true);
        expect(await store.chainAt('node-b', 7_002)).toEqual(v4);
        expect(await store.chainAt('node-a', 7_002)).toBeUndefined();
      });
    });
  });
}

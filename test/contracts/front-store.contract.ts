/**
 * What every `FrontStore` answers, registered against a factory so the in-memory store the tests
 * and the benchmark use and the DynamoDB adapter cannot drift apart: both must refuse the same
 * claims, so that a test passing on memory says something about AWS.
 */
import { describe, expect, it } from 'vitest';
import { MAX_LISTENERS_PER_NLB } from '../../shared/fronts/elbv2.js';
import { ListenerSlotTakenError, LoadBalancerFullError } from '../../shared/fronts/errors.js';
import type {
  FrontStore,
  ListenerSlotRecord,
  WantedDestination,
} from '../../shared/fronts/store.js';
import type { ListenerSlot } from '../../shared/fronts/work.js';

export const NLB_A =
  'arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/games-a/0123456789abcdef';
export const NLB_B =
  'arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/games-b/fedcba9876543210';

export const slot = (loadBalancerArn: string, port: number): ListenerSlot => ({
  loadBalancerArn,
  port,
});

export function claim(owner: string, s: ListenerSlot, pod = `gs-${owner}`): ListenerSlotRecord {
  return {
    slot: s,
    owner: { allocationId: owner, namespace: 'games', pod },
    portName: 'game',
    protocol: 'UDP',
    claimedAt: 1_000,
    state: 'claimed',
  };
}

/** `count` slots of one load balancer from port `first`, each its own owner. */
export const fill = (
  arn: string,
  first: number,
  count: number,
  owner = 'filler',
): ListenerSlotRecord[] =>
  Array.from({ length: count }, (_, i) => claim(`${owner}-${i}`, slot(arn, first + i)));

export const byKey = (records: readonly ListenerSlotRecord[]) =>
  [...records].sort((a, b) =>
    `${a.slot.loadBalancerArn}#${a.slot.port}`.localeCompare(
      `${b.slot.loadBalancerArn}#${b.slot.port}`,
    ),
  );

export function wanted(owner: string, port: number, wantedAt = 5_000, address = '10.0.1.7') {
  return {
    subnetId: 'subnet-1',
    address,
    port,
    owner: { allocationId: owner, namespace: 'games', pod: `gs-${owner}` },
    wantedAt,
  } satisfies WantedDestination;
}

/** What a claim ended in: done, or the class of error it was refused with. */
export async function outcome(claiming: Promise<unknown>): Promise<string> {
  try {
    await claiming;
    return 'ok';
  } catch (error) {
    return (error as Error).name;
  }
}

/** Registers the contract's cases for the stores `makeStore` builds, a fresh one per case. */
export function frontStoreContract(name: string, makeStore: () => Promise<FrontStore>): void {
  describe(`${name} keeps the FrontStore contract`, () => {
    describe('listener slots', () => {
      it('claims every slot of a claim or none', async () => {
        const store = await makeStore();
        await store.claimSlots([claim('a', slot(NLB_A, 10_001))]);
        const refused = store.claimSlots([
          claim('b', slot(NLB_B, 10_002)),
          claim('b', slot(NLB_A, 10_001)),
        ]);
        await expect(refused).rejects.toThrow(ListenerSlotTakenError);
        await expect(refused).rejects.toMatchObject({ slot: slot(NLB_A, 10_001) });
        expect(await store.listSlots()).toEqual([claim('a', slot(NLB_A, 10_001))]);
        await store.claimSlots([claim('b', slot(NLB_B, 10_002)), claim('b', slot(NLB_A, 10_003))]);
        expect(byKey(await store.listSlots())).toEqual(
          byKey([
            claim('a', slot(NLB_A, 10_001)),
            claim('b', slot(NLB_B, 10_002)),
            claim('b', slot(NLB_A, 10_003)),
          ]),
        );
      });

      it('refuses a claim that names one slot twice, and claims neither', async () => {
        const store = await makeStore();
        await expect(
          store.claimSlots([claim('a', slot(NLB_A, 10_001)), claim('a', slot(NLB_A, 10_001))]),
        ).rejects.toThrow(ListenerSlotTakenError);
        expect(await store.listSlots()).toEqual([]);
      });

      it('keeps a bound record whole through the store', async () => {
        const store = await makeStore();
        const record: ListenerSlotRecord = {
          ...claim('a', slot(NLB_A, 59_999)),
          protocol: 'TCPUDP',
          state: 'bound',
          target: { ip: '10.0.1.7', port: 7_001 },
          boundAt: 2_000,
        };
        await store.claimSlots([record]);
        expect(await store.listSlots()).toEqual([record]);
      });

      it(`holds a load balancer at ${MAX_LISTENERS_PER_NLB} claimed listeners`, async () => {
        const store = await makeStore();
        await store.claimSlots(fill(NLB_A, 20_000, MAX_LISTENERS_PER_NLB - 1));
        await store.claimSlots([claim('last', slot(NLB_A, 30_000))]);
        const over = store.claimSlots([
          claim('x', slot(NLB_B, 30_001)),
          claim('x', slot(NLB_A, 30_001)),
        ]);
        await expect(over).rejects.toThrow(LoadBalancerFullError);
        await expect(over).rejects.toMatchObject({
          loadBalancerArn: NLB_A,
          limit: MAX_LISTENERS_PER_NLB,
        });
        // The other load balancer took nothing from the refused claim, and still has room.
        const slots = await store.listSlots();
        expect(slots).toHaveLength(MAX_LISTENERS_PER_NLB);
        expect(slots.every((s) => s.slot.loadBalancerArn === NLB_A)).toBe(true);
        await store.claimSlots([claim('x', slot(NLB_B, 30_001))]);
      });

      it('answers a held slot of a full load balancer as taken', async () => {
        const store = await makeStore();
        await store.claimSlots(fill(NLB_A, 20_000, MAX_LISTENERS_PER_NLB));
        await expect(store.claimSlots([claim('x', slot(NLB_A, 20_007))])).rejects.toThrow(
          ListenerSlotTakenError,
        );
      });

      it('refuses one claim of more listeners than a load balancer takes', async () => {
        const store = await makeStore();
        await expect(
          store.claimSlots(fill(NLB_A, 20_000, MAX_LISTENERS_PER_NLB + 1)),
        ).rejects.toThrow(LoadBalancerFullError);
        expect(await store.listSlots()).toEqual([]);
      });

      it('lets exactly one of two claims racing for the last listener win', async () => {
        for (let round = 0; round < 4; round++) {
          const store = await makeStore();
          await store.claimSlots(fill(NLB_A, 20_000, MAX_LISTENERS_PER_NLB - 1));
          const outcomes = await Promise.all([
            outcome(store.claimSlots([claim('x', slot(NLB_A, 30_000))])),
            outcome(store.claimSlots([claim('y', slot(NLB_A, 30_001))])),
          ]);
          expect(outcomes.sort()).toEqual(['LoadBalancerFullError', 'ok']);
          expect(await store.listSlots()).toHaveLength(MAX_LISTENERS_PER_NLB);
        }
      });

      it('lets exactly one of two claims racing for one slot win', async () => {
        for (let round = 0; round < 4; round++) {
          const store = await makeStore();
          const outcomes = await Promise.all([
            outcome(store.claimSlots([claim('x', slot(NLB_A, 30_000))])),
            outcome(
              store.claimSlots([claim('y', slot(NLB_B, 30_000)), claim('y', slot(NLB_A, 30_000))]),
            ),
          ]);
          expect(outcomes.sort()).toEqual(['ListenerSlotTakenError', 'ok']);
          // The winner's slots, and nothing of the loser's.
          const held = await store.listSlots();
          const owners = new Set(held.map((s) => s.owner.allocationId));
          expect(owners.size).toBe(1);
          expect(held).toHaveLength(owners.has('x') ? 1 : 2);
        }
      });

      it('frees a slot only for its owner, and the load balancer has room again', async () => {
        const store = await makeStore();
        await store.claimSlots(fill(NLB_A, 20_000, MAX_LISTENERS_PER_NLB));
        const first = slot(NLB_A, 20_000);
        expect(await store.freeSlot(first, 'someone-else', 2_000)).toBe('not-held');
        expect(await store.freeSlot(slot(NLB_A, 40_000), 'filler-0', 2_000)).toBe('not-held');
        expect(await store.listSlots()).toHaveLength(MAX_LISTENERS_PER_NLB);
        await expect(store.claimSlots([claim('x', slot(NLB_A, 30_000))])).rejects.toThrow(
          LoadBalancerFullError,
        );

        expect(await store.freeSlot(first, 'filler-0', 2_000)).toBe('freed');
        expect(await store.freeSlot(first, 'filler-0', 2_000)).toBe('not-held');
        expect(await store.listSlots()).toHaveLength(MAX_LISTENERS_PER_NLB - 1);
        await store.claimSlots([claim('x', slot(NLB_A, 30_000))]);
        await expect(store.claimSlots([claim('y', slot(NLB_A, 30_001))])).rejects.toThrow(
          LoadBalancerFullError,
        );
        // A freed slot is free for anyone.
        expect(await store.freeSlot(slot(NLB_A, 20_001), 'filler-1', 2_000)).toBe('freed');
        await store.claimSlots([claim('y', first)]);
      });

      it('records a bound slot serving for its owner only, keeping the first sighting', async () => {
        const store = await makeStore();
        const record = claim('a', slot(NLB_A, 10_001));
        await store.claimSlots([record]);
        // Claimed, not bound: no listener forwards yet, so nothing serves.
        expect(await store.markServing(record.slot, 'a', 2_000)).toBe(false);
        const target = { ip: '10.0.1.7', port: 7_001 };
        await store.markBound(record.slot, 'a', { target, boundAt: 2_000, pod: record.owner.pod });
        expect(await store.markServing(record.slot, 'b', 3_000)).toBe(false);
        expect(await store.markServing(record.slot, 'a', 3_000)).toBe(true);
        expect(await store.markServing(record.slot, 'a', 4_000)).toBe(true);
        expect(await store.markServing(slot(NLB_A, 10_009), 'a', 4_000)).toBe(false);
        const [kept] = await store.listSlots();
        expect(kept).toMatchObject({ state: 'bound', servingAt: 3_000 });
      });

      it('marks a slot bound for its owner only, learning the pod name once', async () => {
        const store = await makeStore();
        const unnamed = claim('a', slot(NLB_A, 10_001), '');
        await store.claimSlots([unnamed, claim('b', slot(NLB_A, 10_002))]);
        const target = { ip: '10.0.1.7', port: 7_001 };

        expect(
          await store.markBound(unnamed.slot, 'b', { target, boundAt: 2_000, pod: 'gs-b' }),
        ).toBe(false);
        expect(
          await store.markBound(slot(NLB_A, 10_003), 'a', { target, boundAt: 2_000, pod: 'x' }),
        ).toBe(false);
        expect(byKey(await store.listSlots())).toEqual(
          byKey([unnamed, claim('b', slot(NLB_A, 10_002))]),
        );

        expect(await store.markBound(unnamed.slot, 'a', { target, boundAt: 2_000, pod: '' })).toBe(
          true,
        );
        expect(
          await store.markBound(unnamed.slot, 'a', { target, boundAt: 3_000, pod: 'gs-a-x1' }),
        ).toBe(true);
        expect(
          await store.markBound(unnamed.slot, 'a', { target, boundAt: 4_000, pod: 'gs-a-x2' }),
        ).toBe(true);
        const named = claim('b', slot(NLB_A, 10_002));
        expect(
          await store.markBound(named.slot, 'b', { target, boundAt: 5_000, pod: 'renamed' }),
        ).toBe(true);
        expect(byKey(await store.listSlots())).toEqual(
          byKey([
            {
              ...unnamed,
              owner: { ...unnamed.owner, pod: 'gs-a-x1' },
              state: 'bound',
              target,
              boundAt: 4_000,
            },
            { ...named, state: 'bound', target, boundAt: 5_000 },
          ]),
        );

        expect(await store.freeSlot(unnamed.slot, 'a', 2_000)).toBe('freed');
        expect(await store.markBound(unnamed.slot, 'a', { target, boundAt: 6_000, pod: '' })).toBe(
          false,
        );
        expect(await store.listSlots()).toHaveLength(1);
      });
    });

    describe('the pool', () => {
      it('lists the load balancers added at runtime once each, in the order added', async () => {
        const store = await makeStore();
        expect(await store.listPoolAdditions()).toEqual([]);
        await store.addToPool(NLB_B);
        await store.addToPool(NLB_A);
        await store.addToPool(NLB_B);
        expect(await store.listPoolAdditions()).toEqual([NLB_B, NLB_A]);
      });
    });

    describe('accelerator destinations', () => {
      it('keeps a subnet port mappings, the largest included', async () => {
        const store = await makeStore();
        expect(await store.getMappings('subnet-1')).toBeUndefined();
        await store.putMappings('subnet-1', 'first');
        const large = 'r10.0.1.7:1-20000;'.repeat(2_500);
        await store.putMappings('subnet-1', large);
        await store.putMappings('subnet-2', 'other');
        expect(await store.getMappings('subnet-1')).toBe(large);
        expect(await store.getMappings('subnet-2')).toBe('other');
      });

      it('records a want once per owner, lets a newer owner take the cell over, and forgets it only for its owner', async () => {
        const store = await makeStore();
        await store.want([wanted('a', 7_001), wanted('a', 7_002)]);
        // a again: unchanged; b on a's cell: the newer binding of that host port takes it.
        await store.want([wanted('a', 7_001, 9_000), wanted('b', 7_002, 9_000)]);
        expect(await store.listDestinations('subnet-1')).toEqual({
          wanted: [wanted('a', 7_001), wanted('b', 7_002, 9_000)],
          allowed: new Map(),
        });

        // a's late release leaves b's cell alone.
        await store.unwant('a', [wanted('a', 7_002), wanted('a', 7_999)]);
        expect((await store.listDestinations('subnet-1')).wanted).toHaveLength(2);
        await store.unwant('b', [wanted('b', 7_002)]);
        await store.unwant('b', [wanted('b', 7_002)]);
        expect((await store.listDestinations('subnet-1')).wanted).toEqual([wanted('a', 7_001)]);
      });

      it('keeps the first of two wants of one cell in one call', async () => {
        const store = await makeStore();
        await store.want([
          wanted('a', 7_001),
          wanted('b', 7_001, 9_000),
          wanted('a', 7_001, 9_500),
        ]);
        expect((await store.listDestinations('subnet-1')).wanted).toEqual([wanted('a', 7_001)]);
      });

      it('records allowed ports per address until the address is denied', async () => {
        const store = await makeStore();
        await store.recordAllowed('subnet-1', '10.0.1.7', [7_001, 7_002]);
        await store.recordAllowed('subnet-1', '10.0.1.7', [7_002, 7_003]);
        await store.recordAllowed('subnet-1', '10.0.1.8', [7_001]);
        await store.recordAllowed('subnet-1', '10.0.1.9', []);
        await store.recordAllowed('subnet-10', '10.0.10.7', [7_001]);
        expect((await store.listDestinations('subnet-1')).allowed).toEqual(
          new Map([
            ['10.0.1.7', new Set([7_001, 7_002, 7_003])],
            ['10.0.1.8', new Set([7_001])],
          ]),
        );

        await store.recordDenied('subnet-1', '10.0.1.7');
        await store.recordDenied('subnet-1', '10.0.1.99');
        expect((await store.listDestinations('subnet-1')).allowed).toEqual(
          new Map([['10.0.1.8', new Set([7_001])]]),
        );
      });

      it('lists the subnets with a wanted or an allowed destination', async () => {
        const store = await makeStore();
        expect(await store.listDestinationSubnets()).toEqual([]);
        await store.putMappings('subnet-0', 'mappings only');
        await store.recordAllowed('subnet-1', '10.0.1.7', [7_001]);
        await store.want([{ ...wanted('a', 7_001), subnetId: 'subnet-2' }]);
        expect((await store.listDestinationSubnets()).sort()).toEqual(['subnet-1', 'subnet-2']);
        expect(await store.listDestinations('subnet-2')).toEqual({
          wanted: [{ ...wanted('a', 7_001), subnetId: 'subnet-2' }],
          allowed: new Map(),
        });

        await store.recordDenied('subnet-1', '10.0.1.7');
        await store.unwant('a', [{ ...wanted('a', 7_001), subnetId: 'subnet-2' }]);
        expect(await store.listDestinationSubnets()).toEqual([]);
      });
    });
  });
}

/**
 * The in-memory slot chain store and the DynamoDB adapter on DynamoDB Local, held to one
 * contract, and to the same answers for any run of claims, holds, moves, clears and stale writes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { revised, type SlotChain, type SlotChainStore } from '../../shared/fronts/slots/store.js';
import { DynamoSlotChainStore } from '../../shared/store/dynamo-slot-chain-store.js';
import { MemorySlotChainStore } from '../../sim/fakes/slot-chain-store.js';
import { freshTable } from '../support/dynamo.js';
import {
  bySlot,
  claimed,
  holder,
  NLB_A,
  NLB_B,
  slot,
  slotChainStoreContract,
} from './slot-chain-store.contract.js';

let table: ReturnType<typeof freshTable> | undefined;
let clusters = 0;

/** A DynamoDB store on its own cluster's keys: tests share one table, never an item. */
async function dynamoStore(): Promise<SlotChainStore> {
  table ??= freshTable();
  const { client, tableName } = await table;
  clusters += 1;
  return new DynamoSlotChainStore({ client, tableName, cluster: `chains-${clusters}` });
}

slotChainStoreContract('MemorySlotChainStore', async () => new MemorySlotChainStore());
slotChainStoreContract('DynamoSlotChainStore', dynamoStore);

describe('DynamoSlotChainStore against MemorySlotChainStore', () => {
  const LOAD_BALANCERS = [NLB_A, NLB_B];
  const PORTS = [20_001, 20_002, 20_003];
  const NODES = ['node-a', 'node-b'];
  const HOST_PORTS = [7_001, 7_002, 7_003];

  const step = fc.record({
    lb: fc.integer({ min: 0, max: LOAD_BALANCERS.length - 1 }),
    port: fc.integer({ min: 0, max: PORTS.length - 1 }),
    op: fc.oneof(
      fc.record({ kind: fc.constant('claim' as const) }),
      fc.record({
        // A hold of a chain already held elsewhere is a move.
        kind: fc.constant('hold' as const),
        node: fc.integer({ min: 0, max: NODES.length - 1 }),
        hostPort: fc.integer({ min: 0, max: HOST_PORTS.length - 1 }),
      }),
      fc.record({ kind: fc.constantFrom('clear' as const, 'touch' as const) }),
    ),
    // Writes from a version older than the last one written, when there is one.
    stale: fc.boolean(),
  });

  it('answers every write, listing and holder read as the in-memory store does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const memory = new MemorySlotChainStore();
        const dynamo = await dynamoStore();
        /** Per slot, every version written, oldest first. */
        const written = new Map<string, SlotChain[]>();
        for (const [i, s] of steps.entries()) {
          const target = slot(LOAD_BALANCERS[s.lb] ?? NLB_A, PORTS[s.port] ?? 20_001);
          const key = `${s.lb}#${s.port}`;
          const history = written.get(key) ?? [];
          const at = 2_000 + i;
          let previous: SlotChain | undefined;
          let next: SlotChain;
          if (s.op.kind === 'claim') next = claimed(target, 1_000 + i);
          else {
            // A stale writer read the version before the last (none: it read the slot unclaimed).
            previous = s.stale ? history.at(-2) : history.at(-1);
            const change: Partial<Omit<SlotChain, 'slot' | 'version'>> =
              s.op.kind === 'hold'
                ? {
                    holder: holder(
                      NODES[s.op.node] ?? 'node-a',
                      HOST_PORTS[s.op.hostPort] ?? 7_001,
                      at,
                    ),
                  }
                : s.op.kind === 'clear'
                  ? { holder: undefined }
                  : { madeAt: at, targetGroupArn: `arn:tg/${key}` };
            next = previous
              ? revised(previous, change)
              : { ...claimed(target, 1_000 + i), ...change, version: 1 };
          }
          const answers = await Promise.all(
            [memory, dynamo].map((store) => store.write(previous, next)),
          );
          expect(answers[1]).toBe(answers[0]);
          if (answers[0]) written.set(key, [...history, next]);
        }
        expect(bySlot(await dynamo.listChains())).toEqual(bySlot(await memory.listChains()));
        for (const node of NODES)
          for (const hostPort of HOST_PORTS)
            expect(await dynamo.chainAt(node, hostPort)).toEqual(
              await memory.chainAt(node, hostPort),
            );
      }),
      { numRuns: 30 },
    );
  });
});

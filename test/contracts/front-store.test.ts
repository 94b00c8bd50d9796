/**
 * The in-memory front store and the DynamoDB adapter on DynamoDB Local, held to one contract, and
 * to the same answers for any run of claims, makings, frees and binds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FrontStore } from '../../shared/fronts/store.js';
import { DynamoFrontStore } from '../../shared/store/dynamo-front-store.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';
import { freshTable } from '../support/dynamo.js';
import {
  byKey,
  claim,
  frontStoreContract,
  NLB_A,
  NLB_B,
  outcome,
  slot,
} from './front-store.contract.js';

let table: ReturnType<typeof freshTable> | undefined;
let clusters = 0;

/** A DynamoDB store on its own cluster's keys: tests share one table, never an item. */
async function dynamoPlace() {
  table ??= freshTable();
  const { client, tableName } = await table;
  clusters += 1;
  const cluster = `fronts-${clusters}`;
  return { store: new DynamoFrontStore({ client, tableName, cluster }), tableName, cluster };
}

const dynamoStore = async (): Promise<FrontStore> => (await dynamoPlace()).store;

frontStoreContract('MemoryFrontStore', async () => new MemoryFrontStore());
frontStoreContract('DynamoFrontStore', dynamoStore);

describe('DynamoFrontStore against MemoryFrontStore', () => {
  const LOAD_BALANCERS = [NLB_A, NLB_B];
  const step = fc.oneof(
    fc.record({
      op: fc.constant('claim' as const),
      owner: fc.integer({ min: 0, max: 3 }),
      slots: fc.array(
        fc.record({ lb: fc.integer({ min: 0, max: 1 }), port: fc.integer({ min: 1, max: 5 }) }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    fc.record({
      op: fc.constantFrom('free' as const, 'bind' as const, 'make' as const),
      owner: fc.integer({ min: 0, max: 3 }),
      lb: fc.integer({ min: 0, max: 1 }),
      port: fc.integer({ min: 1, max: 5 }),
      // A free happens at 5,000: a making lease until 4,000 has run out, one until 6,000 holds.
      until: fc.constantFrom(4_000, 6_000),
    }),
  );

  it('answers every claim, making, free and bind as the in-memory store does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const memory = new MemoryFrontStore();
        const dynamo = await dynamoStore();
        for (const s of steps) {
          const owner = `o${s.owner}`;
          const answers = await Promise.all(
            [memory, dynamo].map((store) => {
              if (s.op === 'claim') {
                const records = s.slots.map((x) =>
                  claim(owner, slot(LOAD_BALANCERS[x.lb] ?? NLB_A, x.port)),
                );
                return outcome(store.claimSlots(records));
              }
              const target = slot(LOAD_BALANCERS[s.lb] ?? NLB_A, s.port);
              if (s.op === 'free') return store.freeSlot(target, owner, 5_000);
              if (s.op === 'make') return store.beginMaking(target, owner, s.until);
              return store.markBound(target, owner, {
                target: { ip: '10.0.1.7', port: 7_000 + s.port },
                boundAt: 2_000,
                pod: owner,
              });
            }),
          );
          expect(answers[1]).toEqual(answers[0]);
        }
        expect(byKey(await dynamo.listSlots())).toEqual(byKey(await memory.listSlots()));
      }),
      { numRuns: 25 },
    );
  });
});

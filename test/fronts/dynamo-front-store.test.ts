/**
 * What only the DynamoDB front store promises: its item layout under the cluster's keys and the
 * schema version it stamps and checks. Its behaviour is `test/contracts/front-store.contract.ts`.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { rawClient, scanRaw } from '../../scripts/raw-table.js';
import { DynamoFrontStore } from '../../shared/store/dynamo-front-store.js';
import { ItemSchemaTooNewError } from '../../shared/store/errors.js';
import { SCHEMA_VERSION, SCHEMA_VERSION_ATTRIBUTE } from '../../shared/store/schema-version.js';
import { claim, NLB_A, NLB_B, slot, wanted } from '../contracts/front-store.contract.js';
import { freshTable } from '../support/dynamo.js';

/** A DynamoDB store on a table of its own. */
async function dynamoPlace() {
  const { client, tableName } = await freshTable();
  const cluster = 'fronts';
  return { store: new DynamoFrontStore({ client, tableName, cluster }), tableName, cluster };
}

describe('DynamoFrontStore items', () => {
  it('keys every item under the cluster and stamps each with the schema version', async () => {
    const { store, tableName, cluster } = await dynamoPlace();
    await store.claimSlots([claim('a', slot(NLB_A, 10_001))]);
    await store.markBound(slot(NLB_A, 10_001), 'a', {
      target: { ip: '10.0.1.7', port: 7_001 },
      boundAt: 2_000,
      pod: 'gs-a',
    });
    await store.addToPool(NLB_B);
    await store.putMappings('subnet-1', 'mappings');
    await store.want([wanted('a', 7_001)]);
    await store.recordAllowed('subnet-1', '10.0.1.7', [7_001]);
    const items = (await scanRaw(inject('dynamodbEndpoint'), tableName)).filter((item) =>
      item.pk?.S?.startsWith(`${cluster}#`),
    );
    expect(items.map((item) => `${item.pk?.S} / ${item.sk?.S}`).sort()).toEqual([
      `${cluster}#fronts-ga / allow#subnet-1#10.0.1.7`,
      `${cluster}#fronts-ga / map#subnet-1`,
      `${cluster}#fronts-ga / want#subnet-1#10.0.1.7#07001`,
      `${cluster}#fronts-nlb / count#games-a/0123456789abcdef`,
      `${cluster}#fronts-nlb / pool`,
      `${cluster}#fronts-nlb / slot#games-a/0123456789abcdef#10001`,
    ]);
    for (const item of items)
      expect(item[SCHEMA_VERSION_ATTRIBUTE]?.N, item.sk?.S).toBe(String(SCHEMA_VERSION));
  });

  it('refuses a slot a newer berth wrote, read or written, and leaves it as it was', async () => {
    const { store, tableName, cluster } = await dynamoPlace();
    await store.claimSlots([claim('a', slot(NLB_A, 10_001))]);
    const raw = rawClient(inject('dynamodbEndpoint'));
    const future = {
      pk: { S: `${cluster}#fronts-nlb` },
      sk: { S: 'slot#games-a/0123456789abcdef#10001' },
      lb: { S: NLB_A },
      port: { N: '10001' },
      owner: { S: 'a' },
      [SCHEMA_VERSION_ATTRIBUTE]: { N: String(SCHEMA_VERSION + 1) },
    };
    await raw.send(new PutItemCommand({ TableName: tableName, Item: future }));
    raw.destroy();
    await expect(store.listSlots()).rejects.toThrow(ItemSchemaTooNewError);
    await expect(store.claimSlots([claim('b', slot(NLB_A, 10_001))])).rejects.toThrow(
      ItemSchemaTooNewError,
    );
    await expect(store.freeSlot(slot(NLB_A, 10_001), 'b', 2_000)).rejects.toThrow(
      ItemSchemaTooNewError,
    );
    const stored = (await scanRaw(inject('dynamodbEndpoint'), tableName)).find(
      (item) => item.pk?.S === future.pk.S && item.sk?.S === future.sk.S,
    );
    expect(stored).toEqual(future);
  });
});

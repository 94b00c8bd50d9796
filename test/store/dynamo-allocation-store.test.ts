/** What only the DynamoDB adapter of the allocation store shows: its capacity meter. */
import { describe, expect, it } from 'vitest';
import type { OwnerRecord } from '../../shared/allocation/store.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { freshTable } from '../support/dynamo.js';

describe('DynamoAllocationStore.deleteOwner', () => {
  it('counts a delete refused at a rewritten version as a failed condition', async () => {
    const { client, tableName } = await freshTable();
    const store = new DynamoAllocationStore({ client, tableName, cluster: 'd' });
    const record = (version: number): OwnerRecord => ({
      id: 'svc-1',
      owner: { kind: 'Service', namespace: 'default', name: 'svc' },
      claims: [],
      version,
      createdAt: 1,
    });
    await store.putOwner(record(1), 0);
    await store.putOwner(record(2), 1);
    expect(await store.deleteOwner('svc-1', 1)).toBe(false);
    expect(store.meter.conditionFailures).toBe(1);
  });
});

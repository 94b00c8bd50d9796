import { describe, expect, it } from 'vitest';
import type { OwnerRecord } from '../../shared/allocation/store.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { freshTable } from '../support/dynamo.js';

const record = (version: number): OwnerRecord => ({
  id: 'svc-1',
  owner: { kind: 'Service', namespace: 'default', name: 'svc' },
  claims: [],
  version,
  createdAt: 1,
});

let seq = 0;
async function newStore(): Promise<DynamoAllocationStore> {
  const { client, tableName } = await freshTable();
  return new DynamoAllocationStore({ client, tableName, cluster: `d${seq++}` });
}

describe('DynamoAllocationStore.deleteOwner', () => {
  it('deletes unconditionally without an expected version, also an absent record', async () => {
    const store = await newStore();
    await store.putOwner(record(1), 0);
    expect(await store.deleteOwner('svc-1')).toBe(true);
    expect(await store.getOwner('svc-1')).toBeUndefined();
    expect(await store.deleteOwner('svc-1')).toBe(true);
  });

  it('deletes only the expected version, answering false for a rewritten or absent record', async () => {
    const store = await newStore();
    await store.putOwner(record(1), 0);
    await store.putOwner(record(2), 1);
    expect(await store.deleteOwner('svc-1', 1)).toBe(false);
    expect((await store.getOwner('svc-1'))?.version).toBe(2);
    expect(store.meter.conditionFailures).toBe(1);
    expect(await store.deleteOwner('svc-1', 2)).toBe(true);
    expect(await store.getOwner('svc-1')).toBeUndefined();
    expect(await store.deleteOwner('svc-1', 2)).toBe(false);
  });
});

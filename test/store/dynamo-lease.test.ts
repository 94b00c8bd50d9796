/**
 * What only the DynamoDB lease promises: its item layout and TTL attribute, and its meter. Its
 * behaviour is `test/contracts/lease.contract.ts`.
 */
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoLease } from '../../shared/store/dynamo-lease.js';
import { T0, TTL } from '../contracts/lease.contract.js';
import { freshTable } from '../support/dynamo.js';

describe('DynamoLease', () => {
  let client: DynamoDBClient;
  let tableName: string;
  let now = T0;
  let cluster = 0;
  // Each test gets its own cluster prefix, so tests share the table without sharing leases.
  const contenders = (...holders: string[]) => {
    cluster += 1;
    return holders.map(
      () => new DynamoLease({ client, tableName, cluster: `c${cluster}`, now: () => now }),
    );
  };

  beforeAll(async () => {
    ({ client, tableName } = await freshTable());
  });

  const leaseItem = async (name: string) =>
    (
      await client.send(
        new GetItemCommand({
          TableName: tableName,
          Key: { pk: { S: `c${cluster}#lease` }, sk: { S: name } },
          ConsistentRead: true,
        }),
      )
    ).Item;

  it('stores the item under <cluster>#lease, its TTL an hour past its end by the wall clock', async () => {
    // The lease's clock is decades from the wall clock (T0), as a simulated day's is months:
    // DynamoDB deletes by the wall clock, so the TTL is written from it.
    now = T0 + 500;
    const [a] = contenders('a');
    const before = Date.now();
    await a?.acquireLease('scale', 'a', TTL);
    const after = Date.now();
    const item = await leaseItem('scale');
    expect(item).toMatchObject({ holder: { S: 'a' }, expiresAtMs: { N: String(T0 + 500 + TTL) } });
    // Epoch seconds, as DynamoDB's TTL wants them, from the wall clock DynamoDB keeps.
    const ttl = Number(item?.expiresAt?.N);
    expect(ttl).toBeGreaterThanOrEqual(Math.ceil((before + TTL) / 1000) + 3600);
    expect(ttl).toBeLessThanOrEqual(Math.ceil((after + TTL) / 1000) + 3600);
  });

  it('counts requests and lost conditions on its meter', async () => {
    now = T0;
    const [a, b] = contenders('a', 'b');
    await a?.acquireLease('scale', 'a', TTL);
    await b?.acquireLease('scale', 'b', TTL);
    expect(a?.meter.totals()).toMatchObject({ writeRequests: 1, conditionFailures: 0 });
    expect(b?.meter.totals()).toMatchObject({ writeRequests: 1, conditionFailures: 1 });
  });
});

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

  it('stores the item under <cluster>#lease with the TTL attribute in epoch seconds', async () => {
    now = T0 + 500;
    const [a] = contenders('a');
    await a?.acquireLease('scale', 'a', TTL);
    const out = await client.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: `c${cluster}#lease` }, sk: { S: 'scale' } },
        ConsistentRead: true,
      }),
    );
    expect(out.Item).toMatchObject({
      holder: { S: 'a' },
      expiresAtMs: { N: String(T0 + 500 + TTL) },
      expiresAt: { N: String(Math.ceil((T0 + 500 + TTL) / 1000)) },
    });
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

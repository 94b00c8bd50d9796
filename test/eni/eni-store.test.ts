import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { EniConflictError } from '../../shared/eni/errors.js';
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { ip } from '../contracts/eni-store.contract.js';
import { freshTable } from '../support/dynamo.js';

describe('DynamoEniStore', () => {
  it("shares subnet marks between the clusters of a table: a subnet is the VPC's", async () => {
    const { client, tableName } = await freshTable();
    const blue = new DynamoEniStore({ client, tableName, cluster: 'blue' });
    const green = new DynamoEniStore({ client, tableName, cluster: 'green' });
    await blue.markSubnetShort('subnet-shared', 'prefixes', 42_000);
    expect(await green.subnetShortUntil('subnet-shared', 'prefixes')).toBe(42_000);
  });

  it('keys items by cluster and bills a claim as one write', async () => {
    const { client, tableName } = await freshTable();
    const store = new DynamoEniStore({ client, tableName, cluster: 'blue' });
    await store.commit('node-a', [
      { put: ip('10.0.0.9', { state: 'assigned', pod: 'g/web-0' }), expectedVersion: 0 },
    ]);
    const out = await client.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: 'blue#eni#node#node-a' }, sk: { S: 'ip#10.0.0.9' } },
      }),
    );
    expect(out.Item?.pod?.S).toBe('g/web-0');
    expect(store.meter.totals().writeRequests).toBe(1);
  });

  it('reads a node eventually consistent at half the cost of a strong read', async () => {
    const { client, tableName } = await freshTable();
    const store = new DynamoEniStore({ client, tableName, cluster: 'blue' });
    await store.commit('node-a', [{ put: ip('10.0.0.9'), expectedVersion: 0 }]);
    const before = store.meter.totals().readUnits;
    await store.loadNode('node-a');
    const strong = store.meter.totals().readUnits - before;
    await store.loadNode('node-a', 'eventual');
    const eventual = store.meter.totals().readUnits - before - strong;
    expect(eventual).toBe(strong / 2);
  });

  it('answers a single write that meets a transaction in flight with EniConflictError', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1' });
    const mock = mockClient(client);
    mock
      .on(PutItemCommand)
      .rejects(new TransactionConflictException({ message: 'conflict', $metadata: {} }));
    const store = new DynamoEniStore({ client, tableName: 't', cluster: 'blue' });
    const error = await store
      .commit('node-a', [{ put: ip('10.0.0.7'), expectedVersion: 0 }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EniConflictError);
    expect((error as EniConflictError).key).toEqual({ kind: 'ip', id: '10.0.0.7' });
    mock.restore();
  });
});

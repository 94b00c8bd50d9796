/**
 * A decrement DynamoDB applied before its request failed is never sent again: the SDK retries a
 * 5xx, and a use given back twice would be one a live pod still holds.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { WriteOutcomeUnknownError } from '../../shared/store/errors.js';
import { countAt, range } from '../contracts/host-port-store.contract.js';
import { freshTable } from '../support/dynamo.js';

const port = { name: 'game', range: 'default', port: 7010, protocol: 'UDP' as const };

/**
 * Fails the next `UpdateItem` as `failure` says: after DynamoDB applied it (a 500 on the way
 * back), or before it reached DynamoDB (a throttle). Answers how many UpdateItems were sent.
 */
function failNextUpdate(client: DynamoDBClient, failure: 'applied, then 500' | 'throttled') {
  let armed = true;
  let sent = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'UpdateItemCommand') return next(args);
      sent++;
      const fail = armed;
      armed = false;
      if (fail && failure === 'throttled')
        throw dynamoError('ProvisionedThroughputExceededException', 400);
      const out = await next(args);
      if (fail) throw dynamoError('InternalServerError', 500);
      return out;
    },
    { step: 'deserialize', name: 'failNextUpdate', priority: 'low' },
  );
  return { sent: () => sent };
}

function dynamoError(name: string, httpStatusCode: number): Error {
  return Object.assign(new Error(`injected ${name}`), {
    name,
    $fault: httpStatusCode >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode },
  });
}

async function storeWithUses(uses: number) {
  const { client, tableName } = await freshTable();
  const store = new DynamoHostPortStore({ client, tableName, cluster: 'once' });
  for (let i = 0; i < uses; i++) await store.addUses([port]);
  return { client, store };
}

describe('a decrement sent once', () => {
  it('takes a use away exactly once when DynamoDB applied it and then answered 500', async () => {
    const { client, store } = await storeWithUses(2);
    const updates = failNextUpdate(client, 'applied, then 500');
    await expect(store.removeUses([port])).rejects.toThrow(WriteOutcomeUnknownError);
    expect(updates.sent()).toBe(1);
    expect(countAt(await store.readCounts(range), 7010)).toBe(1);
  });

  it('still retries a decrement DynamoDB refused (throttled), which applied nothing', async () => {
    const { client, store } = await storeWithUses(2);
    const updates = failNextUpdate(client, 'throttled');
    await store.removeUses([port]);
    expect(updates.sent()).toBe(2);
    expect(countAt(await store.readCounts(range), 7010)).toBe(1);
  });

  it('keeps the retries of an increment, which at worst holds one use too many', async () => {
    const { client, store } = await storeWithUses(0);
    failNextUpdate(client, 'applied, then 500');
    await store.addUses([port]);
    expect(countAt(await store.readCounts(range), 7010)).toBe(2);
  });
});

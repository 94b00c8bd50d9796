import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoLedger } from '../../bench/cost/ledger.js';
import { freshTable } from '../support/dynamo.js';

describe('DynamoLedger', () => {
  it('bills each of several operations running at once for its own requests, lost races included', async () => {
    const { client, tableName } = await freshTable();
    const ledger = new DynamoLedger(client);
    const put = (key: string) =>
      client.send(
        new PutItemCommand({
          TableName: tableName,
          Item: { pk: { S: key }, sk: { S: 'x' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    // Three writers race for one key while a fourth writes two keys of its own.
    const racing = Array.from({ length: 3 }, () =>
      ledger.measure(async () => {
        await put('contended').catch(() => undefined);
      }),
    );
    const own = ledger.measure(async () => {
      await Promise.all([put('own-1'), put('own-2')]);
    });
    const [results, mine] = await Promise.all([Promise.all(racing), own]);
    expect(results.map((r) => r.usage.writeRequests)).toEqual([1, 1, 1]);
    // One writer won; each loser's refused write is billed one unit all the same.
    expect(results.map((r) => r.usage.refusedWrites).sort()).toEqual([0, 1, 1]);
    expect(results.map((r) => r.usage.billedWriteUnits)).toEqual([1, 1, 1]);
    expect(mine.usage.writeRequests).toBe(2);
    expect(mine.usage.refusedWrites).toBe(0);
    expect(ledger.unattributed.writeRequests).toBe(0);
  });
});

import { BatchWriteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { LeakLedgerWriteError } from '../../shared/repair/errors.js';
import type { LeakCounter } from '../../shared/repair/ledger.js';
import { DynamoLeakLedger } from '../../shared/store/dynamo-leak-ledger.js';
import { freshTable } from '../support/dynamo.js';

const counter = (i: number): LeakCounter => ({
  key: `value#nodePort#30000-32767#${i}`,
  holder: `h${i}`,
  passes: 1 + (i % 2),
  firstSeenAt: 1_000 + i,
});

describe('DynamoLeakLedger', () => {
  it('keeps counters across instances, in batches of any size, per cluster', async () => {
    const { client, tableName } = await freshTable();
    const ledger = new DynamoLeakLedger({ client, tableName, cluster: 'one' });
    const other = new DynamoLeakLedger({ client, tableName, cluster: 'two' });
    await ledger.apply({ put: Array.from({ length: 60 }, (_, i) => counter(i)), remove: [] });
    await other.apply({ put: [counter(0)], remove: [] });

    const coldStart = new DynamoLeakLedger({ client, tableName, cluster: 'one' });
    const read = await coldStart.list();
    expect(read.size).toBe(60);
    expect(read.get(counter(7).key)).toEqual(counter(7));

    await coldStart.apply({
      put: [{ ...counter(1), passes: 2 }],
      remove: Array.from({ length: 59 }, (_, i) => counter(i + 1).key).filter(
        (k) => k !== counter(1).key,
      ),
    });
    expect([...(await ledger.list()).values()]).toEqual([counter(0), { ...counter(1), passes: 2 }]);
    expect((await other.list()).size).toBe(1);
  });

  it('resends unprocessed writes and fails when they stay unprocessed', async () => {
    const dynamo = mockClient(DynamoDBClient);
    const table = 't';
    const put = { PutRequest: { Item: {} } };
    dynamo
      .on(BatchWriteItemCommand)
      .resolvesOnce({ UnprocessedItems: { [table]: [put] } })
      .resolvesOnce({});
    const sleeps: number[] = [];
    const ledger = new DynamoLeakLedger({
      client: new DynamoDBClient({ region: 'local' }),
      tableName: table,
      cluster: 'c',
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    await ledger.apply({ put: [counter(1), counter(2)], remove: [] });
    expect(dynamo.commandCalls(BatchWriteItemCommand)).toHaveLength(2);
    expect(sleeps).toHaveLength(1);

    dynamo.reset();
    dynamo.on(BatchWriteItemCommand).resolves({ UnprocessedItems: { [table]: [put] } });
    await expect(ledger.apply({ put: [counter(1)], remove: [] })).rejects.toBeInstanceOf(
      LeakLedgerWriteError,
    );
    dynamo.restore();
  });
});

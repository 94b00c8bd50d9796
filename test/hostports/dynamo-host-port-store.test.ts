/**
 * What only the DynamoDB host-port store promises: the write units an allocation and a release
 * bill, and the errors it passes through. Its behaviour is `test/contracts/host-port-store.contract.ts`.
 */
import {
  DynamoDBClient,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { releaseHostPorts } from '../../shared/hostports/allocator.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { podNamed, record } from '../contracts/host-port-store.contract.js';
import { freshTable } from '../support/dynamo.js';

let seq = 0;

async function newStore(): Promise<DynamoHostPortStore> {
  const { client, tableName } = await freshTable();
  return new DynamoHostPortStore({ client, tableName, cluster: `s${seq++}` });
}

describe('DynamoHostPortStore', () => {
  it('bills a one-port allocation 2 WCU and its release 2 WCU, with no transaction', async () => {
    const store = await newStore();
    const before = store.meter.totals();
    const a = record('a', [7010], { token: 't' });
    await Promise.all([store.putRecord(a), store.addUses(a.ports, new Map())]);
    const allocated = store.meter.totals();
    await releaseHostPorts({ store }, 'a', podNamed('a', 'default'));
    const released = store.meter.totals();
    expect(allocated.writeUnits - before.writeUnits).toBe(2);
    expect(released.writeUnits - allocated.writeUnits).toBe(2);
  });
});

describe('DynamoHostPortStore error translation', () => {
  function mocked(error: Error) {
    const client = new DynamoDBClient({
      region: 'local',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    const mock = mockClient(client);
    mock.on(UpdateItemCommand).rejects(error);
    return { mock, store: new DynamoHostPortStore({ client, tableName: 'berth', cluster: 'm' }) };
  }

  it('passes throttling and other failures through untouched, and never sends a transaction', async () => {
    const throttled = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    const { mock, store } = mocked(throttled);
    await expect(store.addUses(record('a', [7000]).ports, new Map())).rejects.toBe(throttled);
    expect(mock.commandCalls(TransactWriteItemsCommand)).toHaveLength(0);
  });
});

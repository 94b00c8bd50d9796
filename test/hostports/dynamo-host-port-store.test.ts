import {
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { MAX_ALLOCATION_ATTEMPTS } from '../../shared/hostports/allocator.js';
import {
  AllocationIdTakenError,
  HostPortConflictError,
  HostPortReleaseContentionError,
} from '../../shared/hostports/errors.js';
import type { HostPortRange } from '../../shared/hostports/spec.js';
import type { PodPortRecord, RangeCounts } from '../../shared/hostports/store.js';
import {
  DynamoHostPortStore,
  RELEASE_BACKOFF_BASE_MS,
} from '../../shared/store/dynamo-host-port-store.js';
import { freshTable } from '../support/dynamo.js';

const range: HostPortRange = { name: 'default', first: 7000, size: 200 };
let seq = 0;

async function newStore(): Promise<DynamoHostPortStore> {
  const { client, tableName } = await freshTable();
  return new DynamoHostPortStore({ client, tableName, cluster: `s${seq++}` });
}

function record(id: string, ports: readonly number[], namespace = 'default'): PodPortRecord {
  return {
    id,
    pod: { namespace, name: id, generateName: '' },
    ports: ports.map((port, i) => ({ name: `p${i}`, range: 'default', port, protocol: 'UDP' })),
    createdAt: 1,
  };
}

async function commitFresh(store: DynamoHostPortStore, r: PodPortRecord): Promise<void> {
  await store.commit(r, new Map([['default', await store.readCounts(range)]]));
}

const countAt = (counts: RangeCounts, port: number): number =>
  counts.counts[port - range.first] ?? 0;

describe('DynamoHostPortStore', () => {
  it('commits a record with its uses and reads both back, across count blocks', async () => {
    const store = await newStore();
    // 7039/7040 straddle the 64-port block boundary at 7040 (110 × 64).
    await commitFresh(store, record('a', [7000, 7039, 7040, 7199]));
    await commitFresh(store, record('b', [7040]));
    const counts = await store.readCounts(range);
    expect([7000, 7039, 7040, 7199, 7001].map((p) => countAt(counts, p))).toEqual([1, 1, 2, 1, 0]);
    expect(await store.getRecord('a')).toEqual(record('a', [7000, 7039, 7040, 7199]));
    const ids: string[] = [];
    for await (const r of store.listRecords()) ids.push(r.id);
    expect(ids.sort()).toEqual(['a', 'b']);
  });

  it('adds two uses when two held ports share a number (TCP-only and UDP-only of one pod)', async () => {
    const store = await newStore();
    await commitFresh(store, record('a', [7005, 7005]));
    expect(countAt(await store.readCounts(range), 7005)).toBe(2);
    await store.release('a', 'default');
    expect(countAt(await store.readCounts(range), 7005)).toBe(0);
  });

  it('refuses a commit whose counts moved, writing nothing at all', async () => {
    const store = await newStore();
    const stale = await store.readCounts(range);
    await commitFresh(store, record('a', [7010]));
    await expect(
      store.commit(record('b', [7010, 7020]), new Map([['default', stale]])),
    ).rejects.toThrow(HostPortConflictError);
    expect(await store.getRecord('b')).toBeUndefined();
    const counts = await store.readCounts(range);
    expect([countAt(counts, 7010), countAt(counts, 7020)]).toEqual([1, 0]);
  });

  it('accepts a count that went back to 0 after a release as the value 0', async () => {
    const store = await newStore();
    await commitFresh(store, record('a', [7010]));
    await store.release('a', 'default');
    await commitFresh(store, record('b', [7010]));
    expect(countAt(await store.readCounts(range), 7010)).toBe(1);
  });

  it('refuses a second record under one id', async () => {
    const store = await newStore();
    await commitFresh(store, record('a', [7010]));
    await expect(commitFresh(store, record('a', [7011]))).rejects.toThrow(AllocationIdTakenError);
    expect(countAt(await store.readCounts(range), 7011)).toBe(0);
  });

  it('releases exactly once, even when many releases of one id run at once', async () => {
    const store = await newStore();
    await commitFresh(store, record('a', [7010, 7011]));
    await commitFresh(store, record('b', [7010]));
    const results = await Promise.all(
      Array.from({ length: 6 }, () => store.release('a', 'default')),
    );
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    const counts = await store.readCounts(range);
    expect([countAt(counts, 7010), countAt(counts, 7011)]).toEqual([1, 0]);
    expect(await store.release('a', 'default')).toBeUndefined();
  });

  it('adds uses with no count condition when nothing was observed', async () => {
    const store = await newStore();
    const before = await store.readCounts(range);
    await commitFresh(store, record('a', [7010]));
    // Counts read before 'a' would refuse a conditioned commit; an unconditioned one adds.
    await expect(store.commit(record('b', [7010]), new Map([['default', before]]))).rejects.toThrow(
      HostPortConflictError,
    );
    await store.commit(record('b', [7010, 7011]), undefined);
    await store.commit(record('c', [7010]), undefined);
    const counts = await store.readCounts(range);
    expect([countAt(counts, 7010), countAt(counts, 7011)]).toEqual([3, 1]);
    await expect(store.commit(record('c', [7012]), undefined)).rejects.toThrow(
      AllocationIdTakenError,
    );
  });

  it('releases nothing for another namespace or an unknown id', async () => {
    const store = await newStore();
    await commitFresh(store, record('a', [7010], 'games'));
    expect(await store.release('a', 'default')).toBeUndefined();
    expect(await store.release('zzz', 'games')).toBeUndefined();
    expect(countAt(await store.readCounts(range), 7010)).toBe(1);
  });

  it('keeps counts on their port numbers when a range is widened or moved', async () => {
    const store = await newStore();
    await commitFresh(store, record('a', [7000, 7100]));
    const wider = await store.readCounts({ name: 'default', first: 6990, size: 300 });
    expect(wider.counts[10]).toBe(1);
    expect(wider.counts[110]).toBe(1);
    expect(wider.counts.reduce((a, b) => a + b, 0)).toBe(2);
  });
});

describe('DynamoHostPortStore error translation', () => {
  const canceled = (...codes: string[]) =>
    new TransactionCanceledException({
      message: 'Transaction cancelled',
      $metadata: {},
      CancellationReasons: codes.map((Code) => ({ Code })),
    });

  function mocked(error: Error): DynamoHostPortStore {
    const client = new DynamoDBClient({
      region: 'local',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    const mock = mockClient(client);
    mock.on(QueryCommand).resolves({ Items: [] });
    mock.on(TransactWriteItemsCommand).rejects(error);
    return new DynamoHostPortStore({ client, tableName: 'berth', cluster: 'm' });
  }

  const empty = new Map<string, RangeCounts>([
    ['default', { range, counts: new Array<number>(range.size).fill(0) }],
  ]);

  it('maps a failed record condition to AllocationIdTakenError', async () => {
    await expect(
      mocked(canceled('ConditionalCheckFailed', 'None')).commit(record('a', [7000]), empty),
    ).rejects.toThrow(AllocationIdTakenError);
  });

  it('maps a moved count or a transaction conflict to HostPortConflictError', async () => {
    for (const error of [
      canceled('None', 'ConditionalCheckFailed'),
      canceled('None', 'TransactionConflict'),
    ]) {
      const store = mocked(error);
      await expect(store.commit(record('a', [7000]), empty)).rejects.toThrow(HostPortConflictError);
      expect(store.meter.conditionFailures).toBe(1);
    }
  });

  function releasing(...outcomes: (Error | undefined)[]) {
    const client = new DynamoDBClient({
      region: 'local',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    const mock = mockClient(client);
    mock.on(GetItemCommand).resolves({
      Item: {
        pk: { S: 'm#pods' },
        sk: { S: 'a' },
        namespace: { S: 'default' },
        name: { S: 'a' },
        generateName: { S: '' },
        ports: {
          L: [{ M: { n: { S: 'p0' }, r: { S: 'default' }, p: { N: '7000' }, t: { S: 'UDP' } } }],
        },
        createdAt: { N: '1' },
      },
    });
    let transact = mock.on(TransactWriteItemsCommand);
    for (const outcome of outcomes) {
      transact = outcome ? transact.rejectsOnce(outcome) : transact.resolvesOnce({});
    }
    const sleeps: number[] = [];
    const store = new DynamoHostPortStore({
      client,
      tableName: 'berth',
      cluster: 'm',
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
    });
    return { mock, store, sleeps };
  }

  it('reads the record once and backs off with jitter between release attempts', async () => {
    const { mock, store, sleeps } = releasing(
      canceled('None', 'TransactionConflict'),
      canceled('TransactionConflict', 'None'),
      undefined,
    );
    expect((await store.release('a', 'default'))?.id).toBe('a');
    expect(mock.commandCalls(GetItemCommand)).toHaveLength(1);
    expect(mock.commandCalls(TransactWriteItemsCommand)).toHaveLength(3);
    expect(sleeps).toEqual([0.5 * RELEASE_BACKOFF_BASE_MS, RELEASE_BACKOFF_BASE_MS]);
  });

  it('gives up a release that keeps losing with an error naming the allocation id', async () => {
    const conflicts = Array.from({ length: MAX_ALLOCATION_ATTEMPTS }, () =>
      canceled('None', 'TransactionConflict'),
    );
    const { store, sleeps } = releasing(...conflicts);
    const failure = await store.release('a', 'default').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(HostPortReleaseContentionError);
    expect(failure).toMatchObject({ id: 'a', attempts: MAX_ALLOCATION_ATTEMPTS });
    expect(String((failure as Error).message)).toContain('allocation a');
    expect(sleeps).toHaveLength(MAX_ALLOCATION_ATTEMPTS - 1);
  });

  it('passes throttling and other failures through untouched', async () => {
    const throttled = canceled('None', 'ThrottlingError');
    await expect(mocked(throttled).commit(record('a', [7000]), empty)).rejects.toBe(throttled);
  });
});

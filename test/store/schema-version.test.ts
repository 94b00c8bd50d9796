/**
 * Items carry a schema version: every write path of every adapter stamps it (and guards on it),
 * an item without it reads as version 1, and an item a newer berth wrote is refused, read or
 * written, and left as it was.
 */
import {
  type AttributeValue,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { rawClient as rawClientOn } from '../../scripts/raw-table.js';
import type { OwnerRecord } from '../../shared/allocation/store.js';
import type { PoolRecord } from '../../shared/eni/model.js';
import { EMPTY_SCALE_MEMORY } from '../../shared/scale/store.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { DynamoLeakLedger } from '../../shared/store/dynamo-leak-ledger.js';
import { DynamoLease } from '../../shared/store/dynamo-lease.js';
import { DynamoRateBudget } from '../../shared/store/dynamo-rate-budget.js';
import { DynamoScaleMemory } from '../../shared/store/dynamo-scale-memory.js';
import { ItemSchemaTooNewError } from '../../shared/store/errors.js';
import {
  guarded,
  readable,
  SCHEMA_VERSION,
  SCHEMA_VERSION_ATTRIBUTE,
  schemaVersionOf,
} from '../../shared/store/schema-version.js';
import { ip } from '../contracts/eni-store.contract.js';
import { captureOutput } from '../support/capture.js';
import { freshTable } from '../support/dynamo.js';

type Item = Record<string, AttributeValue>;

const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);

/** A fresh table, and every write command as it left the client (after berth's middleware). */
async function recordedTable() {
  const { client, tableName } = await freshTable();
  const sent: { command: string; input: Record<string, unknown> }[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (WRITES.has(context.commandName ?? ''))
        sent.push({ command: context.commandName ?? '', input: args.input as never });
      return next(args);
    },
    { step: 'build', name: 'recordWrites' },
  );
  const scan = async (): Promise<Item[]> =>
    (await client.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }))).Items ??
    [];
  return { client, tableName, sent, scan };
}

const guardedWrite = (write: Record<string, unknown>) =>
  String(write.ConditionExpression).includes('<= :berthSchemaVersion') &&
  write.ReturnValuesOnConditionCheckFailure === 'ALL_OLD';
const stampedItem = (item: unknown) =>
  (item as Item)[SCHEMA_VERSION_ATTRIBUTE]?.N === String(SCHEMA_VERSION);

/** Each write sent stamps what it writes and is guarded where a condition is possible. */
function expectVersioned(sent: { command: string; input: Record<string, unknown> }[]) {
  expect(sent.length).toBeGreaterThan(0);
  for (const { command, input } of sent) {
    const single = (write: Record<string, unknown>, kind: string) => {
      expect(guardedWrite(write), `${command} ${kind} guarded`).toBe(true);
      if (kind === 'Put') expect(stampedItem(write.Item), `${command} stamps`).toBe(true);
      if (kind === 'Update')
        expect(String(write.UpdateExpression)).toMatch(
          /SET #berthSchemaVersion = :berthSchemaVersion/,
        );
    };
    if (command === 'PutItemCommand') single(input, 'Put');
    if (command === 'UpdateItemCommand') single(input, 'Update');
    if (command === 'DeleteItemCommand') single(input, 'Delete');
    if (command === 'TransactWriteItemsCommand') {
      for (const entry of input.TransactItems as Record<string, Record<string, unknown>>[]) {
        for (const [kind, write] of Object.entries(entry)) single(write, kind);
      }
    }
    if (command === 'BatchWriteItemCommand') {
      for (const requests of Object.values(input.RequestItems as Record<string, Item[]>)) {
        for (const request of requests as { PutRequest?: { Item: Item } }[]) {
          if (request.PutRequest) expect(stampedItem(request.PutRequest.Item)).toBe(true);
        }
      }
    }
  }
}

/** Every item in the table carries today's version. */
function expectAllStamped(items: Item[]) {
  expect(items.length).toBeGreaterThan(0);
  for (const item of items) {
    expect(schemaVersionOf(item), `${item.pk?.S} / ${item.sk?.S}`).toBe(SCHEMA_VERSION);
    expect(item[SCHEMA_VERSION_ATTRIBUTE]).toBeDefined();
  }
}

const rawClient = () => rawClientOn(inject('dynamodbEndpoint'));

/** Writes an item as a newer berth would. */
async function plantFuture(tableName: string, item: Item): Promise<Item> {
  const raw = rawClient();
  const future = { ...item, [SCHEMA_VERSION_ATTRIBUTE]: { N: String(SCHEMA_VERSION + 1) } };
  await raw.send(new PutItemCommand({ TableName: tableName, Item: future }));
  raw.destroy();
  return future;
}

/** The item as stored. */
async function itemAt(tableName: string, pk: string, sk: string): Promise<Item | undefined> {
  const raw = rawClient();
  const out = await raw.send(
    new GetItemCommand({
      TableName: tableName,
      Key: { pk: { S: pk }, sk: { S: sk } },
      ConsistentRead: true,
    }),
  );
  raw.destroy();
  return out.Item;
}

const pool: PoolRecord = {
  node: 'node-a',
  instanceId: 'i-0abc',
  instanceType: 'c5.large',
  availabilityZone: 'us-east-1a',
  subnetId: 'subnet-1',
  subnetCidr: '10.0.0.0/24',
  securityGroupIds: ['sg-1'],
  maxInterfaces: 3,
  ipv4PerInterface: 10,
  createdAt: 1_000,
  draining: false,
  version: 1,
};

const owner = (id: string, version: number): OwnerRecord => ({
  id,
  owner: { kind: 'Service', namespace: 'games', name: id },
  claims: [{ slot: 'clusterIP', range: 'r', offset: 5 }],
  version,
  createdAt: 1_000,
});

const T0 = Date.UTC(2099, 0, 1);

describe('the schema version policy', () => {
  it('reads an item without a version as version 1 and refuses a newer one, naming it and the fix', () => {
    expect(schemaVersionOf({ pk: { S: 'a' } })).toBe(1);
    expect(readable({ pk: { S: 'a' }, sv: { N: '1' } })).toBeDefined();
    const future = { pk: { S: 'local#pods' }, sk: { S: 'id-1' }, sv: { N: '7' } };
    expect(() => readable(future)).toThrow(ItemSchemaTooNewError);
    expect(() => readable(future)).toThrow(
      /local#pods \/ id-1 has schema version 7, newer than this berth understands \(1\): upgrade berth/,
    );
  });

  it('adds the guard to any condition and the version to any update expression, once', () => {
    const clause = fc.constantFrom(
      'SET #a = :a',
      'ADD #c1 :u1',
      'REMOVE #f',
      'SET #set = :set, #b = :b',
      'DELETE #s :v',
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(clause, { minLength: 1, maxLength: 3, selector: (c) => c.split(' ')[0] }),
        fc.option(fc.constantFrom('attribute_not_exists(#pk)', '#v = :v OR #w < :w')),
        (clauses, condition) => {
          const update = clauses.join(' ');
          const out = guarded(
            { UpdateExpression: update, ...(condition ? { ConditionExpression: condition } : {}) },
            true,
          );
          expect(out.UpdateExpression?.match(/(^|\s)SET\s/g)?.length).toBe(1);
          expect(out.UpdateExpression).toContain('#berthSchemaVersion = :berthSchemaVersion');
          // Every clause the adapter wrote is still there.
          for (const part of update.split(/(?:^|\s)(?:SET|ADD|REMOVE|DELETE)\s/).filter(Boolean))
            expect(out.UpdateExpression).toContain(part.trim());
          expect(out.ConditionExpression).toBe(
            `${condition ? `(${condition}) AND ` : ''}(attribute_not_exists(#berthSchemaVersion) OR #berthSchemaVersion <= :berthSchemaVersion)`,
          );
          expect(out.ExpressionAttributeNames).toEqual({ '#berthSchemaVersion': 'sv' });
        },
      ),
    );
  });
});

describe('every write path stamps the version', () => {
  it('host port store: records, names, uses, quotas (transactions too), repair corrections and marks', async () => {
    const { client, tableName, sent, scan } = await recordedTable();
    const store = new DynamoHostPortStore({ client, tableName, cluster: 'c' });
    const port = { name: 'game', range: 'default', port: 7001, protocol: 'UDP' as const };
    await store.putRecord({
      id: 'a1',
      pod: { kind: 'Pod', namespace: 'games', name: '', generateName: 'gs-' },
      ports: [port],
      createdAt: 1,
      token: 't',
    });
    await store.learnName('a1', {
      kind: 'Pod' as const,
      namespace: 'games',
      name: 'gs-1',
      generateName: 'gs-',
    });
    await store.addUses([port], new Map([['default#7001', { level: 0 }]]), 5);
    await store.removeUses([port]);
    await store.adjustNamespaceUse('games', 1, 10);
    // A record holding quota units: its first write is one transaction with the count.
    const quoted = { name: 'q', range: 'default', port: 7003, protocol: 'UDP' as const };
    const games = { kind: 'Pod' as const, namespace: 'games', name: 'gs-q', generateName: '' };
    await store.putRecord(
      { id: 'q1', pod: games, ports: [quoted], createdAt: 1, token: 'u', quotaUnits: 1 },
      10,
    );
    await store.correctCount('default', 7002, 0, 1);
    await store.markForeign('default', 7200, true);
    await store.markForeign('default', 7200, false);
    expectVersioned(sent);
    expectAllStamped(await scan());
    await store.deleteRecord('a1', {
      kind: 'Pod' as const,
      namespace: 'games',
      name: 'gs-1',
      generateName: 'gs-',
    });
    // And its delete, one transaction with the count.
    expect((await store.deleteRecord('q1', games))?.quotaUnits).toBe(1);
    expect(sent.some(({ command }) => command === 'TransactWriteItemsCommand')).toBe(true);
    expectVersioned(sent);
  });

  it('allocation store: owners, claims, releases and transfers', async () => {
    const { client, tableName, sent, scan } = await recordedTable();
    const store = new DynamoAllocationStore({ client, tableName, cluster: 'c' });
    await store.putOwner(owner('o1', 1), 0);
    await store.putOwner(owner('o1', 2), 1);
    await store.putOwner(owner('o2', 1), 0);
    await store.claim('r', 5, 'o1');
    await store.claim('r', 6, 'o1');
    await store.transfer('r', 6, 'o1', 'o2');
    await store.release('r', 5, 'o1');
    expectVersioned(sent);
    expectAllStamped(await scan());
    await store.deleteOwner('o2', 1);
    expectVersioned(sent);
  });

  it('ENI store: pools, leases, node items (one write and a transaction) and subnet marks', async () => {
    const { client, tableName, sent, scan } = await recordedTable();
    const store = new DynamoEniStore({ client, tableName, cluster: 'c' });
    await store.putPool(pool, 0);
    await store.tryLease('node-a', 'h', 1, 100);
    await store.endLease('node-a', 'h');
    await store.commit('node-a', [{ put: ip('10.0.0.5', { version: 1 }), expectedVersion: 0 }]);
    await store.commit('node-a', [
      { put: ip('10.0.0.5', { version: 2 }), expectedVersion: 1 },
      { put: ip('10.0.0.6', { version: 1 }), expectedVersion: 0 },
    ]);
    await store.markSubnetShort('subnet-1', 'addresses', T0);
    expectVersioned(sent);
    expectAllStamped(await scan());
    await store.commit('node-a', [{ delete: { kind: 'ip', id: '10.0.0.6' }, expectedVersion: 1 }]);
    expectVersioned(sent);
  });

  it('lease, leak ledger, EC2 rate budget and scale memory', async () => {
    const { client, tableName, sent, scan } = await recordedTable();
    const location = { client, tableName, cluster: 'c' };
    const lease = new DynamoLease({ ...location, now: () => T0 });
    await lease.acquireLease('repair', 'h', 60_000);
    await lease.renewLease('repair', 'h', 60_000);
    await new DynamoLeakLedger(location).apply({
      put: [{ key: 'pod#x', holder: 'h', passes: 1, firstSeenAt: 1 }],
      remove: [],
    });
    await new DynamoRateBudget({ ...location, scope: 'account', now: () => T0 }).take('describe');
    await new DynamoScaleMemory(location).save(EMPTY_SCALE_MEMORY);
    expectVersioned(sent);
    expectAllStamped(await scan());
    await lease.releaseLease('repair', 'h');
    expectVersioned(sent);
  });

  it('an item 0.1.0 wrote (no version) is read as version 1 and stamped when rewritten', async () => {
    const { client, tableName, scan } = await recordedTable();
    const raw = rawClient();
    await raw.send(
      new PutItemCommand({
        TableName: tableName,
        Item: { pk: { S: 'c#hostport-quotas' }, sk: { S: 'games' }, used: { N: '3' } },
      }),
    );
    raw.destroy();
    const store = new DynamoHostPortStore({ client, tableName, cluster: 'c' });
    expect(await store.namespaceUse('games')).toBe(3);
    expect(await store.adjustNamespaceUse('games', 1, 10)).toEqual({ applied: true, used: 4 });
    expectAllStamped(await scan());
  });
});

describe('an item a newer berth wrote', () => {
  it('is refused by every read and write of it, with the typed error, and left as it was', async () => {
    const { client, tableName } = await freshTable();
    const hostPorts = new DynamoHostPortStore({ client, tableName, cluster: 'c' });
    const eni = new DynamoEniStore({ client, tableName, cluster: 'c' });
    const allocation = new DynamoAllocationStore({ client, tableName, cluster: 'c' });
    const lease = new DynamoLease({ client, tableName, cluster: 'c', now: () => T0 });
    const planted = [
      await plantFuture(tableName, {
        pk: { S: 'c#hostport-quotas' },
        sk: { S: 'games' },
        used: { N: '3' },
      }),
      await plantFuture(tableName, {
        pk: { S: 'c#hostports#default' },
        sk: { S: '0109' },
        c25: { N: '1' },
      }),
      await plantFuture(tableName, {
        pk: { S: 'c#lease' },
        sk: { S: 'repair' },
        holder: { S: 'new' },
        expiresAtMs: { N: '1' },
      }),
      await plantFuture(tableName, {
        pk: { S: 'c#eni#node#node-a' },
        sk: { S: 'ip#10.0.0.5' },
        kind: { S: 'ip' },
        ip: { S: '10.0.0.5' },
        version: { N: '1' },
      }),
      await plantFuture(tableName, { pk: { S: 'c#owners' }, sk: { S: 'o1' }, version: { N: '1' } }),
    ];
    const refusals: [string, () => Promise<unknown>][] = [
      ['quota read', () => hostPorts.namespaceUse('games')],
      ['quota write', () => hostPorts.adjustNamespaceUse('games', 1, 10)],
      ['counts read', () => hostPorts.readCounts({ name: 'default', first: 7000, size: 1001 })],
      [
        'counts write',
        () => hostPorts.addUses([{ name: 'g', range: 'default', port: 7001, protocol: 'UDP' }]),
      ],
      ['count correction', () => hostPorts.correctCount('default', 7001, 1, 0)],
      ['lease take', () => lease.acquireLease('repair', 'old', 60_000)],
      ['lease renew', () => lease.renewLease('repair', 'new', 60_000)],
      ['lease release', () => lease.releaseLease('repair', 'new')],
      ['owner read', () => allocation.getOwner('o1')],
      ['owner write', () => allocation.putOwner(owner('o1', 2), 1)],
      ['owner delete', () => allocation.deleteOwner('o1')],
      ['ENI node read', () => eni.loadNode('node-a')],
      [
        'ENI put',
        () => eni.commit('node-a', [{ put: ip('10.0.0.5', { version: 2 }), expectedVersion: 1 }]),
      ],
      [
        'ENI transaction',
        () =>
          eni.commit('node-a', [
            { put: ip('10.0.0.5', { version: 2 }), expectedVersion: 1 },
            { put: ip('10.0.0.6', { version: 1 }), expectedVersion: 0 },
          ]),
      ],
      ['ENI delete', () => eni.commit('node-a', [{ delete: { kind: 'ip', id: '10.0.0.5' } }])],
    ];
    for (const [what, attempt] of refusals) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, what).toBeInstanceOf(ItemSchemaTooNewError);
      expect((error as ItemSchemaTooNewError).version, what).toBe(SCHEMA_VERSION + 1);
    }
    for (const item of planted) {
      expect(await itemAt(tableName, item.pk?.S ?? '', item.sk?.S ?? '')).toEqual(item);
    }
    // Nothing the refused transaction would have created either.
    expect(await itemAt(tableName, 'c#eni#node#node-a', 'ip#10.0.0.6')).toBeUndefined();
  });
});

describe('berth status over a table a newer berth wrote', () => {
  afterEach(() => vi.restoreAllMocks());

  it('exits 3 with one line naming the item, its version and the fix', async () => {
    const { tableName } = await freshTable();
    await plantFuture(tableName, {
      pk: { S: 'local#hostports#default' },
      sk: { S: '0109' },
      c25: { N: '1' },
    });
    const io = captureOutput();
    const endpoint = inject('dynamodbEndpoint');
    expect(await main(['status', '--dynamodb-endpoint', endpoint, '--table', tableName])).toBe(3);
    expect(io.err()).toBe(
      `berth: table item local#hostports#default / 0109 has schema version ${SCHEMA_VERSION + 1}, newer than this berth understands (${SCHEMA_VERSION}): upgrade berth to the version that wrote it (a downgrade reads and writes nothing it cannot understand; nothing was changed)\n`,
    );
  });
});

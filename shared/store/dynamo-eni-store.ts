/**
 * The DynamoDB adapter of `EniStore`, in berth's one table. Item families:
 * - `<cluster>#eni#pools` / `<node>`: the pool record, plus its lease (`leaseHolder`,
 *   `leaseUntil`), so listing every pool is one Query;
 * - `<cluster>#eni#node#<node>` / `eni#<id>`, `ip#<address>`, `pod#<ns>/<name>`,
 *   `intent#<client token>`: everything under one node, read with one Query;
 * - `<cluster>#eni#groups` / `use`: what each node group has needed (`eni/group-use.ts`), one
 *   JSON attribute read and written whole;
 * - `_eni#subnets` / `<subnet id>`: until when a subnet counts as out of addresses, and
 *   `<subnet id>#prefixes`: out of free /28s (TTL). Shared by every cluster in the table: a
 *   subnet is the VPC's, whichever cluster found it dry.
 * Records are flat, so each field is one attribute. Every write is conditional on the item's
 * `version`; a commit of several writes is one TransactWriteItems.
 */

import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { isConditionFailed, isTransactionConflict } from '../aws/error-codes.js';
import { EniConflictError } from '../eni/errors.js';
import {
  type DayPeak,
  type GroupUse,
  type IpRecord,
  itemKey,
  NO_GROUP_USE,
  type NodeItem,
  type NodeItemKey,
  type NodeState,
  type NodeUse,
  type PoolRecord,
} from '../eni/model.js';
import {
  type EniStore,
  MAX_ATOMIC_WRITES,
  type NodeRead,
  type NodeWrite,
  type SubnetShortage,
} from '../eni/store.js';
import { batchWrite } from './batch-write.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import type { TableLocation } from './location.js';
import { queryPartition } from './query.js';
import { sharedPartitionKey, TABLE_SCHEMA, timeToLiveFor } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK, timeToLiveAttribute: TTL } = TABLE_SCHEMA;

/** The sort key of the one item of a cluster's group use. */
const GROUP_USE_KEY = 'use';
/** An intent older than a day is stale whatever happened (the pass completes them in a minute). */
const INTENT_TTL_S = 86_400;
/** BatchWriteItem sends of one batch, resending unprocessed items after a short wait. */
const BATCH_ROUNDS = 6;

type Flat = Record<string, string | number | boolean | readonly string[] | undefined>;

/** Flat record → attributes: strings, numbers, booleans and string lists; undefined is left out. */
function marshal(record: Flat): Record<string, AttributeValue> {
  const item: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(record)) {
    if (value === undefined) continue;
    if (typeof value === 'string') item[name] = { S: value };
    else if (typeof value === 'number') item[name] = { N: String(value) };
    else if (typeof value === 'boolean') item[name] = { BOOL: value };
    else item[name] = { L: value.map((s) => ({ S: s })) };
  }
  return item;
}

/** Attributes → flat record (the inverse of `marshal`; key and TTL attributes dropped). */
function unmarshal(item: Record<string, AttributeValue>): Flat {
  const record: Flat = {};
  for (const [name, value] of Object.entries(item)) {
    if (name === PK || name === SK || name === TTL) continue;
    if (value.S !== undefined) record[name] = value.S;
    else if (value.N !== undefined) record[name] = Number(value.N);
    else if (value.BOOL !== undefined) record[name] = value.BOOL;
    else if (value.L !== undefined) record[name] = value.L.map((v) => v.S ?? '');
  }
  return record;
}

const sortKeyOf = (key: NodeItemKey): string => `${key.kind}#${key.id}`;

/** The TTL (epoch seconds) an item gets, if any: an intent's, a day from its write. */
function expiresAt(item: NodeItem): number | undefined {
  if (item.kind === 'intent') return timeToLiveFor(INTENT_TTL_S * 1000);
  return undefined;
}

/** `EniStore` over one DynamoDB table, scoped to one cluster. */
export class DynamoEniStore implements EniStore {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #cluster: string;

  constructor(options: TableLocation) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#cluster = options.cluster;
    this.meter = options.meter ?? new CapacityMeter();
  }

  #target() {
    return { client: this.#client, tableName: this.#table, meter: this.meter };
  }

  #poolsKey(): string {
    return `${this.#cluster}#eni#pools`;
  }

  #nodeKey(node: string): string {
    return `${this.#cluster}#eni#node#${node}`;
  }

  #groupsKey(): string {
    return `${this.#cluster}#eni#groups`;
  }

  #subnetsKey(): string {
    return sharedPartitionKey('eni', 'subnets');
  }

  async *listPools(): AsyncIterable<PoolRecord> {
    for await (const item of queryPartition(this.#target(), this.#poolsKey()))
      yield decodePool(item);
  }

  async getPool(node: string, read: NodeRead = 'strong'): Promise<PoolRecord | undefined> {
    const item = await this.#get(this.#poolsKey(), node, read === 'strong');
    return item ? decodePool(item) : undefined;
  }

  async putPool(pool: PoolRecord, expectedVersion: number): Promise<void> {
    // UpdateItem, not PutItem: the lease attributes on the same item must survive.
    // The node's report is one JSON attribute: read and written whole, never queried into.
    const fields = marshal({
      ...pool,
      securityGroupIds: [...pool.securityGroupIds],
      nodeUse: pool.nodeUse === undefined ? undefined : JSON.stringify(pool.nodeUse),
    });
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    const sets = Object.entries(fields).map(([name, value], i) => {
      names[`#f${i}`] = name;
      values[`:f${i}`] = value;
      return `#f${i} = :f${i}`;
    });
    const condition = expectedVersion === 0 ? 'attribute_not_exists(#pk)' : '#version = :expected';
    if (expectedVersion === 0) names['#pk'] = PK;
    else {
      names['#version'] = 'version';
      values[':expected'] = { N: String(expectedVersion) };
    }
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { [PK]: { S: this.#poolsKey() }, [SK]: { S: pool.node } },
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    if (!write.applied)
      throw new EniConflictError(pool.node, 0, undefined, { cause: write.failure });
  }

  async deletePool(node: string): Promise<void> {
    const keys: Record<string, AttributeValue>[] = [];
    for await (const item of queryPartition(this.#target(), this.#nodeKey(node), {
      keysOnly: true,
    })) {
      keys.push({ [PK]: item[PK] ?? { S: '' }, [SK]: item[SK] ?? { S: '' } });
    }
    keys.push({ [PK]: { S: this.#poolsKey() }, [SK]: { S: node } });
    const left = await batchWrite(
      this.#client,
      this.#table,
      keys.map((Key) => ({ DeleteRequest: { Key } })),
      { rounds: BATCH_ROUNDS, meter: this.meter },
    );
    if (left.length > 0) throw new Error(`deleting pool ${node}: DynamoDB kept items unprocessed`);
  }

  async tryLease(node: string, holder: string, now: number, until: number): Promise<boolean> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { [PK]: { S: this.#poolsKey() }, [SK]: { S: node } },
          UpdateExpression: 'SET #holder = :holder, #until = :until',
          ConditionExpression:
            'attribute_exists(#pk) AND (attribute_not_exists(#until) OR #until <= :now OR #holder = :holder)',
          ExpressionAttributeNames: { '#pk': PK, '#holder': 'leaseHolder', '#until': 'leaseUntil' },
          ExpressionAttributeValues: {
            ':holder': { S: holder },
            ':until': { N: String(until) },
            ':now': { N: String(now) },
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }

  async endLease(node: string, holder: string): Promise<void> {
    // A refused condition (expired and taken by another holder, or no pool) leaves nothing to give back.
    await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { [PK]: { S: this.#poolsKey() }, [SK]: { S: node } },
          UpdateExpression: 'REMOVE #holder, #until',
          ConditionExpression: '#holder = :holder',
          ExpressionAttributeNames: { '#holder': 'leaseHolder', '#until': 'leaseUntil' },
          ExpressionAttributeValues: { ':holder': { S: holder } },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
  }

  async loadNode(node: string, read: NodeRead = 'strong'): Promise<NodeState> {
    const state: {
      enis: NodeState['enis'][number][];
      ips: NodeState['ips'][number][];
      intents: NodeState['intents'][number][];
    } = { enis: [], ips: [], intents: [] };
    // Items of kinds this version no longer keeps (pod records before 0.4) decode to nothing.
    for await (const item of queryPartition(this.#target(), this.#nodeKey(node), {
      consistent: read === 'strong',
    })) {
      const record = decodeNodeItem(item);
      if (record?.kind === 'eni') state.enis.push(record);
      else if (record?.kind === 'ip') state.ips.push(record);
      else if (record?.kind === 'intent') state.intents.push(record);
    }
    return state;
  }

  async getIp(node: string, ip: string): Promise<IpRecord | undefined> {
    const item = await this.#get(this.#nodeKey(node), sortKeyOf({ kind: 'ip', id: ip }));
    const record = item ? decodeNodeItem(item) : undefined;
    return record?.kind === 'ip' ? record : undefined;
  }

  async commit(node: string, writes: readonly NodeWrite[]): Promise<void> {
    for (let start = 0; start < writes.length; start += MAX_ATOMIC_WRITES) {
      const chunk = writes.slice(start, start + MAX_ATOMIC_WRITES);
      if (chunk.length === 1 && chunk[0]) await this.#single(node, chunk[0], start);
      else await this.#transact(node, chunk, start);
    }
  }

  #keyOf(write: NodeWrite): NodeItemKey {
    return 'put' in write ? itemKey(write.put) : write.delete;
  }

  #condition(
    write: NodeWrite,
  ): Pick<
    TransactWriteItem['Put'] & object,
    'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
  > {
    if (write.expectedVersion === undefined) return {};
    if (write.expectedVersion === 0) {
      return {
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': PK },
      };
    }
    return {
      ConditionExpression: '#version = :expected',
      ExpressionAttributeNames: { '#version': 'version' },
      ExpressionAttributeValues: { ':expected': { N: String(write.expectedVersion) } },
    };
  }

  #putItem(node: string, item: NodeItem): Record<string, AttributeValue> {
    const ttl = expiresAt(item);
    const flat: Flat =
      item.kind === 'intent'
        ? { ...item, securityGroupIds: [...item.securityGroupIds] }
        : { ...item };
    return {
      [PK]: { S: this.#nodeKey(node) },
      [SK]: { S: sortKeyOf(itemKey(item)) },
      ...marshal(flat),
      ...(ttl === undefined ? {} : { [TTL]: { N: String(ttl) } }),
    };
  }

  async #single(node: string, write: NodeWrite, index: number): Promise<void> {
    const key = this.#keyOf(write);
    try {
      const out =
        'put' in write
          ? await this.#client.send(
              new PutItemCommand({
                TableName: this.#table,
                Item: this.#putItem(node, write.put),
                ...this.#condition(write),
                ReturnConsumedCapacity: 'TOTAL',
              }),
            )
          : await this.#client.send(
              new DeleteItemCommand({
                TableName: this.#table,
                Key: { [PK]: { S: this.#nodeKey(node) }, [SK]: { S: sortKeyOf(key) } },
                ...this.#condition(write),
                ReturnConsumedCapacity: 'TOTAL',
              }),
            );
      this.meter.write(out.ConsumedCapacity);
    } catch (error) {
      // A lost condition, or a transaction in flight on the item: both mean "re-read".
      if (!isConditionFailed(error) && !isTransactionConflict(error)) throw error;
      this.meter.failedWrite();
      throw new EniConflictError(node, index, key, { cause: error });
    }
  }

  async #transact(node: string, chunk: readonly NodeWrite[], start: number): Promise<void> {
    const items: TransactWriteItem[] = chunk.map((write) =>
      'put' in write
        ? {
            Put: {
              TableName: this.#table,
              Item: this.#putItem(node, write.put),
              ...this.#condition(write),
            },
          }
        : {
            Delete: {
              TableName: this.#table,
              Key: {
                [PK]: { S: this.#nodeKey(node) },
                [SK]: { S: sortKeyOf(write.delete) },
              },
              ...this.#condition(write),
            },
          },
    );
    try {
      const out = await this.#client.send(
        new TransactWriteItemsCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' }),
      );
      this.meter.write(out.ConsumedCapacity);
    } catch (error) {
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
      if ((error as { name?: string }).name !== 'TransactionCanceledException' || !reasons)
        throw error;
      // A lost condition, or a concurrent transaction on the same item: both mean "re-read".
      const failed = reasons.findIndex(
        (reason) =>
          reason.Code === 'ConditionalCheckFailed' || reason.Code === 'TransactionConflict',
      );
      if (failed < 0) throw error;
      // A cancelled transaction is billed twice the items' size, as a transaction is.
      this.meter.failedWrite(2 * chunk.length);
      const write = chunk[failed];
      throw new EniConflictError(node, start + failed, write ? this.#keyOf(write) : undefined, {
        cause: error,
      });
    }
  }

  async subnetShortUntil(subnetId: string, what: SubnetShortage): Promise<number> {
    const item = await this.#get(this.#subnetsKey(), subnetMarkKey(subnetId, what));
    return Number(item?.exhaustedUntil?.N ?? 0);
  }

  async groupUse(): Promise<GroupUse> {
    const item = await this.#get(this.#groupsKey(), GROUP_USE_KEY);
    const byType = item?.byType?.S;
    if (byType === undefined) return NO_GROUP_USE;
    return {
      byType: JSON.parse(byType) as Record<string, DayPeak[]>,
      version: Number(item?.version?.N ?? 0),
    };
  }

  async putGroupUse(use: GroupUse, expectedVersion: number): Promise<boolean> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: {
            [PK]: { S: this.#groupsKey() },
            [SK]: { S: GROUP_USE_KEY },
            byType: { S: JSON.stringify(use.byType) },
            version: { N: String(expectedVersion + 1) },
          },
          ConditionExpression:
            expectedVersion === 0 ? 'attribute_not_exists(#version)' : '#version = :expected',
          ExpressionAttributeNames: { '#version': 'version' },
          ...(expectedVersion === 0
            ? {}
            : { ExpressionAttributeValues: { ':expected': { N: String(expectedVersion) } } }),
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }

  async markSubnetShort(subnetId: string, what: SubnetShortage, until: number): Promise<void> {
    // A refused condition means a later mark is already there: that is the one to keep.
    await conditionalWrite(this.meter, () =>
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: {
            [PK]: { S: this.#subnetsKey() },
            [SK]: { S: subnetMarkKey(subnetId, what) },
            exhaustedUntil: { N: String(until) },
            // A mark lasts minutes (ENI_TIMINGS), well inside the TTL's margin past now.
            [TTL]: { N: String(timeToLiveFor(0)) },
          },
          // Keep the latest mark: a slower writer with an older `until` must not shorten it.
          ConditionExpression: 'attribute_not_exists(#until) OR #until < :until',
          ExpressionAttributeNames: { '#until': 'exhaustedUntil' },
          ExpressionAttributeValues: { ':until': { N: String(until) } },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
  }

  async #get(
    pk: string,
    sk: string,
    consistent = true,
  ): Promise<Record<string, AttributeValue> | undefined> {
    const out = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: { [PK]: { S: pk }, [SK]: { S: sk } },
        ConsistentRead: consistent,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.read(out.ConsumedCapacity);
    return out.Item;
  }
}

function decodePool(item: Record<string, AttributeValue>): PoolRecord {
  const f = unmarshal(item);
  return {
    node: String(f.node ?? item[SK]?.S ?? ''),
    instanceId: String(f.instanceId ?? ''),
    instanceType: String(f.instanceType ?? ''),
    availabilityZone: String(f.availabilityZone ?? ''),
    subnetId: String(f.subnetId ?? ''),
    subnetCidr: String(f.subnetCidr ?? ''),
    securityGroupIds: Array.isArray(f.securityGroupIds) ? [...f.securityGroupIds] : [],
    maxInterfaces: Number(f.maxInterfaces ?? 0),
    ipv4PerInterface: Number(f.ipv4PerInterface ?? 0),
    ...(typeof f.prefixDelegation === 'boolean' ? { prefixDelegation: f.prefixDelegation } : {}),
    ...(typeof f.maxPods === 'number' ? { maxPods: f.maxPods } : {}),
    createdAt: Number(f.createdAt ?? 0),
    draining: f.draining === true,
    ...(f.handout === 'node' ? { handout: 'node' as const } : {}),
    ...(nodeUseOf(f.nodeUse) ?? {}),
    ...(typeof f.floor === 'number' ? { floor: f.floor } : {}),
    ...(typeof f.opening === 'number' ? { opening: f.opening } : {}),
    version: Number(f.version ?? 0),
  };
}

/**
 * A pool's stored node report, as `{ nodeUse }`; undefined when there is none. Written by
 * `putPool` from a report berth parsed, so it is read back as written.
 */
function nodeUseOf(value: unknown): { nodeUse: NodeUse } | undefined {
  if (typeof value !== 'string') return undefined;
  const nodeUse = JSON.parse(value) as NodeUse;
  return Array.isArray(nodeUse?.leased) && Array.isArray(nodeUse.rested) ? { nodeUse } : undefined;
}

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function decodeNodeItem(item: Record<string, AttributeValue>): NodeItem | undefined {
  const f = unmarshal(item);
  const version = Number(f.version ?? 0);
  switch (f.kind) {
    case 'eni':
      return {
        kind: 'eni',
        eniId: String(f.eniId),
        subnetId: String(f.subnetId),
        deviceIndex: Number(f.deviceIndex),
        attachmentId: String(f.attachmentId),
        state: f.state === 'detaching' ? 'detaching' : 'attached',
        ...(f.primary === true ? { primary: true as const } : {}),
        ...(Array.isArray(f.foreign) ? { foreign: f.foreign.map(String) } : {}),
        ...(typeof f.primaryIp === 'string' ? { primaryIp: f.primaryIp } : {}),
        ...(typeof f.macAddress === 'string' ? { macAddress: f.macAddress } : {}),
        createdAt: Number(f.createdAt),
        mutatingAt: Number(f.mutatingAt ?? 0),
        version,
      };
    case 'ip': {
      const pod = str(f.pod);
      const containerId = str(f.containerId);
      const assignedAt = num(f.assignedAt);
      const reservedUntil = num(f.reservedUntil);
      const drainingSince = num(f.drainingSince);
      const wantedSince = num(f.wantedSince);
      const returnedAt = num(f.returnedAt);
      const prefix = str(f.prefix);
      const releaseId = str(f.releaseId);
      return {
        kind: 'ip',
        ip: String(f.ip),
        eniId: String(f.eniId),
        ...(prefix === undefined ? {} : { prefix }),
        state: f.state === 'assigned' ? 'assigned' : f.state === 'draining' ? 'draining' : 'free',
        ...(pod === undefined ? {} : { pod }),
        ...(containerId === undefined ? {} : { containerId }),
        sticky: f.sticky === true,
        ...(assignedAt === undefined ? {} : { assignedAt }),
        releasedAt: Number(f.releasedAt ?? 0),
        ...(releaseId === undefined ? {} : { releaseId }),
        ...(reservedUntil === undefined ? {} : { reservedUntil }),
        ...(drainingSince === undefined ? {} : { drainingSince }),
        ...(wantedSince === undefined ? {} : { wantedSince }),
        ...(returnedAt === undefined ? {} : { returnedAt }),
        createdAt: Number(f.createdAt ?? 0),
        version,
      };
    }
    case 'intent':
      return {
        kind: 'intent',
        clientToken: String(f.clientToken),
        subnetId: String(f.subnetId),
        securityGroupIds: Array.isArray(f.securityGroupIds) ? [...f.securityGroupIds] : [],
        secondaryIpCount: Number(f.secondaryIpCount),
        ...(typeof f.ipv4PrefixCount === 'number' ? { ipv4PrefixCount: f.ipv4PrefixCount } : {}),
        createdAt: Number(f.createdAt),
        version,
      };
    default:
      return undefined;
  }
}

/** The sort key of a subnet's shortage mark (the address mark keeps its original key). */
function subnetMarkKey(subnetId: string, what: SubnetShortage): string {
  return what === 'addresses' ? subnetId : `${subnetId}#${what}`;
}

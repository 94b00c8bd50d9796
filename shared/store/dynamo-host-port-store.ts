/**
 * The DynamoDB adapter of `HostPortStore`.
 *
 * Data model (one table, keys prefixed by the cluster like every berth item):
 * - `<cluster>#hostports#<range>` / `<block>`: use counts of 64 consecutive port numbers, one
 *   number attribute `c<slot>` per port ever used (port = block × 64 + slot). Blocks are keyed by
 *   port number, not by offset in the range, so widening or moving a range in the config keeps
 *   every count on its port. 64 counts keep an item near 0.5 KB (1 WCU per write), and a
 *   1,001-port range is 16 or 17 items: one strongly consistent Query of about 2 RCU reads it
 *   whole (1 RCU eventually consistent, as a view that only aged reads it). Attribute `w`
 *   holds when a use was last added to the item (epoch ms): a count above the level chosen is
 *   let through by one use only when that add came after the allocation began (a concurrent
 *   allocation's, not an older one).
 *   `f<slot>` marks a port the repair pass found held by a pod berth never admitted (a
 *   DaemonSet's, a hostNetwork pod's): an allocation's use of it is refused.
 * - `<cluster>#hostport-quotas` / `<namespace>`: the host ports a namespace with a quota holds,
 *   the sum of its records' `q`.
 * - `<cluster>#pods` / `<allocation id>`: the owner record: namespace, pod name (empty until
 *   berth learns the name of a pod created with generateName), generateName, the creating
 *   request's uid while unnamed, the held (name, range, port, protocol) list, createdAt, the
 *   writing allocation's token and `q`, the quota units it holds (absent on 0.2.0's records).
 *
 * No transaction where none is needed: DynamoDB bills a transactional write twice. An
 * allocation is a record Put (condition: absent, or written by the same allocation) beside one
 * UpdateItem per touched count item (`ADD c<slot> :uses`, condition: each count at most the level
 * the choice saw), sent together: 2 WCU and one round trip for a one-port pod. Every count write
 * answers its item (ALL_NEW, or ALL_OLD when refused), which keeps the caller's view current. A
 * release is a conditional Delete of the record that answers it (ALL_OLD), then the count
 * UpdateItems: whoever deleted the record removes its uses, so a release happens exactly once.
 * In a namespace with a quota, the record's first Put and its Delete are each one transaction
 * with the namespace's count (`ADD used`, the Put's conditioned on the quota), so no crash, retry
 * or second release can take or give back a unit apart from its record: 4 WCU instead of 1 each
 * (the Delete first tries the plain conditional write for a record holding no units, and learns
 * from its refusal, ALL_OLD, what a record holding some carries).
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  AllocationIdTakenError,
  HostPortConflictError,
  NamespaceQuotaFullError,
} from '../hostports/errors.js';
import {
  type HostPortRange,
  lastPort,
  PORT_PROTOCOLS,
  type PortProtocol,
} from '../hostports/model.js';
import type { BlockCounts } from '../hostports/store.js';
import {
  ANY_COUNT,
  type CountsRead,
  type HeldPort,
  type HostPortStore,
  isRecordOf,
  levelKey,
  type PodNameStore,
  type PodPortRecord,
  type RangeCounts,
  type UseLevel,
  unnamedRequestOf,
} from '../hostports/store.js';
import type { Owner } from '../vocabulary/owner.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import type { TableLocation } from './location.js';
import { onceOnly } from './once-only-write.js';
import { queryPartition } from './query.js';
import { TABLE_SCHEMA } from './table.js';
import { transactWrite } from './transact.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Port numbers per count item. */
export const COUNT_BLOCK_PORTS = 64;

/** Zero-padded so that key order is port order (65535 / 64 < 10,000). */
const blockSortKey = (block: number): string => String(block).padStart(4, '0');
const COUNT_ATTRIBUTE = /^c(\d+)$/;
/** A count item's last add (epoch ms): tells a concurrent allocation's use from an older one. */
const WRITTEN_AT = 'w';
/** `f<slot>` marks a port held by a pod berth never admitted: never handed out. */
const FOREIGN_ATTRIBUTE = /^f(\d+)$/;
/** Attempts at a release whose record changed between its read and its transaction. */
const RELEASE_ATTEMPTS = 4;

/** The uses one write adds to (or removes from) the ports of one count item. */
interface BlockChange {
  readonly range: string;
  readonly block: number;
  /** Slot → uses to add, and the condition its count must meet (when conditioned). */
  readonly slots: ReadonlyMap<number, { readonly uses: number; readonly level?: UseLevel }>;
  /** Recorded as the item's last add. */
  readonly writtenAt?: number;
}

/** `HostPortStore` over one DynamoDB table, scoped to one cluster. */
export class DynamoHostPortStore implements HostPortStore, PodNameStore {
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

  #countsKey(range: string): string {
    return `${this.#cluster}#hostports#${range}`;
  }

  #recordKey(id: string): Record<string, AttributeValue> {
    return { [PK]: { S: `${this.#cluster}#pods` }, [SK]: { S: id } };
  }

  async readCounts(range: HostPortRange, read: CountsRead = 'strong'): Promise<RangeCounts> {
    const counts = new Array<number>(range.size).fill(0);
    const foreign = new Set<number>();
    const from = blockSortKey(Math.floor(range.first / COUNT_BLOCK_PORTS));
    const to = blockSortKey(Math.floor(lastPort(range) / COUNT_BLOCK_PORTS));
    for await (const item of queryPartition(this.#target(), this.#countsKey(range.name), {
      between: { from, to },
      consistent: read === 'strong',
    })) {
      const block = Number(item[SK]?.S ?? Number.NaN);
      for (const [attribute, value] of Object.entries(item)) {
        const match = COUNT_ATTRIBUTE.exec(attribute) ?? FOREIGN_ATTRIBUTE.exec(attribute);
        if (!match || value.N === undefined) continue;
        const offset = block * COUNT_BLOCK_PORTS + Number(match[1]) - range.first;
        if (offset < 0 || offset >= range.size) continue;
        if (attribute.startsWith('f')) foreign.add(offset);
        else counts[offset] = Number(value.N);
      }
    }
    return {
      range,
      counts,
      portsPerItem: COUNT_BLOCK_PORTS,
      ...(foreign.size === 0 ? {} : { foreign }),
    };
  }

  async getRecord(id: string): Promise<PodPortRecord | undefined> {
    const out = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: this.#recordKey(id),
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.read(out.ConsumedCapacity);
    return out.Item ? decodeRecord(out.Item) : undefined;
  }

  async putRecord(record: PodPortRecord, quota?: number): Promise<void> {
    const units = record.quotaUnits ?? 0;
    // Taken with the record, or nothing written; a record already there is a rewrite (below).
    if (quota !== undefined && units > 0 && (await this.#putTakingUnits(record, units, quota)))
      return;
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: { ...this.#recordKey(record.id), ...encodeRecord(record) },
          ...(record.token === undefined
            ? {
                ConditionExpression: 'attribute_not_exists(#pk)',
                ExpressionAttributeNames: { '#pk': PK },
              }
            : {
                ConditionExpression: 'attribute_not_exists(#pk) OR #token = :token',
                ExpressionAttributeNames: { '#pk': PK, '#token': 'token' },
                ExpressionAttributeValues: { ':token': { S: record.token } },
              }),
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    if (!write.applied) throw new AllocationIdTakenError(record.id, { cause: write.failure });
  }

  async deleteRecord(id: string, pod: Owner, token?: string): Promise<PodPortRecord | undefined> {
    for (let attempt = 1; attempt <= RELEASE_ATTEMPTS; attempt++) {
      // A record holding no quota units goes in one plain conditional Delete.
      const condition = recordOf(pod, token);
      let old: Record<string, AttributeValue> | undefined;
      const write = await conditionalWrite(this.meter, async () => {
        const out = await this.#client.send(
          new DeleteItemCommand({
            TableName: this.#table,
            Key: this.#recordKey(id),
            ConditionExpression: `${condition.expression} AND (attribute_not_exists(#q) OR #q = :none)`,
            ExpressionAttributeNames: { ...condition.names, '#q': 'q' },
            ExpressionAttributeValues: { ...condition.values, ':none': { N: '0' } },
            ReturnValues: 'ALL_OLD',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        old = out.Attributes;
        return out;
      });
      if (write.applied) return old ? decodeRecord(old) : undefined;
      // Refused: already released, or never this pod's (exactly once, nothing to do), or the
      // record holds units, which go back with it in one transaction.
      const found = write.item ? decodeRecord(write.item) : undefined;
      const units = found?.quotaUnits ?? 0;
      if (!found || !isRecordOf(found, pod, token) || units === 0) return undefined;
      const outcome = await transactWrite(this.#target(), [
        {
          Delete: {
            TableName: this.#table,
            Key: this.#recordKey(id),
            // The very record read: its ports are what the caller removes the uses of.
            ConditionExpression: `${condition.expression} AND #q = :units AND #createdAt = :createdAt`,
            ExpressionAttributeNames: { ...condition.names, '#q': 'q', '#createdAt': 'createdAt' },
            ExpressionAttributeValues: {
              ...condition.values,
              ':units': { N: String(units) },
              ':createdAt': { N: String(found.createdAt) },
            },
          },
        },
        {
          // Unconditioned: nothing may keep a record, and its ports, from being released.
          Update: {
            TableName: this.#table,
            Key: this.#quotaKey(found.pod.namespace),
            UpdateExpression: 'ADD #used :units',
            ExpressionAttributeNames: { '#used': 'used' },
            ExpressionAttributeValues: { ':units': { N: String(-units) } },
          },
        },
      ]);
      if (outcome.applied) return found;
      // The record changed since it was read (a name learned, gone): read it again.
    }
    throw new Error(
      `the host port record ${id} changed on every one of ${RELEASE_ATTEMPTS} attempts to release it`,
    );
  }

  /**
   * The record's first write and its units taken from its namespace's count, in one transaction;
   * false when a record is stored under its id already (the caller's rewrite path decides).
   */
  async #putTakingUnits(record: PodPortRecord, units: number, quota: number): Promise<boolean> {
    const { namespace } = record.pod;
    // The condition below would let an absent count take any number of units.
    if (units > quota)
      throw new NamespaceQuotaFullError(namespace, await this.namespaceUse(namespace));
    const outcome = await transactWrite(this.#target(), [
      {
        Put: {
          TableName: this.#table,
          Item: { ...this.#recordKey(record.id), ...encodeRecord(record) },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
        },
      },
      {
        Update: {
          TableName: this.#table,
          Key: this.#quotaKey(namespace),
          UpdateExpression: 'ADD #used :units',
          ConditionExpression: 'attribute_not_exists(#used) OR #used <= :room',
          ExpressionAttributeNames: { '#used': 'used' },
          ExpressionAttributeValues: {
            ':units': { N: String(units) },
            ':room': { N: String(quota - units) },
          },
        },
      },
    ]);
    if (outcome.applied) return true;
    if (outcome.refused[0]) return false;
    throw new NamespaceQuotaFullError(namespace, Number(outcome.items[1]?.used?.N ?? 0));
  }

  async handOver(id: string, recorded: Owner, request: string): Promise<boolean> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#recordKey(id),
          UpdateExpression: 'SET #request = :handedTo',
          // Already handed to `request` counts as handed: the SDK retries a write that landed
          // and then failed (a 500), and that retry must not read as a refusal.
          ConditionExpression: `attribute_exists(#pk) AND #ns = :ns AND #name = :unnamed AND #generateName = :generateName AND (#request = :handedTo OR ${recorded.request === undefined ? 'attribute_not_exists(#request)' : '#request = :request'})`,
          ExpressionAttributeNames: {
            '#pk': PK,
            '#ns': 'namespace',
            '#name': 'name',
            '#generateName': 'generateName',
            '#request': 'request',
          },
          ExpressionAttributeValues: {
            ':ns': { S: recorded.namespace },
            ':unnamed': { S: '' },
            ':generateName': { S: recorded.generateName ?? '' },
            ':handedTo': { S: request },
            ...(recorded.request === undefined ? {} : { ':request': { S: recorded.request } }),
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }

  async learnName(id: string, pod: Owner): Promise<boolean> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#recordKey(id),
          UpdateExpression: 'SET #name = :name',
          ConditionExpression:
            'attribute_exists(#pk) AND #ns = :ns AND #name = :unnamed AND #generateName = :generateName',
          ExpressionAttributeNames: {
            '#pk': PK,
            '#ns': 'namespace',
            '#name': 'name',
            '#generateName': 'generateName',
          },
          ExpressionAttributeValues: {
            ':ns': { S: pod.namespace },
            ':name': { S: pod.name },
            ':unnamed': { S: '' },
            ':generateName': { S: pod.generateName ?? '' },
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }

  async addUses(
    ports: readonly HeldPort[],
    levels?: ReadonlyMap<string, UseLevel>,
    writtenAt?: number,
  ): Promise<readonly BlockCounts[]> {
    const changes = blockChanges(ports, 1, levels).map((change) =>
      writtenAt === undefined ? change : { ...change, writtenAt },
    );
    const outcomes = await Promise.all(changes.map((change) => this.#change(change)));
    const refused = outcomes.filter((o) => !o.applied);
    if (refused.length === 0) return outcomes.map((o) => o.block);
    // Take back what the other items took, so the allocation leaves no use behind.
    const applied = changes.filter((_, i) => outcomes[i]?.applied);
    const undone = await Promise.all(applied.map((change) => this.#change(negate(change))));
    throw new HostPortConflictError(
      `host port counts of ${ports.map((p) => p.port).join(', ')} rose above the level chosen`,
      { blocks: [...refused.map((o) => o.block), ...undone.map((o) => o.block)] },
    );
  }

  async removeUses(ports: readonly HeldPort[]): Promise<readonly BlockCounts[]> {
    const outcomes = await Promise.all(
      blockChanges(ports, -1, undefined).map((change) => this.#change(change)),
    );
    return outcomes.map((o) => o.block);
  }

  async adjustNamespaceUse(
    namespace: string,
    delta: number,
    limit?: number,
  ): Promise<{ applied: boolean; used: number }> {
    const condition:
      | { ConditionExpression: string; values: Record<string, AttributeValue> }
      | undefined =
      delta < 0
        ? { ConditionExpression: '#used >= :taken', values: { ':taken': { N: String(-delta) } } }
        : limit === undefined
          ? undefined
          : {
              ConditionExpression: 'attribute_not_exists(#used) OR #used <= :room',
              values: { ':room': { N: String(limit - delta) } },
            };
    // The count as written, or as it stood when the condition refused the write.
    const { applied, item: found } = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#quotaKey(namespace),
          UpdateExpression: 'ADD #used :delta',
          ExpressionAttributeNames: { '#used': 'used' },
          ExpressionAttributeValues: { ':delta': { N: String(delta) }, ...condition?.values },
          ...(condition ? { ConditionExpression: condition.ConditionExpression } : {}),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return { applied, used: Number(found?.used?.N ?? 0) };
  }

  async namespaceUse(namespace: string): Promise<number> {
    const out = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: this.#quotaKey(namespace),
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.read(out.ConsumedCapacity);
    return Number(out.Item?.used?.N ?? 0);
  }

  #quotaKey(namespace: string): Record<string, AttributeValue> {
    return { [PK]: { S: `${this.#cluster}#hostport-quotas` }, [SK]: { S: namespace } };
  }

  async *listRecords(): AsyncIterable<PodPortRecord> {
    for await (const item of queryPartition(this.#target(), `${this.#cluster}#pods`)) {
      yield decodeRecord(item);
    }
  }

  // ---- Repair only (shared/repair/store.ts `HostPortRepairStore`) --------------------------

  /**
   * Sets the use count of `port` in `range` to `to` if it is still `from` (0: also never used):
   * how the repair pass corrects drift without overwriting a racing allocation.
   */
  async correctCount(range: string, port: number, from: number, to: number): Promise<boolean> {
    const slot = port % COUNT_BLOCK_PORTS;
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: {
            [PK]: { S: this.#countsKey(range) },
            [SK]: { S: blockSortKey(Math.floor(port / COUNT_BLOCK_PORTS)) },
          },
          UpdateExpression: 'SET #c = :to',
          ConditionExpression: from === 0 ? 'attribute_not_exists(#c) OR #c = :from' : '#c = :from',
          ExpressionAttributeNames: { '#c': `c${slot}` },
          ExpressionAttributeValues: { ':from': { N: String(from) }, ':to': { N: String(to) } },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }

  /**
   * Marks `port` of `range` as held by a pod berth never admitted (`held`), or clears the mark:
   * an allocation never takes a marked port, and a use written from a view that missed the mark
   * is refused.
   */
  async markForeign(range: string, port: number, held: boolean): Promise<void> {
    const out = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: {
          [PK]: { S: this.#countsKey(range) },
          [SK]: { S: blockSortKey(Math.floor(port / COUNT_BLOCK_PORTS)) },
        },
        UpdateExpression: held ? 'SET #f = :one' : 'REMOVE #f',
        ExpressionAttributeNames: { '#f': `f${port % COUNT_BLOCK_PORTS}` },
        ...(held ? { ExpressionAttributeValues: { ':one': { N: '1' } } } : {}),
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
  }

  // ---- end of repair only --------------------------------------------------------------------

  /** One count item's UpdateItem; answers whether it applied, and the item as left or found. */
  async #change(change: BlockChange): Promise<{ applied: boolean; block: BlockCounts }> {
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    const adds: string[] = [];
    const conditions: string[] = [];
    for (const [slot, { uses, level }] of change.slots) {
      names[`#c${slot}`] = `c${slot}`;
      values[`:u${slot}`] = { N: String(uses) };
      adds.push(`#c${slot} :u${slot}`);
      if (level === undefined) continue;
      names[`#f${slot}`] = `f${slot}`;
      conditions.push(`attribute_not_exists(#f${slot})`);
      if (level.level === ANY_COUNT) continue;
      values[`:l${slot}`] = { N: String(level.level) };
      // A port never used has no attribute, which is count 0: within any level.
      const within = [`attribute_not_exists(#c${slot})`, `#c${slot} <= :l${slot}`];
      if (level.concurrentSince !== undefined) {
        names['#w'] = WRITTEN_AT;
        values[`:m${slot}`] = { N: String(level.level + 1) };
        values[`:s${slot}`] = { N: String(level.concurrentSince) };
        within.push(`(#c${slot} <= :m${slot} AND #w > :s${slot})`);
      }
      conditions.push(`(${within.join(' OR ')})`);
    }
    if (change.writtenAt !== undefined) {
      names['#w'] = WRITTEN_AT;
      values[':w'] = { N: String(change.writtenAt) };
    }
    const key = {
      [PK]: { S: this.#countsKey(change.range) },
      [SK]: { S: blockSortKey(change.block) },
    };
    const command = new UpdateItemCommand({
      TableName: this.#table,
      Key: key,
      UpdateExpression: `ADD ${adds.join(', ')}${change.writtenAt === undefined ? '' : ' SET #w = :w'}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND ') } : {}),
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      ReturnConsumedCapacity: 'TOTAL',
    });
    // A use taken away twice would show a port a live pod holds as less used than it is (the
    // contract releases a pod's ports exactly once); added twice, it only holds one too many
    // until the repair pass recounts, so an increment keeps the SDK's retries.
    const removing = [...change.slots.values()].some((slot) => slot.uses < 0);
    const send = removing
      ? onceOnly(
          command,
          `removing uses of ${change.range} ports in block ${change.block} (if it did not land, the repair pass recounts the block)`,
        )
      : command;
    // The count as written, or as it stood when the condition refused the write.
    const { applied, item: found } = await conditionalWrite(this.meter, () =>
      this.#client.send(send),
    );
    return { applied, block: decodeBlock(change.range, change.block, found) };
  }
}

/**
 * The writes that add `sign` uses for `ports`: one per touched count item, a port held twice
 * (a number shared by a TCP-only and a UDP-only port) adding two uses, each conditioned on its
 * level when `levels` are given.
 */
function blockChanges(
  ports: readonly HeldPort[],
  sign: 1 | -1,
  levels: ReadonlyMap<string, UseLevel> | undefined,
): BlockChange[] {
  const changes = new Map<
    string,
    { range: string; block: number; slots: Map<number, { uses: number; level?: UseLevel }> }
  >();
  for (const port of ports) {
    const block = Math.floor(port.port / COUNT_BLOCK_PORTS);
    const key = `${port.range}/${block}`;
    const change = changes.get(key) ?? { range: port.range, block, slots: new Map() };
    const slot = port.port % COUNT_BLOCK_PORTS;
    const uses = (change.slots.get(slot)?.uses ?? 0) + sign;
    const level = levels?.get(levelKey(port.range, port.port));
    change.slots.set(slot, level === undefined ? { uses } : { uses, level });
    changes.set(key, change);
  }
  return [...changes.values()];
}

/** The write that takes back what `change` added, unconditionally. */
function negate(change: BlockChange): BlockChange {
  return {
    range: change.range,
    block: change.block,
    slots: new Map([...change.slots].map(([slot, { uses }]) => [slot, { uses: -uses }])),
  };
}

/** A count item as DynamoDB answered it (absent: never written, every count 0). */
function decodeBlock(
  range: string,
  block: number,
  item: Record<string, AttributeValue> | undefined,
): BlockCounts {
  const counts = new Map<number, number>();
  const foreign = new Set<number>();
  for (const [attribute, value] of Object.entries(item ?? {})) {
    const match = COUNT_ATTRIBUTE.exec(attribute);
    if (match && value.N !== undefined) {
      counts.set(block * COUNT_BLOCK_PORTS + Number(match[1]), Number(value.N));
    }
    const mark = FOREIGN_ATTRIBUTE.exec(attribute);
    if (mark) foreign.add(block * COUNT_BLOCK_PORTS + Number(mark[1]));
  }
  const writtenAt = item?.[WRITTEN_AT]?.N;
  return {
    range,
    firstPort: block * COUNT_BLOCK_PORTS,
    ports: COUNT_BLOCK_PORTS,
    counts,
    ...(writtenAt === undefined ? {} : { writtenAt: Number(writtenAt) }),
    ...(foreign.size === 0 ? {} : { foreign }),
  };
}

function encodeRecord(record: PodPortRecord): Record<string, AttributeValue> {
  return {
    namespace: { S: record.pod.namespace },
    name: { S: record.pod.name },
    // Every layout since 0.1.0 stores a pod's generateName, empty or not, and no kind: a pods
    // partition holds pods' records only, so decoding gives the kind back.
    generateName: { S: record.pod.generateName ?? '' },
    ...(record.pod.request === undefined ? {} : { request: { S: record.pod.request } }),
    ports: {
      L: record.ports.map((p) => ({
        M: { n: { S: p.name }, r: { S: p.range }, p: { N: String(p.port) }, t: { S: p.protocol } },
      })),
    },
    createdAt: { N: String(record.createdAt) },
    ...(record.token === undefined ? {} : { token: { S: record.token } }),
    ...(record.quotaUnits === undefined ? {} : { q: { N: String(record.quotaUnits) } }),
  };
}

function decodeProtocol(text: string | undefined): PortProtocol {
  return (PORT_PROTOCOLS as readonly string[]).includes(text ?? '')
    ? (text as PortProtocol)
    : 'UDP';
}

function decodeRecord(item: Record<string, AttributeValue>): PodPortRecord {
  return {
    id: item[SK]?.S ?? '',
    pod: {
      kind: 'Pod',
      namespace: item.namespace?.S ?? '',
      name: item.name?.S ?? '',
      generateName: item.generateName?.S ?? '',
      ...(item.request?.S === undefined ? {} : { request: item.request.S }),
    },
    ports: (item.ports?.L ?? []).map((entry) => ({
      name: entry.M?.n?.S ?? '',
      range: entry.M?.r?.S ?? '',
      port: Number(entry.M?.p?.N ?? Number.NaN),
      protocol: decodeProtocol(entry.M?.t?.S),
    })),
    createdAt: Number(item.createdAt?.N ?? 0),
    ...(item.token?.S === undefined ? {} : { token: item.token.S }),
    ...(item.q?.N === undefined ? {} : { quotaUnits: Number(item.q.N) }),
  };
}

/**
 * The condition that the record is `pod`'s (`isRecordOf`): its namespace and name; a record
 * written at a CREATE with generateName has no name, only the generateName the pod keeps.
 */
function recordOf(
  pod: Owner,
  token: string | undefined,
): {
  expression: string;
  names: Record<string, string>;
  values: Record<string, AttributeValue>;
} {
  const samePod = pod.generateName
    ? '(#name = :name OR (#name = :unnamed AND #generateName = :generateName))'
    : '#name = :name';
  const request = unnamedRequestOf(pod);
  return {
    expression: `attribute_exists(#pk) AND #ns = :ns AND ${samePod}${request === undefined ? '' : ' AND #request = :request'}${token === undefined ? '' : ' AND #token = :token'}`,
    names: {
      '#pk': PK,
      '#ns': 'namespace',
      '#name': 'name',
      ...(pod.generateName ? { '#generateName': 'generateName' } : {}),
      ...(request === undefined ? {} : { '#request': 'request' }),
      ...(token === undefined ? {} : { '#token': 'token' }),
    },
    values: {
      ':ns': { S: pod.namespace },
      ':name': { S: pod.name },
      ...(pod.generateName
        ? { ':unnamed': { S: '' }, ':generateName': { S: pod.generateName } }
        : {}),
      ...(request === undefined ? {} : { ':request': { S: request } }),
      ...(token === undefined ? {} : { ':token': { S: token } }),
    },
  };
}

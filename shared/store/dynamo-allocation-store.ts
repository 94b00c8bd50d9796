/**
 * The DynamoDB adapter of `AllocationStore`. A range is stored as blocks of 32 values, one item
 * each; a taken value is an attribute `v<slot>` holding its owner's allocation id, and `t<slot>`
 * when it was claimed (epoch seconds, rounded up; removed with the value). Claiming is one
 * conditional UpdateItem on one attribute, so writers of different values in one block never
 * conflict (unlike the kube-apiserver's one-object bitmap, where every writer conflicts).
 * A block whose 32 values are all held is about 1.05 KB with its claim times (under 0.8 KB
 * without), so a write to a block with more than about 27 held values costs 2 write units
 * instead of 1: the price of never freeing a value the apiserver may still store.
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
  type AllocationStore,
  type Block,
  type Claim,
  type ClaimOutcome,
  type OwnerRecord,
  OwnerVersionConflictError,
  type ReleasingClaim,
} from '../allocation/store.js';
import { blockIndexOf, type Offset, slotOf, toOffset } from '../net/offset.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import type { TableLocation } from './location.js';
import { queryPartition } from './query.js';
import { TABLE_SCHEMA } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/**
 * Block sort keys are zero-padded so that key order is block order: seven decimal digits below
 * 10^7 blocks (a /12 has 32,768), and past that (IPv6 ranges wider than a /100, a /64 has 2^59)
 * `~` and fifteen hex digits, which sort after every decimal key and among themselves in order.
 */
const DECIMAL_BLOCKS = 10_000_000;
/** The sort key of a block item (the benchmarks' pre-fill writes items in this same format). */
export const blockSortKey = (index: Offset): string =>
  index < DECIMAL_BLOCKS
    ? `b#${String(index).padStart(7, '0')}`
    : `b#~${index.toString(16).padStart(15, '0')}`;
const blockIndexOfKey = (key: string): Offset =>
  key.startsWith('b#~') ? toOffset(BigInt(`0x${key.slice(3)}`)) : Number(key.slice(2));
const slotAttribute = (slot: number): string => `v${slot}`;
const SLOT_ATTRIBUTE = /^v(\d+)$/;
/** When the value of a slot was claimed: epoch seconds, 6 bytes a slot where ms would take 8. */
const claimedAtAttribute = (slot: number): string => `t${slot}`;
const CLAIMED_AT_ATTRIBUTE = /^t(\d+)$/;

/** First Query page is small (the first block usually has room); later pages read ahead. */
const FIRST_PAGE = 4;
const NEXT_PAGE = 128;

/** `AllocationStore` over one DynamoDB table, scoped to one cluster. */
export class DynamoAllocationStore implements AllocationStore {
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

  #ownersKey(): string {
    return `${this.#cluster}#owners`;
  }

  #target() {
    return { client: this.#client, tableName: this.#table, meter: this.meter };
  }

  #rangeKey(range: string): string {
    return `${this.#cluster}#range#${range}`;
  }

  async getOwner(id: string): Promise<OwnerRecord | undefined> {
    const out = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: { [PK]: { S: this.#ownersKey() }, [SK]: { S: id } },
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.read(out.ConsumedCapacity);
    return out.Item ? decodeOwner(out.Item) : undefined;
  }

  async putOwner(record: OwnerRecord, expectedVersion: number): Promise<void> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: { [PK]: { S: this.#ownersKey() }, [SK]: { S: record.id }, ...encodeOwner(record) },
          ...(expectedVersion === 0
            ? {
                ConditionExpression: 'attribute_not_exists(#pk)',
                ExpressionAttributeNames: { '#pk': PK },
              }
            : {
                ConditionExpression: '#version = :expected',
                ExpressionAttributeNames: { '#version': 'version' },
                ExpressionAttributeValues: { ':expected': { N: String(expectedVersion) } },
              }),
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    if (!write.applied) throw new OwnerVersionConflictError(record.id, { cause: write.failure });
  }

  async deleteOwner(id: string, expectedVersion?: number): Promise<boolean> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new DeleteItemCommand({
          TableName: this.#table,
          Key: { [PK]: { S: this.#ownersKey() }, [SK]: { S: id } },
          ...(expectedVersion === undefined
            ? {}
            : {
                ConditionExpression: '#version = :expected',
                ExpressionAttributeNames: { '#version': 'version' },
                ExpressionAttributeValues: { ':expected': { N: String(expectedVersion) } },
              }),
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }

  async *listOwners(): AsyncIterable<OwnerRecord> {
    for await (const item of queryPartition(this.#target(), this.#ownersKey(), {
      nextPages: NEXT_PAGE,
    })) {
      yield decodeOwner(item);
    }
  }

  async *scanBlocks(range: string, from: Offset, to: Offset): AsyncIterable<Block> {
    const between = { from: blockSortKey(from), to: blockSortKey(to) };
    const query = { between, firstPage: FIRST_PAGE, nextPages: NEXT_PAGE };
    for await (const item of queryPartition(this.#target(), this.#rangeKey(range), query)) {
      yield decodeBlock(item);
    }
  }

  async claim(
    range: string,
    offset: Offset,
    ownerId: string,
    claimedAt?: number,
  ): Promise<ClaimOutcome> {
    const outcome = await this.#writeSlot(range, offset, {
      // Rounded up, so a claim never reads older than it is.
      update:
        claimedAt === undefined ? 'SET #slot = :owner REMOVE #at' : 'SET #slot = :owner, #at = :at',
      condition: 'attribute_not_exists(#slot)',
      values: {
        ':owner': { S: ownerId },
        ...(claimedAt === undefined ? {} : { ':at': { N: String(Math.ceil(claimedAt / 1000)) } }),
      },
      // The block as left: the caller's view of it, for its next pick (no extra charge).
      answer: true,
    });
    if (outcome.written) {
      return outcome.item ? { taken: true, block: decodeBlock(outcome.item) } : { taken: true };
    }
    const { item } = outcome;
    const holder = item?.[slotAttribute(slotOf(offset))]?.S ?? '';
    return item ? { taken: false, holder, block: decodeBlock(item) } : { taken: false, holder };
  }

  async release(range: string, offset: Offset, ownerId: string): Promise<boolean> {
    const outcome = await this.#writeSlot(range, offset, {
      update: 'REMOVE #slot, #at',
      condition: '#slot = :owner',
      values: { ':owner': { S: ownerId } },
    });
    return outcome.written;
  }

  /**
   * Repair only (`shared/repair/store.ts`): hands a value from `fromId` to `toId` in one
   * conditional write, so no other writer can take it in between; false when `fromId` no longer
   * holds it.
   */
  async transfer(range: string, offset: Offset, fromId: string, toId: string): Promise<boolean> {
    // The live owner it moves to carries it: no claim time to keep.
    const outcome = await this.#writeSlot(range, offset, {
      update: 'SET #slot = :to REMOVE #at',
      condition: '#slot = :from',
      values: { ':from': { S: fromId }, ':to': { S: toId } },
    });
    return outcome.written;
  }

  /**
   * One conditional write of the attributes of one value (`#slot` and its claim time `#at` in
   * the expressions). A failed
   * condition is an answer, not an error: it comes back with the block as it stood (ALL_OLD).
   */
  async #writeSlot(
    range: string,
    offset: Offset,
    expression: {
      update: string;
      condition: string;
      values: Record<string, AttributeValue>;
      /** Answer the item as the write left it. */
      answer?: boolean;
    },
  ): Promise<{ written: boolean; item: Record<string, AttributeValue> | undefined }> {
    let left: Record<string, AttributeValue> | undefined;
    const write = await conditionalWrite(this.meter, async () => {
      const out = await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#blockKey(range, offset),
          UpdateExpression: expression.update,
          ConditionExpression: expression.condition,
          ExpressionAttributeNames: {
            '#slot': slotAttribute(slotOf(offset)),
            '#at': claimedAtAttribute(slotOf(offset)),
          },
          ExpressionAttributeValues: expression.values,
          ...(expression.answer ? { ReturnValues: 'ALL_NEW' as const } : {}),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      left = out.Attributes;
      return out;
    });
    return write.applied ? { written: true, item: left } : { written: false, item: write.item };
  }

  #blockKey(range: string, offset: Offset): Record<string, AttributeValue> {
    return {
      [PK]: { S: this.#rangeKey(range) },
      [SK]: { S: blockSortKey(blockIndexOf(offset)) },
    };
  }
}

function decodeBlock(item: Record<string, AttributeValue>): Block {
  const index = blockIndexOfKey(item[SK]?.S ?? '');
  const holders = new Map<number, string>();
  const claimedAt = new Map<number, number>();
  for (const [name, value] of Object.entries(item)) {
    const match = SLOT_ATTRIBUTE.exec(name);
    if (match && value.S !== undefined) holders.set(Number(match[1]), value.S);
    const at = CLAIMED_AT_ATTRIBUTE.exec(name);
    if (at && value.N !== undefined) claimedAt.set(Number(at[1]), Number(value.N) * 1000);
  }
  // A time whose value is gone was left by a release that did not know of it (an older berth).
  for (const slot of claimedAt.keys()) if (!holders.has(slot)) claimedAt.delete(slot);
  return { index, holders, ...(claimedAt.size === 0 ? {} : { claimedAt }) };
}

const encodeClaim = (c: Claim): Record<string, AttributeValue> => ({
  s: { S: c.slot },
  r: { S: c.range },
  o: { N: String(c.offset) },
  ...(c.claimedAt === undefined ? {} : { a: { N: String(c.claimedAt) } }),
  ...(c.addedOn === undefined ? {} : { b: { S: c.addedOn } }),
});
const decodeClaim = (entry: AttributeValue): Claim => ({
  slot: entry.M?.s?.S ?? '',
  range: entry.M?.r?.S ?? '',
  offset: entry.M?.o?.N === undefined ? Number.NaN : toOffset(BigInt(entry.M.o.N)),
  ...(entry.M?.a?.N === undefined ? {} : { claimedAt: Number(entry.M.a.N) }),
  ...(entry.M?.b?.S === undefined ? {} : { addedOn: entry.M.b.S }),
});

function encodeOwner(record: OwnerRecord): Record<string, AttributeValue> {
  const releasing = record.releasing ?? [];
  return {
    ...(releasing.length > 0
      ? {
          releasing: {
            L: releasing.map((c) => ({ M: { ...encodeClaim(c), t: { N: String(c.since) } } })),
          },
        }
      : {}),
    kind: { S: record.owner.kind },
    namespace: { S: record.owner.namespace },
    name: { S: record.owner.name },
    ...(record.owner.generateName === undefined
      ? {}
      : { generateName: { S: record.owner.generateName } }),
    ...(record.owner.request === undefined ? {} : { request: { S: record.owner.request } }),
    claims: { L: record.claims.map((c) => ({ M: encodeClaim(c) })) },
    version: { N: String(record.version) },
    createdAt: { N: String(record.createdAt) },
  };
}

function decodeOwner(item: Record<string, AttributeValue>): OwnerRecord {
  const claims: Claim[] = (item.claims?.L ?? []).map(decodeClaim);
  const releasing: ReleasingClaim[] = (item.releasing?.L ?? []).map((entry) => ({
    ...decodeClaim(entry),
    since: Number(entry.M?.t?.N ?? 0),
  }));
  return {
    ...(releasing.length > 0 ? { releasing } : {}),
    id: item[SK]?.S ?? '',
    owner: {
      kind: item.kind?.S === 'Pod' ? 'Pod' : 'Service',
      namespace: item.namespace?.S ?? '',
      name: item.name?.S ?? '',
      ...(item.generateName?.S === undefined ? {} : { generateName: item.generateName.S }),
      ...(item.request?.S === undefined ? {} : { request: item.request.S }),
    },
    claims,
    version: Number(item.version?.N ?? 0),
    createdAt: Number(item.createdAt?.N ?? 0),
  };
}

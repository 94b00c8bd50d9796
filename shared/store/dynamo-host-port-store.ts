/**
 * The DynamoDB adapter of `HostPortStore`.
 *
 * Data model (one table, keys prefixed by the cluster like every berth item):
 * - `<cluster>#hostports#<range>` / `<block>`: use counts of 64 consecutive port numbers, one
 *   number attribute `c<slot>` per port ever used (port = block × 64 + slot). Blocks are keyed by
 *   port number, not by offset in the range, so widening or moving a range in the config keeps
 *   every count on its port. 64 counts keep an item near 0.5 KB (1 WCU per write), and a
 *   1,001-port range is 16 or 17 items: one strongly consistent Query of about 2 RCU reads it
 *   whole, which the least-used choice needs.
 * - `<cluster>#pods` / `<allocation id>`: the owner record: namespace, pod name or generateName,
 *   the held (name, range, port, protocol) list and createdAt.
 *
 * An allocation is ONE TransactWriteItems: Put the record (condition: absent) and, per touched
 * block, `ADD c<slot> :uses` conditioned on each touched count still having the value read. A
 * release is ONE TransactWriteItems: Delete the record (condition: present, same namespace) and
 * `ADD c<slot> :-uses`. The SDK fills `ClientRequestToken` per call, so its own retry of a
 * transaction that did commit is answered as a success, not applied twice.
 */
import {
  type AttributeValue,
  type CancellationReason,
  type DynamoDBClient,
  GetItemCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { isTransactionConflict } from '../aws/error-codes.js';
import { MAX_ALLOCATION_ATTEMPTS } from '../hostports/allocator.js';
import {
  AllocationIdTakenError,
  HostPortConflictError,
  HostPortReleaseContentionError,
} from '../hostports/errors.js';
import {
  type HostPortRange,
  lastPort,
  PORT_PROTOCOLS,
  type PortProtocol,
} from '../hostports/spec.js';
import type { HeldPort, HostPortStore, PodPortRecord, RangeCounts } from '../hostports/store.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import type { TableLocation } from './location.js';
import { queryPartition } from './query.js';
import { TABLE_SCHEMA } from './table.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Port numbers per count item. */
export const COUNT_BLOCK_PORTS = 64;

/** Zero-padded so that key order is port order (65535 / 64 < 10,000). */
const blockSortKey = (block: number): string => String(block).padStart(4, '0');
const COUNT_ATTRIBUTE = /^c(\d+)$/;

/** Cancellation reasons that mean "someone else wrote first": read again and choose again. */
const LOST_RACE: ReadonlySet<string> = new Set([
  'ConditionalCheckFailed',
  'TransactionConflict',
  'None',
]);

/** Upper bound of the first release retry's backoff; it doubles per attempt (full jitter). */
export const RELEASE_BACKOFF_BASE_MS = 25;

/** Where the store is, and the sleep and random source its release retries back off with. */
export interface DynamoHostPortStoreOptions extends TableLocation {
  /** Waits `ms`; a real timer unless a test injects one. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** In [0, 1): the jitter of each backoff. */
  readonly random?: () => number;
}

const realSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/** `HostPortStore` over one DynamoDB table, scoped to one cluster. */
export class DynamoHostPortStore implements HostPortStore {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #cluster: string;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;

  constructor(options: DynamoHostPortStoreOptions) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#cluster = options.cluster;
    this.meter = options.meter ?? new CapacityMeter();
    this.#sleep = options.sleep ?? realSleep;
    this.#random = options.random ?? Math.random;
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

  async readCounts(range: HostPortRange): Promise<RangeCounts> {
    const counts = new Array<number>(range.size).fill(0);
    const from = blockSortKey(Math.floor(range.first / COUNT_BLOCK_PORTS));
    const to = blockSortKey(Math.floor(lastPort(range) / COUNT_BLOCK_PORTS));
    for await (const item of queryPartition(this.#target(), this.#countsKey(range.name), {
      between: { from, to },
    })) {
      const block = Number(item[SK]?.S ?? Number.NaN);
      for (const [attribute, value] of Object.entries(item)) {
        const match = COUNT_ATTRIBUTE.exec(attribute);
        if (!match || value.N === undefined) continue;
        const offset = block * COUNT_BLOCK_PORTS + Number(match[1]) - range.first;
        if (offset >= 0 && offset < range.size) counts[offset] = Number(value.N);
      }
    }
    return { range, counts };
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

  async commit(
    record: PodPortRecord,
    observed: ReadonlyMap<string, RangeCounts> | undefined,
  ): Promise<void> {
    const items: TransactWriteItem[] = [
      {
        Put: {
          TableName: this.#table,
          Item: { ...this.#recordKey(record.id), ...encodeRecord(record) },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
        },
      },
      ...this.#countUpdates(
        record.ports,
        1,
        observed &&
          ((port) => {
            const read = observed.get(port.range);
            if (!read) throw new RangeError(`no counts read for range ${port.range}`);
            return read.counts[port.port - read.range.first] ?? 0;
          }),
      ),
    ];
    try {
      await this.#transact(items);
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (reasons?.[0]?.Code === 'ConditionalCheckFailed') {
        throw new AllocationIdTakenError(record.id, { cause: error });
      }
      if (isTransactionConflict(error) || reasons?.every((r) => LOST_RACE.has(r.Code ?? 'None'))) {
        throw new HostPortConflictError(
          `host port counts of ${record.id} changed before the commit`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  async release(id: string, namespace: string): Promise<PodPortRecord | undefined> {
    // A record is written once (its Put requires absence), so one read serves every attempt; the
    // Delete's condition catches a concurrent release.
    const record = await this.getRecord(id);
    // DELETE releases only what is recorded under the pod's id AND namespace.
    if (!record || record.pod.namespace !== namespace) return undefined;
    const items: TransactWriteItem[] = [
      {
        Delete: {
          TableName: this.#table,
          Key: this.#recordKey(id),
          ConditionExpression: 'attribute_exists(#pk) AND #ns = :ns',
          ExpressionAttributeNames: { '#pk': PK, '#ns': 'namespace' },
          ExpressionAttributeValues: { ':ns': { S: namespace } },
        },
      },
      ...this.#countUpdates(record.ports, -1, undefined),
    ];
    let lastConflict: unknown;
    for (let attempt = 1; attempt <= MAX_ALLOCATION_ATTEMPTS; attempt++) {
      // Full jitter, doubling: releases racing on one hot count item spread out instead of
      // colliding again at once.
      if (attempt > 1) {
        await this.#sleep(this.#random() * RELEASE_BACKOFF_BASE_MS * 2 ** (attempt - 2));
      }
      try {
        await this.#transact(items);
        return record;
      } catch (error) {
        const reasons = cancellationReasons(error);
        // A concurrent DELETE released it first: nothing left to do, exactly once.
        if (reasons?.[0]?.Code === 'ConditionalCheckFailed') return undefined;
        if (
          !isTransactionConflict(error) &&
          !reasons?.every((r) => LOST_RACE.has(r.Code ?? 'None'))
        ) {
          throw error;
        }
        lastConflict = error;
      }
    }
    throw new HostPortReleaseContentionError(id, MAX_ALLOCATION_ATTEMPTS, { cause: lastConflict });
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

  // ---- end of repair only --------------------------------------------------------------------

  /**
   * One Update per touched block (a transaction may not name an item twice) adding `sign` × uses
   * to each touched count; with `expected`, each count must still be the value read.
   */
  #countUpdates(
    ports: readonly HeldPort[],
    sign: 1 | -1,
    expected: ((port: HeldPort) => number) | undefined,
  ): TransactWriteItem[] {
    const blocks = new Map<
      string,
      { range: string; block: number; slots: Map<number, { uses: number; expected: number }> }
    >();
    for (const port of ports) {
      const block = Math.floor(port.port / COUNT_BLOCK_PORTS);
      const key = `${port.range}/${block}`;
      const entry = blocks.get(key) ?? { range: port.range, block, slots: new Map() };
      const slot = port.port % COUNT_BLOCK_PORTS;
      const current = entry.slots.get(slot);
      entry.slots.set(slot, {
        uses: (current?.uses ?? 0) + 1,
        expected: current?.expected ?? (expected ? expected(port) : 0),
      });
      blocks.set(key, entry);
    }
    return [...blocks.values()].map(({ range, block, slots }) => {
      const names: Record<string, string> = {};
      const values: Record<string, AttributeValue> = {};
      const adds: string[] = [];
      const conditions: string[] = [];
      for (const [slot, { uses, expected: was }] of slots) {
        names[`#c${slot}`] = `c${slot}`;
        values[`:u${slot}`] = { N: String(sign * uses) };
        adds.push(`#c${slot} :u${slot}`);
        if (expected) {
          values[`:e${slot}`] = { N: String(was) };
          // A count back at 0 after releases keeps its attribute; one never used has none.
          conditions.push(
            was === 0
              ? `(attribute_not_exists(#c${slot}) OR #c${slot} = :e${slot})`
              : `#c${slot} = :e${slot}`,
          );
        }
      }
      return {
        Update: {
          TableName: this.#table,
          Key: { [PK]: { S: this.#countsKey(range) }, [SK]: { S: blockSortKey(block) } },
          UpdateExpression: `ADD ${adds.join(', ')}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND ') } : {}),
        },
      };
    });
  }

  async #transact(items: TransactWriteItem[]): Promise<void> {
    try {
      const out = await this.#client.send(
        new TransactWriteItemsCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' }),
      );
      this.meter.write(out.ConsumedCapacity);
    } catch (error) {
      // A cancelled transaction is billed twice the items' size, as a transaction is.
      if (cancellationReasons(error) || isTransactionConflict(error))
        this.meter.failedWrite(2 * items.length);
      throw error;
    }
  }
}

/** The per-item reasons of a cancelled transaction; undefined for any other error. */
function cancellationReasons(error: unknown): readonly CancellationReason[] | undefined {
  return error instanceof TransactionCanceledException
    ? (error.CancellationReasons ?? [])
    : undefined;
}

function encodeRecord(record: PodPortRecord): Record<string, AttributeValue> {
  return {
    namespace: { S: record.pod.namespace },
    name: { S: record.pod.name },
    generateName: { S: record.pod.generateName },
    ports: {
      L: record.ports.map((p) => ({
        M: { n: { S: p.name }, r: { S: p.range }, p: { N: String(p.port) }, t: { S: p.protocol } },
      })),
    },
    createdAt: { N: String(record.createdAt) },
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
      namespace: item.namespace?.S ?? '',
      name: item.name?.S ?? '',
      generateName: item.generateName?.S ?? '',
    },
    ports: (item.ports?.L ?? []).map((entry) => ({
      name: entry.M?.n?.S ?? '',
      range: entry.M?.r?.S ?? '',
      port: Number(entry.M?.p?.N ?? Number.NaN),
      protocol: decodeProtocol(entry.M?.t?.S),
    })),
    createdAt: Number(item.createdAt?.N ?? 0),
  };
}

/**
 * The DynamoDB adapter of `LeakLedger`: one item per suspected leak, `<cluster>#leaks` / `<key>`,
 * holding the holder seen, the consecutive passes and the first sighting. Read with one paged,
 * strongly consistent Query; written with BatchWriteItem (25 per request), since only the pass
 * holding the repair lease writes and each item is rewritten whole.
 */
import type { AttributeValue, DynamoDBClient, WriteRequest } from '@aws-sdk/client-dynamodb';
import { LeakLedgerWriteError } from '../repair/errors.js';
import type { LeakCounter, LeakLedger, LedgerChanges } from '../repair/ledger.js';
import { batchWrite } from './batch-write.js';
import { CapacityMeter } from './capacity.js';
import type { TableLocation } from './location.js';
import { queryPartition } from './query.js';
import { TABLE_SCHEMA } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Rounds of resending unprocessed items (throttling) before the write fails. */
const MAX_BATCH_ROUNDS = 8;

/** Where the ledger lives and what it counts. */
export interface DynamoLeakLedgerOptions extends TableLocation {
  /** Waits between resends of unprocessed items; injected so tests need not wait. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** `LeakLedger` over berth's DynamoDB table, scoped to one cluster. */
export class DynamoLeakLedger implements LeakLedger {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #pk: string;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: DynamoLeakLedgerOptions) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#pk = `${options.cluster}#leaks`;
    this.meter = options.meter ?? new CapacityMeter();
    this.#sleep = options.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms)));
  }

  async list(): Promise<ReadonlyMap<string, LeakCounter>> {
    const counters = new Map<string, LeakCounter>();
    const target = { client: this.#client, tableName: this.#table, meter: this.meter };
    for await (const item of queryPartition(target, this.#pk)) {
      const counter = decode(item);
      counters.set(counter.key, counter);
    }
    return counters;
  }

  async apply(changes: LedgerChanges): Promise<void> {
    const requests: WriteRequest[] = [
      ...changes.put.map((counter) => ({
        PutRequest: {
          Item: { [PK]: { S: this.#pk }, [SK]: { S: counter.key }, ...encode(counter) },
        },
      })),
      ...changes.remove.map((key) => ({
        DeleteRequest: { Key: { [PK]: { S: this.#pk }, [SK]: { S: key } } },
      })),
    ];
    const left = await batchWrite(this.#client, this.#table, requests, {
      rounds: MAX_BATCH_ROUNDS,
      meter: this.meter,
      sleep: this.#sleep,
    });
    if (left.length > 0) throw new LeakLedgerWriteError(left.length, MAX_BATCH_ROUNDS);
  }
}

function encode(counter: LeakCounter): Record<string, AttributeValue> {
  return {
    holder: { S: counter.holder },
    passes: { N: String(counter.passes) },
    firstSeenAt: { N: String(counter.firstSeenAt) },
  };
}

function decode(item: Record<string, AttributeValue>): LeakCounter {
  return {
    key: item[SK]?.S ?? '',
    holder: item.holder?.S ?? '',
    passes: Number(item.passes?.N ?? 0),
    firstSeenAt: Number(item.firstSeenAt?.N ?? 0),
  };
}

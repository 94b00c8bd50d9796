/**
 * The DynamoDB adapter of `CapacityLedger`: one item per cluster, `<cluster>#capacity` /
 * `figures`, one attribute per pass holding its figures as JSON. A pass sets only its own
 * attribute (an UpdateItem), so passes running at once never overwrite each other; a view of up
 * to 100 clusters is one BatchGetItem (eventually consistent: a figure a second old is as good).
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  type DynamoDBClient,
  type KeysAndAttributes,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CAPACITY_SOURCES,
  type CapacityRecord,
  type CapacitySource,
  type SourceFigures,
} from '../capacity/figures.js';
import type { CapacityLedger } from '../capacity/store.js';
import { CapacityMeter } from './capacity.js';
import { TABLE_SCHEMA } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;
/** BatchGetItem's limit of keys per request. */
const BATCH_KEYS = 100;
/** Rounds of UnprocessedKeys resent before the read gives up (each after a short pause). */
const MAX_ROUNDS = 5;

const keyOf = (cluster: string): Record<string, AttributeValue> => ({
  [PK]: { S: `${cluster}#capacity` },
  [SK]: { S: 'figures' },
});

/** Reads a source's stored figures back; berth wrote them, so a shape check is enough. */
function figuresOf(source: CapacitySource, value: AttributeValue | undefined) {
  if (value?.S === undefined) return undefined;
  const parsed = JSON.parse(value.S) as Partial<SourceFigures>;
  return parsed.source === source && typeof parsed.atMs === 'number' ? parsed : undefined;
}

/** `CapacityLedger` over berth's DynamoDB table (the table, not one cluster's keys: it reads many). */
export class DynamoCapacityLedger implements CapacityLedger {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: {
    readonly client: DynamoDBClient;
    readonly tableName: string;
    readonly meter?: CapacityMeter;
  }) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.meter = options.meter ?? new CapacityMeter();
  }

  async record(cluster: string, figures: SourceFigures): Promise<void> {
    const out = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: keyOf(cluster),
        UpdateExpression: 'SET #source = :figures',
        ExpressionAttributeNames: { '#source': figures.source },
        ExpressionAttributeValues: { ':figures': { S: JSON.stringify(figures) } },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
  }

  async read(clusters: readonly string[]): Promise<ReadonlyMap<string, CapacityRecord>> {
    const records = new Map<string, CapacityRecord>(clusters.map((cluster) => [cluster, {}]));
    const byKey = new Map(clusters.map((cluster) => [`${cluster}#capacity`, cluster]));
    for (let start = 0; start < clusters.length; start += BATCH_KEYS) {
      let pending: KeysAndAttributes | undefined = {
        Keys: clusters.slice(start, start + BATCH_KEYS).map(keyOf),
      };
      for (let round = 0; pending?.Keys?.length; round++) {
        if (round === MAX_ROUNDS) throw new Error('DynamoDB left capacity records unread');
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** round));
        const out: BatchGetItemCommandOutput = await this.#client.send(
          new BatchGetItemCommand({
            RequestItems: { [this.#table]: pending },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        this.meter.read(out.ConsumedCapacity);
        for (const item of out.Responses?.[this.#table] ?? []) {
          const cluster = byKey.get(item[PK]?.S ?? '');
          if (cluster === undefined) continue;
          const record: Record<string, unknown> = {};
          for (const source of CAPACITY_SOURCES) {
            const figures = figuresOf(source, item[source]);
            if (figures) record[source] = figures;
          }
          records.set(cluster, record as CapacityRecord);
        }
        pending = out.UnprocessedKeys?.[this.#table];
      }
    }
    return records;
  }
}

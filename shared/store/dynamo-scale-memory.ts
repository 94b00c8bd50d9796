/**
 * The DynamoDB adapter of `ScaleMemoryStore`: one item per cluster, `<cluster>#scale` / `memory`,
 * the memory as one JSON document (a few hundred bytes: one entry per pass of the demand window,
 * five provisioning times, the hour's removals). Read strongly consistent and written plainly:
 * only the pass holding the scale lease reads or writes it.
 */
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { EMPTY_SCALE_MEMORY, type ScaleMemory, type ScaleMemoryStore } from '../scale/store.js';
import { CapacityMeter } from './capacity.js';
import type { TableLocation } from './location.js';
import { TABLE_SCHEMA } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** `ScaleMemoryStore` over berth's DynamoDB table. */
export class DynamoScaleMemory implements ScaleMemoryStore {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #key: { [PK]: { S: string }; [SK]: { S: string } };

  constructor(options: TableLocation) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#key = { [PK]: { S: `${options.cluster}#scale` }, [SK]: { S: 'memory' } };
    this.meter = options.meter ?? new CapacityMeter();
  }

  async load(): Promise<ScaleMemory> {
    const out = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: this.#key,
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.read(out.ConsumedCapacity);
    const text = out.Item?.memory?.S;
    return text === undefined ? EMPTY_SCALE_MEMORY : { ...EMPTY_SCALE_MEMORY, ...JSON.parse(text) };
  }

  async save(memory: ScaleMemory): Promise<void> {
    const out = await this.#client.send(
      new PutItemCommand({
        TableName: this.#table,
        Item: { ...this.#key, memory: { S: JSON.stringify(memory) } },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
  }
}

/**
 * The kube-apiserver's current design (KEP-1880, GA in Kubernetes 1.33) on DynamoDB: every
 * allocated value is one small item, an `IPAddress` object naming its parent Service, created
 * only if absent. The pick is random, made from the allocator's local cache of taken values (its
 * informer, synced with every value already allocated, and told of its own creations at once),
 * so the path reads nothing; a value another writer took first fails the put and is picked
 * again. One allocation is one conditional PutItem: 1 request, 1 WCU, plus what lost races cost.
 * Bench-only.
 */
import {
  type AttributeValue,
  BatchWriteItemCommand,
  PutItemCommand,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { isConditionFailed } from '../../shared/aws/error-codes.js';
import { type Offset, randomOffset } from '../../shared/net/offset.js';
import { TABLE_SCHEMA } from '../../shared/store/table.js';
import type { RangeBaselineOptions } from './options.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** BatchWriteItem takes at most 25 puts. */
const BATCH = 25;
const PARALLEL_BATCHES = 4;
/** A range with no free value the cache knows of is full: the apiserver answers "range is full". */
const MAX_PICKS = 64;

/** The parent reference an `IPAddress` carries. */
export interface ParentRef {
  readonly namespace: string;
  readonly name: string;
}

/** One apiserver's allocator for one range: its cache, and the objects in the table. */
export class IpAddressObjectAllocator {
  readonly #options: RangeBaselineOptions;
  readonly #partition: string;
  /** Offsets the informer knows are taken. */
  readonly #taken = new Set<Offset>();

  constructor(options: RangeBaselineOptions) {
    this.#options = options;
    this.#partition = `${options.cluster}#ipaddress#${options.range.kind}#${options.range.name}`;
  }

  /** Creates one object per taken offset (the pre-fill), and syncs the cache with them. */
  async initialise(offsets: readonly Offset[], parent: ParentRef): Promise<void> {
    const requests: WriteRequest[] = offsets.map((offset) => ({
      PutRequest: { Item: this.#item(offset, parent) },
    }));
    let next = 0;
    const writer = async () => {
      while (next < requests.length) {
        let pending = requests.slice(next, next + BATCH);
        next += BATCH;
        for (let attempt = 0; pending.length > 0; attempt++) {
          if (attempt > 10) throw new Error('pre-fill: items stayed unprocessed');
          const out = await this.#options.client.send(
            new BatchWriteItemCommand({ RequestItems: { [this.#options.tableName]: pending } }),
          );
          pending = out.UnprocessedItems?.[this.#options.tableName] ?? [];
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_BATCHES }, writer));
    for (const offset of offsets) this.#taken.add(offset);
  }

  /** Allocates one value for `parent`; resolves to the puts lost to another writer. */
  async allocate(
    parent: ParentRef,
  ): Promise<{ readonly offset: Offset; readonly retries: number }> {
    for (let retries = 0; ; retries++) {
      const offset = this.#pick();
      if (offset === undefined) throw new Error(`${this.#options.range.name}: range is full`);
      // Taken in the cache before the put, as the allocator marks its own in-flight creations.
      this.#taken.add(offset);
      if (await this.#create(offset, parent)) return { offset, retries };
    }
  }

  /** A random value the cache shows free: the upper band first, as the apiserver picks. */
  #pick(): Offset | undefined {
    const { range, random } = this.#options;
    const bands: [Offset, Offset][] = [
      [range.reservedBand, range.exactSize],
      [0, range.reservedBand],
    ];
    for (const [low, high] of bands) {
      if (high <= low) continue;
      for (let i = 0; i < MAX_PICKS; i++) {
        const offset = randomOffset(low, high, random);
        if (!this.#taken.has(offset)) return offset;
      }
      // Only a range whose random picks keep meeting taken values gets here: never a /64.
      if (typeof low === 'number' && typeof high === 'number') {
        for (let offset = low; offset < high; offset++) if (!this.#taken.has(offset)) return offset;
      }
    }
    return undefined;
  }

  async #create(offset: Offset, parent: ParentRef): Promise<boolean> {
    const { client, tableName, meter } = this.#options;
    try {
      const out = await client.send(
        new PutItemCommand({
          TableName: tableName,
          Item: this.#item(offset, parent),
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      meter.write(out.ConsumedCapacity);
      return true;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      meter.write(undefined);
      meter.conditionFailures++;
      return false;
    }
  }

  #item(offset: Offset, parent: ParentRef): Record<string, AttributeValue> {
    return {
      [PK]: { S: this.#partition },
      [SK]: { S: this.#options.range.valueAt(offset) },
      resource: { S: 'services' },
      namespace: { S: parent.namespace },
      name: { S: parent.name },
    };
  }
}

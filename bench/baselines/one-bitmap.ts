/**
 * The kube-apiserver design, for comparison only: a whole range as ONE item holding a bitmap and
 * a version (etcd's RangeAllocation and its resourceVersion). Every allocation reads the item,
 * runs randomScanStrategyWithOffset on the bitmap and writes the whole item back under
 * `version = :read`; a lost race re-reads and retries, like GuaranteedUpdate (no retry cap
 * upstream; a generous one here so a broken run ends).
 */
import { type AttributeValue, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { isConditionFailed } from '../../shared/aws/error-codes.js';
import type { ValueRange } from '../../shared/net/value-range.js';
import { TABLE_SCHEMA } from '../../shared/store/table.js';
import { itemSizeBytes, writeUnits } from '../support/item-size.js';
import type { RangeBaselineOptions } from './options.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;
const SAFETY_RETRY_CAP = 10_000;

/** The bitmap range allocator over one DynamoDB item. */
export class OneBitmapAllocator {
  /** Write units that failed conditional puts would be billed (DynamoDB Local reports none). */
  failedWriteUnits = 0;
  readonly #options: RangeBaselineOptions;
  readonly #key: Record<string, AttributeValue>;

  constructor(options: RangeBaselineOptions) {
    this.#options = options;
    this.#key = {
      [PK]: { S: `${options.cluster}#bitmap#${options.range.kind}#${options.range.name}` },
      [SK]: { S: 'range' },
    };
  }

  /** Creates the item (version 1) with `taken` offsets set, as the repair loop's first run would. */
  async initialise(taken: readonly number[]): Promise<void> {
    const bitmap = new Uint8Array(Math.ceil(this.#options.range.size / 8));
    for (const offset of taken)
      bitmap[offset >> 3] = (bitmap[offset >> 3] ?? 0) | (1 << (offset & 7));
    await this.#options.client.send(
      new PutItemCommand({ TableName: this.#options.tableName, Item: this.#item(bitmap, 1) }),
    );
  }

  /** AllocateNext: the offset taken and how many times the version check failed first. */
  async allocateNext(): Promise<{ offset: number; retries: number }> {
    const { client, tableName, meter } = this.#options;
    for (let retries = 0; retries < SAFETY_RETRY_CAP; retries++) {
      const read = await client.send(
        new GetItemCommand({
          TableName: tableName,
          Key: this.#key,
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      meter.read(read.ConsumedCapacity);
      const version = Number(read.Item?.version?.N);
      const data = read.Item?.data?.B;
      if (!data || !Number.isFinite(version)) {
        throw new Error('cannot allocate resources of type serviceipallocations at this time');
      }
      const bitmap = Uint8Array.from(data);
      const offset = randomScanWithOffset(bitmap, this.#options.range, this.#options.random);
      if (offset === undefined) throw new Error('range is full');
      bitmap[offset >> 3] = (bitmap[offset >> 3] ?? 0) | (1 << (offset & 7));
      const item = this.#item(bitmap, version + 1);
      try {
        const out = await client.send(
          new PutItemCommand({
            TableName: tableName,
            Item: item,
            ConditionExpression: '#version = :read',
            ExpressionAttributeNames: { '#version': 'version' },
            ExpressionAttributeValues: { ':read': { N: String(version) } },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        meter.write(out.ConsumedCapacity);
        return { offset, retries };
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        // A failed conditional put is billed on the item's size; DynamoDB returns no figure.
        meter.write(undefined);
        meter.conditionFailures++;
        this.failedWriteUnits += writeUnits(itemSizeBytes(item));
      }
    }
    throw new Error(`gave up after ${SAFETY_RETRY_CAP} version conflicts`);
  }

  #item(bitmap: Uint8Array, version: number): Record<string, AttributeValue> {
    return {
      ...this.#key,
      range: { S: this.#options.range.name },
      data: { B: bitmap },
      version: { N: String(version) },
    };
  }
}

/**
 * randomScanStrategyWithOffset (allocator/bitmap.go): `count >= max` fails; a random start in
 * the upper band `[offset, max)` scanning up with wrap-around, then the same in `[0, offset)`.
 */
export function randomScanWithOffset(
  bitmap: Uint8Array,
  range: ValueRange,
  random: () => number,
): number | undefined {
  const isSet = (k: number) => ((bitmap[k >> 3] ?? 0) & (1 << (k & 7))) !== 0;
  // Upstream keeps the count incrementally and recomputes it by popcount on every Restore.
  if (popcount(bitmap) >= range.size) return undefined;
  const bands: Array<[number, number]> = [
    [range.reservedBand, range.size],
    [0, range.reservedBand],
  ];
  for (const [low, high] of bands) {
    const sub = high - low;
    if (sub <= 0) continue;
    const start = Math.floor(random() * sub);
    for (let i = 0; i < sub; i++) {
      const k = low + ((start + i) % sub);
      if (!isSet(k)) return k;
    }
  }
  return undefined;
}

/** Set bits per byte value, so a restore's popcount is one lookup per byte. */
const BITS_IN_BYTE = Uint8Array.from({ length: 256 }, (_, byte) => {
  let count = 0;
  for (let b = byte; b; b &= b - 1) count++;
  return count;
});

function popcount(bitmap: Uint8Array): number {
  let count = 0;
  for (const byte of bitmap) count += BITS_IN_BYTE[byte] ?? 0;
  return count;
}

/**
 * Fills a range to a given level fast, by writing block items directly with BatchWriteItem in
 * the engine's exact item format (see shared/store/dynamo-allocation-store.ts and table.ts):
 * pk `<cluster>#range#<kind>#<name>`, sk `blockSortKey(index)`, `v<slot>` = owner id.
 * Owner records are not written: the allocator never reads other owners' records.
 */
import {
  type AttributeValue,
  BatchWriteItemCommand,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { blockIndexOf, type Offset, randomOffset, slotOf } from '../../shared/net/offset.js';
import type { ValueRange } from '../../shared/net/value-range.js';
import { blockSortKey } from '../../shared/store/dynamo-allocation-store.js';
import { TABLE_SCHEMA } from '../../shared/store/table.js';

/** BatchWriteItem takes at most 25 puts. */
const BATCH = 25;
/** Batches in flight at once: enough to keep DynamoDB Local busy on two cores. */
const PARALLEL_BATCHES = 4;

/**
 * `count` distinct offsets, uniformly random, from the upper band first and then the reserved
 * band: the set that dynamic allocations alone would leave behind.
 */
export function randomTakenOffsets(
  range: ValueRange,
  count: number,
  random: () => number,
): number[] {
  const upper = range.size - range.reservedBand;
  const fromUpper = Math.min(count, upper);
  const pick = (low: number, size: number, n: number): number[] => {
    // Partial Fisher–Yates over a sparse permutation: O(n) memory, no duplicates.
    const swapped = new Map<number, number>();
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(random() * (size - i));
      const at = swapped.get(j) ?? j;
      swapped.set(j, swapped.get(i) ?? i);
      out.push(low + at);
    }
    return out;
  };
  return [
    ...pick(range.reservedBand, upper, fromUpper),
    ...pick(0, range.reservedBand, Math.min(count - fromUpper, range.reservedBand)),
  ];
}

/**
 * `count` distinct offsets, uniformly random in the upper band of a range too wide for a
 * permutation (an IPv6 /64): draws from 2^64 values almost never repeat, and a set drops any that do.
 */
export function randomWideOffsets(
  range: ValueRange,
  count: number,
  random: () => number,
): Offset[] {
  const out = new Set<Offset>();
  while (out.size < count) out.add(randomOffset(range.reservedBand, range.exactSize, random));
  return [...out];
}

/** Where the blocks go. */
export interface PrefillTarget {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly cluster: string;
  /** The engine's range key, `<kind>#<name>` (`rangeKey` in shared/allocation/allocator.ts). */
  readonly rangeKey: string;
}

/** Writes one block item per block that has a taken offset; returns the number of items written. */
export async function prefillBlocks<O extends Offset>(
  target: PrefillTarget,
  offsets: readonly O[],
  ownerOf: (offset: O) => string,
): Promise<number> {
  const blocks = new Map<Offset, Record<string, AttributeValue>>();
  const pk = `${target.cluster}#range#${target.rangeKey}`;
  for (const offset of offsets) {
    const index = blockIndexOf(offset);
    let item = blocks.get(index);
    if (!item) {
      item = {
        [TABLE_SCHEMA.partitionKey]: { S: pk },
        [TABLE_SCHEMA.sortKey]: { S: blockSortKey(index) },
      };
      blocks.set(index, item);
    }
    item[`v${slotOf(offset)}`] = { S: ownerOf(offset) };
  }
  const requests: WriteRequest[] = [...blocks.values()].map((Item) => ({ PutRequest: { Item } }));
  let next = 0;
  const writer = async () => {
    while (next < requests.length) {
      const batch = requests.slice(next, next + BATCH);
      next += BATCH;
      await writeBatch(target, batch);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_BATCHES }, writer));
  return requests.length;
}

/** One batch, resubmitting unprocessed items (DynamoDB may return some under load). */
async function writeBatch(target: PrefillTarget, batch: WriteRequest[]): Promise<void> {
  let pending = batch;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 10) throw new Error(`prefill: ${pending.length} items stayed unprocessed`);
    if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * attempt));
    const out = await target.client.send(
      new BatchWriteItemCommand({ RequestItems: { [target.tableName]: pending } }),
    );
    pending = out.UnprocessedItems?.[target.tableName] ?? [];
  }
}

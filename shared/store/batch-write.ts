/**
 * BatchWriteItem in batches of its limit, resending what DynamoDB leaves unprocessed (it does
 * under throttling) with a capped exponential wait. Each caller says how many sends a batch gets
 * and what to do with what is still left: the table's writers fail in their own words.
 */
import {
  BatchWriteItemCommand,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import type { CapacityMeter } from './capacity.js';

/** BatchWriteItem takes at most this many requests. */
const BATCH = 25;

/** How `batchWrite` sends. */
export interface BatchWriteOptions {
  /** Sends of one batch, the first among them, before its unprocessed rest is given up. */
  readonly rounds: number;
  /** Counts the capacity each send consumed (and asks DynamoDB to return it). */
  readonly meter?: CapacityMeter;
  /** Waits between sends; injected so tests need not wait. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Told the requests written so far after each batch lands. */
  readonly onBatch?: (written: number) => void;
}

/**
 * Writes `requests` to `tableName`, batch after batch. Stops at the first batch still partly
 * unprocessed after `rounds` sends and answers what is left of it; an empty answer means every
 * request landed.
 */
export async function batchWrite(
  client: DynamoDBClient,
  tableName: string,
  requests: readonly WriteRequest[],
  options: BatchWriteOptions,
): Promise<WriteRequest[]> {
  const sleep = options.sleep ?? ((ms) => new Promise<void>((done) => setTimeout(done, ms)));
  for (let i = 0; i < requests.length; i += BATCH) {
    let pending = requests.slice(i, i + BATCH);
    for (let round = 0; round < options.rounds && pending.length > 0; round++) {
      if (round > 0) await sleep(Math.min(1000, 25 * 2 ** round));
      const out = await client.send(
        new BatchWriteItemCommand({
          RequestItems: { [tableName]: pending },
          ...(options.meter ? { ReturnConsumedCapacity: 'TOTAL' } : {}),
        }),
      );
      options.meter?.write(out.ConsumedCapacity);
      pending = out.UnprocessedItems?.[tableName] ?? [];
    }
    if (pending.length > 0) return pending;
    options.onBatch?.(Math.min(i + BATCH, requests.length));
  }
  return [];
}

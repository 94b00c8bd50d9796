/**
 * One TransactWriteItems, metered, with its cancellation read as an answer: which items' conditions
 * refused it, and each refused item as it stood (ALL_OLD, which the versioned client asks for on
 * every write). A conflict with a concurrent transaction on one of its items is not an answer
 * but a lost race: the other one has landed by the next attempt, so it is sent again after a
 * jittered wait, a bounded number of times.
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { isTransactionConflict } from '../aws/error-codes.js';
import type { CapacityMeter } from './capacity.js';

/**
 * Attempts of a write that keeps losing to concurrent transactions on the same items: the other
 * one has landed by the next attempt, which then meets its condition or succeeds. A load
 * balancer's count item is what a burst of listener claims meets on, so there are as many as an
 * allocation's lost races get (shared/hostports/allocator.ts).
 */
export const TRANSACTION_ATTEMPTS = 8;

/**
 * Full-jitter backoff before attempt `attempt + 1`: up to 10, 20, 40, 80, 160 ms, then 200 ms;
 * at most 0.71 s over every attempt, well inside the admission webhook's timeout.
 */
export const conflictBackoffMs = (attempt: number, random: () => number): number =>
  random() * Math.min(200, 10 * 2 ** (attempt - 1));

/** How a transaction ended. */
export type TransactOutcome =
  | { readonly applied: true }
  | {
      readonly applied: false;
      /** Per item, in order: whether its condition refused the transaction. */
      readonly refused: readonly boolean[];
      /** Per item, in order: the item as it stood, for the refused ones that existed. */
      readonly items: readonly (Record<string, AttributeValue> | undefined)[];
    };

/** Where the transaction goes, and how it waits between attempts. */
export interface TransactTarget {
  readonly client: DynamoDBClient;
  readonly meter: CapacityMeter;
  /** Uniform in [0, 1): the jitter; `Math.random` when absent. */
  readonly random?: () => number;
  /** `setTimeout` when absent. */
  readonly sleep?: (ms: number) => Promise<void>;
}

interface Cancellation {
  readonly name?: string;
  readonly CancellationReasons?: {
    readonly Code?: string;
    readonly Item?: Record<string, AttributeValue>;
  }[];
}

/** Sends the transaction; answers a refusal by conditions, throws every other error. */
export async function transactWrite(
  target: TransactTarget,
  items: readonly TransactWriteItem[],
): Promise<TransactOutcome> {
  const random = target.random ?? Math.random;
  const sleep = target.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      const out = await target.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [...items],
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      target.meter.write(out.ConsumedCapacity);
      return { applied: true };
    } catch (error) {
      const cancelled = error as Cancellation;
      const reasons =
        cancelled.name === 'TransactionCanceledException'
          ? cancelled.CancellationReasons
          : undefined;
      const conflict =
        isTransactionConflict(error) || reasons?.some((r) => r.Code === 'TransactionConflict');
      if (conflict && attempt < TRANSACTION_ATTEMPTS) {
        target.meter.failedWrite();
        await sleep(conflictBackoffMs(attempt, random));
        continue;
      }
      const refused = items.map((_, i) => reasons?.[i]?.Code === 'ConditionalCheckFailed');
      if (conflict || !refused.includes(true)) throw error;
      // A cancelled transaction is billed twice the items' size, as a transaction is.
      target.meter.failedWrite(2 * items.length);
      return { applied: false, refused, items: items.map((_, i) => reasons?.[i]?.Item) };
    }
  }
}

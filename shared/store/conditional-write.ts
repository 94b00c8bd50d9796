/**
 * One conditional single-item write, metered. A refused condition is an answer, not an error:
 * DynamoDB bills it like a write, and with `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` it
 * carries the item as it stood; an applied write carries the item its `ReturnValues` asked for.
 */
import type { AttributeValue, ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import { isConditionFailed } from '../aws/error-codes.js';
import type { CapacityMeter } from './capacity.js';

/** How a conditional write ended. */
export type ConditionalWrite =
  | {
      readonly applied: true;
      /** The item as the write returned it (`ReturnValues`), if it asked for one. */
      readonly item?: Record<string, AttributeValue> | undefined;
    }
  | {
      readonly applied: false;
      /** The ConditionalCheckFailedException, for an error's `cause`. */
      readonly failure: unknown;
      /** The item when the condition was checked, if ALL_OLD was asked for and it existed. */
      readonly item: Record<string, AttributeValue> | undefined;
    };

/** Sends the write; answers a failed condition, throws every other error. */
export async function conditionalWrite(
  meter: CapacityMeter,
  send: () => Promise<{
    readonly ConsumedCapacity?: ConsumedCapacity | undefined;
    readonly Attributes?: Record<string, AttributeValue> | undefined;
  }>,
): Promise<ConditionalWrite> {
  try {
    const out = await send();
    meter.write(out.ConsumedCapacity);
    return { applied: true, item: out.Attributes };
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
    meter.failedWrite();
    return {
      applied: false,
      failure: error,
      item: (error as { Item?: Record<string, AttributeValue> }).Item,
    };
  }
}

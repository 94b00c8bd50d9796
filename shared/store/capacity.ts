/**
 * Counts what berth asks of DynamoDB: requests, consumed read and write units and conditional
 * check failures. The benchmark reads it; Lambdas publish it as metrics.
 */
import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';

/** Running totals of DynamoDB usage. */
export class CapacityMeter {
  readRequests = 0;
  writeRequests = 0;
  readUnits = 0;
  writeUnits = 0;
  conditionFailures = 0;

  /** Records one read request and what it consumed. */
  read(consumed: ConsumedCapacity | readonly ConsumedCapacity[] | undefined): void {
    this.readRequests++;
    this.readUnits += totalUnits(consumed, 'ReadCapacityUnits');
  }

  /** Records one write request and what it consumed (failed conditional writes consume too). */
  write(consumed: ConsumedCapacity | readonly ConsumedCapacity[] | undefined): void {
    this.writeRequests++;
    this.writeUnits += totalUnits(consumed, 'WriteCapacityUnits');
  }

  /**
   * Records a write that failed its condition (or a cancelled transaction). DynamoDB charges it like a write of the item's
   * size but does not say how much; berth's items are under 1 KB, so 1 unit (2 in a transaction).
   */
  failedWrite(units = 1): void {
    this.writeRequests++;
    this.writeUnits += units;
    this.conditionFailures++;
  }

  /** A snapshot of the totals. */
  totals(): {
    readRequests: number;
    writeRequests: number;
    readUnits: number;
    writeUnits: number;
    conditionFailures: number;
  } {
    const { readRequests, writeRequests, readUnits, writeUnits, conditionFailures } = this;
    return { readRequests, writeRequests, readUnits, writeUnits, conditionFailures };
  }
}

function totalUnits(
  consumed: ConsumedCapacity | readonly ConsumedCapacity[] | undefined,
  field: 'ReadCapacityUnits' | 'WriteCapacityUnits',
): number {
  const list =
    consumed === undefined
      ? []
      : Array.isArray(consumed)
        ? consumed
        : [consumed as ConsumedCapacity];
  // DynamoDB Local fills CapacityUnits only; AWS fills both, and they agree for single-kind calls.
  return list.reduce((sum, c) => sum + (c[field] ?? c.CapacityUnits ?? 0), 0);
}

/**
 * Allocation failures in the kube-apiserver's own words, so a `kubectl` user reads the message
 * they already know. Each carries the range, the value and the request slot (a field path such
 * as `spec.clusterIPs[0]`) it concerns.
 */
import type { ValueRange } from '../net/value-range.js';

/** Base of every allocation failure. */
export abstract class AllocationError extends Error {
  /** HTTP-style status the admission answer carries: 409 for conflicts, 422 for bad values. */
  abstract readonly statusCode: number;
  readonly range: ValueRange;
  readonly slot: string | undefined;

  constructor(message: string, range: ValueRange, slot: string | undefined) {
    super(message);
    this.range = range;
    this.slot = slot;
  }
}

/** No free value left in the range (both bands). */
export class RangeFullError extends AllocationError {
  readonly statusCode = 409;
  constructor(range: ValueRange, slot?: string) {
    super('range is full', range, slot);
    this.name = 'RangeFullError';
  }
}

/** A requested value is held by another owner. */
export class ValueAllocatedError extends AllocationError {
  readonly statusCode = 409;
  readonly value: string;
  constructor(range: ValueRange, value: string, slot?: string) {
    super(
      range.kind === 'clusterIP'
        ? 'provided IP is already allocated'
        : 'provided port is already allocated',
      range,
      slot,
    );
    this.name = 'ValueAllocatedError';
    this.value = value;
  }
}

/** A requested value lies outside the range. */
export class ValueNotInRangeError extends AllocationError {
  readonly statusCode = 422;
  readonly value: string;
  constructor(range: ValueRange, value: string, slot?: string) {
    super(
      range.kind === 'clusterIP'
        ? `the provided IP (${value}) is not in the valid range. The range of valid IPs is ${range.name}`
        : `provided port is not in the valid range. The range of valid ports is ${range.name}`,
      range,
      slot,
    );
    this.name = 'ValueNotInRangeError';
    this.value = value;
  }
}

/** A dynamic pick lost the race too many times in a row; the request may be retried. */
export class AllocationContentionError extends AllocationError {
  readonly statusCode = 409;
  constructor(range: ValueRange, attempts: number, slot?: string) {
    super(
      `could not claim a value in ${range.name} after ${attempts} concurrent conflicts; retry the request`,
      range,
      slot,
    );
    this.name = 'AllocationContentionError';
  }
}

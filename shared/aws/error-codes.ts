/**
 * AWS error codes classified by what berth does about them, in one place for every service
 * (the Karpenter `pkg/errors` shape): callers ask `isThrottled(err)`, never compare strings.
 */

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const named = error as { name?: unknown; Code?: unknown; code?: unknown };
  for (const candidate of [named.name, named.Code, named.code]) {
    if (typeof candidate === 'string') return candidate;
  }
  return undefined;
}

const CONDITION_FAILED = new Set(['ConditionalCheckFailedException']);
const THROTTLED = new Set([
  'ThrottlingException',
  'Throttling',
  'RequestLimitExceeded',
  'ProvisionedThroughputExceededException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'SlowDown',
]);
const TRANSACTION_CONFLICT = new Set(['TransactionConflictException']);

/** A DynamoDB condition expression evaluated false. */
export function isConditionFailed(error: unknown): boolean {
  return CONDITION_FAILED.has(codeOf(error) ?? '');
}

/** The service asks the caller to slow down; retry with backoff. */
export function isThrottled(error: unknown): boolean {
  return THROTTLED.has(codeOf(error) ?? '');
}

/** A DynamoDB transaction lost a race with another one on the same item. */
export function isTransactionConflict(error: unknown): boolean {
  return TRANSACTION_CONFLICT.has(codeOf(error) ?? '');
}

/** The error's AWS code, for logs and metrics. */
export function awsErrorCode(error: unknown): string {
  return codeOf(error) ?? 'Unknown';
}

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
/** The named thing does not exist (any more): for a delete or a release, success. */
const NOT_FOUND = new Set([
  'ResourceNotFoundException',
  'InvalidNetworkInterfaceID.NotFound',
  'InvalidAttachmentID.NotFound',
  'InvalidInstanceID.NotFound',
  'InvalidSubnetID.NotFound',
  'InvalidGroup.NotFound',
]);
/** A per-ENI, per-instance or per-account quota would be exceeded: retrying the same call cannot help. */
const LIMIT_EXCEEDED = new Set([
  'PrivateIpAddressLimitExceeded',
  'AttachmentLimitExceeded',
  'NetworkInterfaceLimitExceeded',
]);
/** The subnet has no free address (or no free /28 for a prefix): stop asking it for a while. */
const SUBNET_EXHAUSTED = new Set(['InsufficientFreeAddressesInSubnet']);

const IN_USE = new Set(['InvalidNetworkInterface.InUse']);
/** The service failed on its side; the same request may succeed later. */
const TRANSIENT = new Set([
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'Unavailable',
  'RequestTimeout',
  'RequestTimeoutException',
]);

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

/** The resource is gone or never existed; deleting or releasing it is already done. */
export function isNotFound(error: unknown): boolean {
  return NOT_FOUND.has(codeOf(error) ?? '');
}

/** An EC2 quota (IPs per ENI, ENIs per instance or per Region) stops the call; do not retry it. */
export function isLimitExceeded(error: unknown): boolean {
  return LIMIT_EXCEEDED.has(codeOf(error) ?? '');
}

/** The subnet ran out of addresses; mark it exhausted instead of hammering it. */
export function isSubnetExhausted(error: unknown): boolean {
  return SUBNET_EXHAUSTED.has(codeOf(error) ?? '');
}

/**
 * The subnet has no free aligned /28 for a prefix (fragmented, VPC CNI #2749), though it may
 * still have single addresses: fall back to those rather than mark the subnet exhausted.
 */
export function isPrefixShortage(error: unknown): boolean {
  return codeOf(error) === 'InsufficientCidrBlocks';
}

/**
 * The interface is already attached (an earlier attach landed though its answer was lost); the
 * ENI is fine, and its attachment is read again rather than the ENI discarded.
 */
export function isInUse(error: unknown): boolean {
  return IN_USE.has(codeOf(error) ?? '');
}

/** A server-side fault worth one more bounded, jittered attempt. */
export function isTransient(error: unknown): boolean {
  return TRANSIENT.has(codeOf(error) ?? '');
}

/** The error's AWS code, for logs and metrics. */
export function awsErrorCode(error: unknown): string {
  return codeOf(error) ?? 'Unknown';
}

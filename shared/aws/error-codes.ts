/**
 * AWS error codes classified by what berth does about them, in one place for every service
 * (the Karpenter `pkg/errors` shape): callers ask `isThrottled(err)`, never compare strings.
 *
 * Elastic Load Balancing speaks the query protocol: its wire code is `DuplicateListener`, and the
 * SDK throws that modelled error as a `DuplicateListenerException` (its `name`), so each ELBv2
 * code is listed in both spellings and a fake may throw either.
 */

/** An ELBv2 code and the name of the SDK's modelled exception for it. */
function elbv2(code: string): readonly string[] {
  return [code, `${code}Exception`];
}

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
  ...elbv2('ListenerNotFound'),
  ...elbv2('TargetGroupNotFound'),
  ...elbv2('LoadBalancerNotFound'),
  'EndpointGroupNotFoundException',
  'AcceleratorNotFoundException',
]);
/**
 * A per-ENI, per-instance or per-account quota would be exceeded (50 listeners per NLB, 3,000
 * target groups per Region, a custom routing accelerator's limits): retrying the same call cannot
 * help.
 */
const LIMIT_EXCEEDED = new Set([
  'PrivateIpAddressLimitExceeded',
  'AttachmentLimitExceeded',
  'NetworkInterfaceLimitExceeded',
  ...elbv2('TooManyListeners'),
  ...elbv2('TooManyTargetGroups'),
  'LimitExceededException',
]);
/** The subnet has no free address (or no free /28 for a prefix): stop asking it for a while. */
const SUBNET_EXHAUSTED = new Set(['InsufficientFreeAddressesInSubnet']);

const IN_USE = new Set(['InvalidNetworkInterface.InUse']);
/** ELBv2 refuses to delete a target group while a listener still forwards to it. */
const RESOURCE_IN_USE = new Set(elbv2('ResourceInUse'));
/** The load balancer's port is taken by a listener with other settings. */
const DUPLICATE_LISTENER = new Set(elbv2('DuplicateListener'));
/** The target group name is taken by one with other settings. */
const DUPLICATE_TARGET_GROUP_NAME = new Set(elbv2('DuplicateTargetGroupName'));
/** The service failed on its side; the same request may succeed later. */
const TRANSIENT = new Set([
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'Unavailable',
  'RequestTimeout',
  'RequestTimeoutException',
  // Global Accelerator's own fault, and its one change at a time per accelerator.
  'InternalServiceErrorException',
  'TransactionInProgressException',
  // ELBv2 is still applying an earlier change to the same resource.
  ...elbv2('PriorRequestNotComplete'),
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

/**
 * A quota (IPs per ENI, ENIs per instance or per Region, listeners per NLB, target groups per
 * Region, an accelerator's limits) stops the call; do not retry it.
 */
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

/** ELBv2 keeps the target group while a listener forwards to it: delete the listener first. */
export function isResourceInUse(error: unknown): boolean {
  return RESOURCE_IN_USE.has(codeOf(error) ?? '');
}

/**
 * The listener port is taken with other settings (the same settings answer the existing
 * listener instead): the port is not berth's to use as asked.
 */
export function isDuplicateListener(error: unknown): boolean {
  return DUPLICATE_LISTENER.has(codeOf(error) ?? '');
}

/** A target group of that name exists with other settings. */
export function isDuplicateTargetGroupName(error: unknown): boolean {
  return DUPLICATE_TARGET_GROUP_NAME.has(codeOf(error) ?? '');
}

/** A server-side fault worth one more bounded, jittered attempt. */
export function isTransient(error: unknown): boolean {
  return TRANSIENT.has(codeOf(error) ?? '');
}

/**
 * The service did not answer the call, rather than refuse it: throttled or failing on its side
 * (a 5xx) past the retries, or no HTTP answer at all (a timeout, a connection reset). Any other
 * 4xx is the service refusing this very call (a permission, an input), which waiting won't fix.
 */
export function isUnanswered(error: unknown): boolean {
  if (isThrottled(error) || isTransient(error)) return true;
  if (typeof error !== 'object' || error === null) return true;
  const { $fault, $metadata } = error as {
    readonly $fault?: unknown;
    readonly $metadata?: { readonly httpStatusCode?: unknown };
  };
  const status = $metadata?.httpStatusCode;
  if (typeof status === 'number') return status >= 500;
  return $fault !== 'client';
}

/** The error's AWS code, for logs and metrics. */
export function awsErrorCode(error: unknown): string {
  return codeOf(error) ?? 'Unknown';
}

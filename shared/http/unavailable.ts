/**
 * What berth answers when what it depends on does not answer, or its table holds an item a newer
 * berth wrote. A review berth cannot decide because its table, the Kubernetes API, ELBv2 or Global
 * Accelerator failed is berth's failure, not the caller's: a 5xx, so the apiserver applies the
 * webhook's failurePolicy.
 * The answer still says what failed and what to do, instead of a bare "internal error".
 */
import { isUnanswered } from '../aws/error-codes.js';
import { RateBudgetExhaustedError } from '../ec2/errors.js';
import { type FrontServiceCall, failedCallOf } from '../fronts/errors.js';
import { KubernetesUnreachableError } from '../k8s/errors.js';
import { ItemSchemaTooNewError } from '../store/errors.js';
import type { HttpFault } from './exchange.js';

/** Where the runbook for an outage is, for every message that names one. */
export const OUTAGE_RUNBOOK = 'docs/operations.md';

/** An AWS SDK error: every one carries `$metadata` (attempts, request id). */
function isSdkError(error: Error): boolean {
  return typeof (error as { $metadata?: unknown }).$metadata === 'object';
}

/**
 * A call of ELBv2 or Global Accelerator that failed: 503 when the service did not answer (or
 * berth's budget for it is spent), which waiting fixes; 500 when it refused the call, which is
 * berth's deployment (its role's permissions) to fix. Either way the service is named.
 */
function frontServiceFault(call: FrontServiceCall, error: Error): HttpFault {
  const failed = `${call.action} (${error.name}: ${error.message})`;
  return error instanceof RateBudgetExhaustedError || isUnanswered(error)
    ? {
        statusCode: 503,
        message: `${call.service} did not answer ${failed}; until it does, game servers with a public front are refused (the webhooks' failurePolicy); see ${OUTAGE_RUNBOOK}`,
      }
    : {
        statusCode: 500,
        message: `${call.service} refused ${failed}; check berth's IAM permissions for ${call.service}, and see ${OUTAGE_RUNBOOK}`,
      };
}

/**
 * The fault to answer for an error berth cannot serve past, or undefined for anything else (a
 * bug, answered 500 and logged). `store` names the table as the deployment knows it (its name and
 * endpoint), for the message.
 */
export function unavailableFault(error: unknown, store: string): HttpFault | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof KubernetesUnreachableError) {
      return {
        statusCode: 503,
        message: `the Kubernetes API did not answer (${cause.message}); check the cluster berth reads, and see ${OUTAGE_RUNBOOK}`,
      };
    }
    if (cause instanceof ItemSchemaTooNewError) {
      // A newer berth wrote the table (a rollback mid-upgrade): nothing this code can serve past,
      // and nothing the caller did wrong; the message names the item and the fix.
      return { statusCode: 503, message: `${cause.message}; see ${OUTAGE_RUNBOOK}` };
    }
    // Before the SDK check: an ELBv2 error is an SDK error too, and it is not the table's.
    const call = failedCallOf(cause);
    if (call !== undefined) return frontServiceFault(call, cause);
    if (isSdkError(cause)) {
      return {
        statusCode: 503,
        message: `the store did not answer: ${store}: ${cause.name}: ${cause.message}; until it does, game-server and Service CREATEs are refused (the webhooks' failurePolicy); check that the table answers (GET /healthz), and see ${OUTAGE_RUNBOOK} for the bypass`,
      };
    }
  }
  return undefined;
}

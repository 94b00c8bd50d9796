/**
 * What berth answers when what it depends on does not answer, or its table holds an item a newer
 * berth wrote. A review berth cannot decide because its table or the Kubernetes API failed is
 * berth's failure, not the caller's: a 5xx, so the apiserver applies the webhook's failurePolicy.
 * The answer still says what failed and what to do, instead of a bare "internal error".
 */
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
    if (isSdkError(cause)) {
      return {
        statusCode: 503,
        message: `the store did not answer: ${store}: ${cause.name}: ${cause.message}; until it does, game-server and Service CREATEs are refused (the webhooks' failurePolicy); check that the table answers (GET /healthz), and see ${OUTAGE_RUNBOOK} for the bypass`,
      };
    }
  }
  return undefined;
}

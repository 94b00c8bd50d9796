/**
 * One admission decision as the logs and metrics tell it: what was asked of which object, the
 * answer, the values the patch gave it, and how long the handler took. Pure: the HTTP layer
 * hands it to whatever records it (Powertools in Lambda, the request log locally).
 */

import { stringAt } from '../vocabulary/opaque.js';
import type { JsonPatch } from '../vocabulary/patch.js';
import type { AdmissionVerdict } from './response.js';
import type { AdmissionRequest } from './review.js';

/** What was decided. */
export interface AdmissionDecision {
  /** `services`, `pods`, `pods/binding`, … */
  readonly resource: string;
  readonly operation: string;
  readonly namespace: string;
  readonly name: string;
  readonly dryRun: boolean;
  readonly allowed: boolean;
  /** The denial's HTTP code (409, 422, 400). */
  readonly code?: number;
  /** The denial's message, first line. */
  readonly reason?: string;
  /** Values the patch set: `spec.clusterIP=10.100.4.2`, `nodePort=30034`, `hostPort=7412`. */
  readonly values: readonly string[];
  readonly latencyMs: number;
}

/** Paths whose values are allocations, by their last token. */
const VALUE_FIELDS = new Set(['clusterIP', 'nodePort', 'healthCheckNodePort', 'hostPort']);

/** The allocated values a patch sets, at most a handful (a decision is one log line). */
function valuesOf(patch: JsonPatch | undefined): string[] {
  const values: string[] = [];
  for (const operation of patch ?? []) {
    const field = operation.path.split('/').at(-1) ?? '';
    if (VALUE_FIELDS.has(field) && operation.value !== undefined) {
      values.push(`${field}=${String(operation.value)}`);
    } else if (field === 'ports' && Array.isArray(operation.value)) {
      // The object's own entries come along, whatever they are (a null one included).
      for (const port of operation.value as unknown[]) {
        if (typeof port !== 'object' || port === null) continue;
        const { nodePort, hostPort } = port as { nodePort?: unknown; hostPort?: unknown };
        if (nodePort !== undefined) values.push(`nodePort=${String(nodePort)}`);
        if (hostPort !== undefined) values.push(`hostPort=${String(hostPort)}`);
      }
    }
    if (values.length >= 8) break;
  }
  return values;
}

/** The decision on `request`. */
export function decisionOf(
  request: AdmissionRequest,
  verdict: AdmissionVerdict,
  latencyMs: number,
): AdmissionDecision {
  const name = request.name || stringAt(request.object, 'metadata', 'name') || '';
  return {
    resource: request.subResource
      ? `${request.resource.resource}/${request.subResource}`
      : request.resource.resource,
    operation: request.operation,
    namespace: request.namespace ?? '',
    name: name.slice(0, 253),
    dryRun: request.dryRun === true,
    allowed: verdict.allowed,
    ...(verdict.allowed
      ? {}
      : { code: verdict.code, reason: (verdict.message.split('\n')[0] ?? '').slice(0, 300) }),
    values: verdict.allowed ? valuesOf(verdict.patch) : [],
    latencyMs: Math.round(latencyMs * 100) / 100,
  };
}

/** One line for a terminal: `CREATE services games/lobby allowed clusterIP=… 3.1 ms`. */
export function formatDecision(decision: AdmissionDecision): string {
  const object = decision.namespace ? `${decision.namespace}/${decision.name}` : decision.name;
  const answer = decision.allowed
    ? `allowed${decision.values.length > 0 ? ` ${decision.values.join(' ')}` : ''}`
    : `denied ${decision.code}: ${decision.reason}`;
  return `${decision.operation} ${decision.resource} ${object}${decision.dryRun ? ' (dry run)' : ''} ${answer} ${decision.latencyMs} ms`;
}

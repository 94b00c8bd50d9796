/**
 * Dispatch on resource, subresource and operation. Anything berth does not
 * handle is allowed untouched; a handler's internal fault propagates, so the HTTP layer answers
 * 500 and the apiserver applies the webhook's failurePolicy instead of a silent allow.
 */

import { type AdmissionDecision, decisionOf } from './decision.js';
import {
  type AdmissionReviewResponse,
  type AdmissionVerdict,
  allow,
  toReviewResponse,
} from './response.js';
import type { AdmissionRequest } from './review.js';

/** Decides one admission request. */
export type AdmissionHandler = (request: AdmissionRequest) => Promise<AdmissionVerdict>;

/** The handlers berth has, one per resource it manages. */
export interface AdmissionHandlers {
  /** `services` CREATE, UPDATE, DELETE: cluster IPs and node ports. */
  readonly services: AdmissionHandler;
  /** `pods` CREATE, DELETE: host ports. */
  readonly pods: AdmissionHandler;
  /** `pods/binding` CREATE: where the game server can be reached. */
  readonly podBinding: AdmissionHandler;
}

/** Which handler, if any, takes a request. */
export function route(
  request: AdmissionRequest,
  handlers: AdmissionHandlers,
): AdmissionHandler | undefined {
  if (request.resource.group !== '') return undefined;
  const sub = request.subResource ?? '';
  const { operation } = request;
  const resource = request.resource.resource;
  if (resource === 'services' && sub === '' && ['CREATE', 'UPDATE', 'DELETE'].includes(operation)) {
    return handlers.services;
  }
  if (resource === 'pods' && sub === '' && (operation === 'CREATE' || operation === 'DELETE')) {
    return handlers.pods;
  }
  if (resource === 'pods' && sub === 'binding' && operation === 'CREATE')
    return handlers.podBinding;
  return undefined;
}

/** Answers one parsed request; `onDecision` hears every request a handler took. */
export async function admit(
  request: AdmissionRequest,
  handlers: AdmissionHandlers,
  onDecision?: (decision: AdmissionDecision) => void,
): Promise<AdmissionReviewResponse> {
  const handler = route(request, handlers);
  if (!handler) return toReviewResponse(request.uid, allow());
  const started = performance.now();
  const verdict = await handler(request);
  onDecision?.(decisionOf(request, verdict, performance.now() - started));
  return toReviewResponse(request.uid, verdict);
}

/**
 * Which of berth's webhooks the apiserver calls for a request, decided as the apiserver decides
 * it (kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook`, v1.30): the rule's
 * resource, subresource and operation, the namespace selector (berth's excludes namespaces by
 * name only), the object selector's labels (on the new object, else the old one, as the
 * apiserver matches either), then the CEL match conditions, evaluated by a CEL interpreter.
 * An error in a condition is answered by the webhook's failurePolicy, as the apiserver does:
 * Ignore skips the webhook; Fail rejects the request, which is counted here as a call (the
 * request never goes without berth).
 */

import type { V1MutatingWebhook } from '@kubernetes/client-node';
import { evaluate } from '@marcbachmann/cel-js';
import { EXCLUDED_NAMESPACES } from '../shared/manifests/webhooks.js';

/** The parts of an admission request that decide which webhooks it reaches. */
export interface AdmissionCall {
  readonly resource: string;
  readonly subResource?: string;
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  readonly namespace: string;
  readonly object?: unknown;
  readonly oldObject?: unknown;
}

type Labelled = { readonly metadata?: { readonly labels?: Readonly<Record<string, string>> } };

function labelsMatch(selector: V1MutatingWebhook['objectSelector'], object: unknown): boolean {
  const labels = (object as Labelled | undefined)?.metadata?.labels ?? {};
  return Object.entries(selector?.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
}

/** Whether the apiserver calls `webhook` for `call`. */
export function webhookCalled(webhook: V1MutatingWebhook, call: AdmissionCall): boolean {
  const resource = call.subResource ? `${call.resource}/${call.subResource}` : call.resource;
  const ruled = (webhook.rules ?? []).some(
    (rule) =>
      rule.resources?.includes(resource) &&
      (rule.operations?.includes(call.operation) || rule.operations?.includes('*')),
  );
  if (!ruled) return false;
  if ((EXCLUDED_NAMESPACES as readonly string[]).includes(call.namespace)) return false;
  if (webhook.objectSelector) {
    // The apiserver calls the webhook if either the new or the old object matches.
    const matches = [call.object, call.oldObject]
      .filter((o) => o !== undefined && o !== null)
      .some((o) => labelsMatch(webhook.objectSelector, o));
    if (!matches) return false;
  }
  for (const condition of webhook.matchConditions ?? []) {
    try {
      const context = { object: call.object ?? null, oldObject: call.oldObject ?? null };
      if (evaluate(condition.expression, context) !== true) return false;
    } catch {
      return webhook.failurePolicy === 'Fail';
    }
  }
  return true;
}

/** Whether any of `webhooks` is called for `call`. */
export function reachesBerth(webhooks: readonly V1MutatingWebhook[], call: AdmissionCall): boolean {
  return webhooks.some((webhook) => webhookCalled(webhook, call));
}

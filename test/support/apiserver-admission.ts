/**
 * The mutating-admission step of a kube-apiserver, for the webhooks of one
 * MutatingWebhookConfiguration as `berth manifests` prints it: which webhooks a request reaches
 * (the rules, the match conditions and object selector as `webhook-match.ts` decides, and the
 * namespace selector's expressions against the namespace's labels), each called in order over
 * HTTP with the AdmissionReview, its patch applied before the next, and a call that fails (no
 * connection, no answer in `timeoutSeconds`, a status other than 200) answered by the webhook's
 * `failurePolicy`: Fail refuses the request with the apiserver's message
 * (`failed calling webhook "NAME": ...`), Ignore goes on without it.
 * (kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go`.)
 */
import type {
  V1LabelSelector,
  V1MutatingWebhook,
  V1MutatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { type AdmissionCall, webhookCalled } from '../../sim/webhook-match.js';

/** A request to admit, with the labels of its namespace. */
export interface ApiserverRequest extends AdmissionCall {
  readonly name?: string;
  /** The namespace's labels; `kubernetes.io/metadata.name` is added, as the apiserver does. */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
}

/** What the apiserver made of the request. */
export interface ApiserverOutcome {
  readonly allowed: boolean;
  /** The object after every webhook's patch. */
  readonly object: unknown;
  /** The refusal, as `kubectl` would print it. */
  readonly message?: string;
  /** The webhooks called, in order. */
  readonly called: readonly string[];
}

/** Whether a label selector matches labels (matchLabels and matchExpressions). */
export function selectorMatches(
  selector: V1LabelSelector | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!selector) return true;
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every((expression) => {
      const value = labels[expression.key];
      const values = expression.values ?? [];
      switch (expression.operator) {
        case 'In':
          return value !== undefined && values.includes(value);
        case 'NotIn':
          return value === undefined || !values.includes(value);
        case 'Exists':
          return value !== undefined;
        case 'DoesNotExist':
          return value === undefined;
        default:
          throw new Error(`unknown selector operator ${expression.operator}`);
      }
    })
  );
}

async function call(
  webhook: V1MutatingWebhook,
  body: unknown,
): Promise<{ allowed: boolean; patch?: string; message?: string }> {
  const url = webhook.clientConfig.url;
  if (!url) throw new Error(`webhook ${webhook.name} has no URL`);
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout((webhook.timeoutSeconds ?? 10) * 1000),
  });
  if (response.status !== 200) {
    throw new Error(`the server answered ${response.status}: ${await response.text()}`);
  }
  const answer = (await response.json()) as {
    response: { allowed: boolean; patch?: string; status?: { message?: string } };
  };
  return {
    allowed: answer.response.allowed,
    ...(answer.response.patch ? { patch: answer.response.patch } : {}),
    ...(answer.response.status?.message ? { message: answer.response.status.message } : {}),
  };
}

/** Admits one request through the configuration's webhooks, as the apiserver does. */
export async function apiserverAdmit(
  configuration: V1MutatingWebhookConfiguration,
  request: ApiserverRequest,
): Promise<ApiserverOutcome> {
  const namespaceLabels = {
    ...request.namespaceLabels,
    'kubernetes.io/metadata.name': request.namespace,
  };
  let object = request.object;
  const called: string[] = [];
  for (const webhook of configuration.webhooks ?? []) {
    if (!selectorMatches(webhook.namespaceSelector, namespaceLabels)) continue;
    if (!webhookCalled(webhook, { ...request, object })) continue;
    called.push(webhook.name);
    let answer: Awaited<ReturnType<typeof call>>;
    try {
      answer = await call(
        webhook,
        review({
          resource: request.resource,
          ...(request.subResource ? { subResource: request.subResource } : {}),
          operation: request.operation as 'CREATE' | 'UPDATE' | 'DELETE',
          namespace: request.namespace,
          ...(request.name ? { name: request.name } : {}),
          object,
          oldObject: request.oldObject,
        }),
      );
    } catch (error) {
      if (webhook.failurePolicy === 'Ignore') continue;
      const reason = error instanceof Error ? error.message : String(error);
      return {
        allowed: false,
        object,
        called,
        message: `Internal error occurred: failed calling webhook "${webhook.name}": ${reason}`,
      };
    }
    if (!answer.allowed) {
      return {
        allowed: false,
        object,
        called,
        message: `admission webhook "${webhook.name}" denied the request: ${answer.message ?? ''}`,
      };
    }
    object = applyPatch(object, decodePatch(answer.patch));
  }
  return { allowed: true, object, called };
}

/**
 * The mutating-admission step of a kube-apiserver, for the webhooks of MutatingWebhookConfigurations
 * (berth's as `berth manifests` prints it, and others after it): which webhooks a request reaches
 * (the rules, the match conditions and object selector as `webhook-match.ts` decides, and the
 * namespace selector against the namespace's labels), each called in order over HTTP with the
 * AdmissionReview, its patch applied before the next, and a call that fails (no connection, no
 * answer in `timeoutSeconds`, a status other than 200) answered by the webhook's `failurePolicy`:
 * Fail refuses the request with the apiserver's message (`failed calling webhook "NAME": ...`),
 * Ignore goes on without it.
 *
 * Re-invocation as the apiserver does it (kubernetes v1.30
 * `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go` and
 * `.../webhook/mutating/reinvocationcontext.go`): a webhook with `reinvocationPolicy: IfNeeded` that
 * was called before a later webhook changed the object is called once more, after the first round,
 * with a new `request.uid` and the object as the chain left it. The extra round happens at most
 * once, whatever it changes.
 */
import { randomUUID } from 'node:crypto';
import type { V1LabelSelector, V1MutatingWebhook } from '@kubernetes/client-node';
import { review } from '../reviews.js';
import { type AdmissionCall, webhookCalled } from '../webhook-match.js';
import { applyPatch, decodePatch } from './json-patch.js';

/** A request to admit, with the labels of its namespace. */
export interface ApiserverRequest extends AdmissionCall {
  readonly name?: string;
  /** The namespace's labels; `kubernetes.io/metadata.name` is added, as the apiserver does. */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  readonly dryRun?: boolean;
}

/** What the apiserver made of the request. */
export interface ApiserverOutcome {
  readonly allowed: boolean;
  /** The object after every webhook's patch. */
  readonly object: unknown;
  /** The refusal, as `kubectl` would print it. */
  readonly message?: string;
  /** The refusal's HTTP status: the webhook's `status.code`, 500 for a failed call. */
  readonly code?: number;
  /** The webhooks called, in order (a re-invoked one twice). */
  readonly called: readonly string[];
}

/** Whether a label selector matches labels (matchLabels and matchExpressions). */
export function selectorMatches(
  selector: V1LabelSelector | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!selector) return true;
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(
    ([k, v]) => Object.hasOwn(labels, k) && labels[k] === v,
  );
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every((expression) => {
      const value = Object.hasOwn(labels, expression.key) ? labels[expression.key] : undefined;
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

interface WebhookAnswer {
  readonly allowed: boolean;
  readonly patch?: string;
  readonly message?: string;
  readonly code?: number;
}

async function call(webhook: V1MutatingWebhook, body: unknown): Promise<WebhookAnswer> {
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
    response: {
      allowed: boolean;
      patch?: string;
      status?: { message?: string; code?: number };
    };
  };
  return {
    allowed: answer.response.allowed,
    ...(answer.response.patch ? { patch: answer.response.patch } : {}),
    ...(answer.response.status?.message ? { message: answer.response.status.message } : {}),
    ...(answer.response.status?.code ? { code: answer.response.status.code } : {}),
  };
}

/** Admits one request through `webhooks` (the configurations' webhooks, in order), as the apiserver does. */
export async function apiserverAdmit(
  webhooks: readonly V1MutatingWebhook[],
  request: ApiserverRequest,
): Promise<ApiserverOutcome> {
  const namespaceLabels = {
    ...request.namespaceLabels,
    'kubernetes.io/metadata.name': request.namespace,
  };
  let object = request.object;
  const called: string[] = [];
  // Webhooks allowed a second call (IfNeeded, called already) and those a later change marked.
  const reinvocable = new Set<V1MutatingWebhook>();
  const reinvoke = new Set<V1MutatingWebhook>();

  const invoke = async (webhook: V1MutatingWebhook): Promise<ApiserverOutcome | undefined> => {
    if (!selectorMatches(webhook.namespaceSelector, namespaceLabels)) return undefined;
    if (!webhookCalled(webhook, { ...request, object })) return undefined;
    called.push(webhook.name);
    let answer: WebhookAnswer;
    try {
      answer = await call(
        webhook,
        review({
          resource: request.resource,
          ...(request.subResource ? { subResource: request.subResource } : {}),
          operation: request.operation,
          namespace: request.namespace,
          ...(request.name ? { name: request.name } : {}),
          object,
          oldObject: request.oldObject,
          dryRun: request.dryRun === true,
          // Every call, a re-invocation too, is its own request to the webhook.
          uid: randomUUID(),
        }),
      );
    } catch (error) {
      if (webhook.failurePolicy === 'Ignore') return undefined;
      const reason = error instanceof Error ? error.message : String(error);
      return {
        allowed: false,
        object,
        called,
        code: 500,
        message: `Internal error occurred: failed calling webhook "${webhook.name}": ${reason}`,
      };
    }
    if (!answer.allowed) {
      return {
        allowed: false,
        object,
        called,
        code: answer.code ?? 400,
        message: `admission webhook "${webhook.name}" denied the request: ${answer.message ?? ''}`,
      };
    }
    const patched = applyPatch(object, decodePatch(answer.patch));
    if (JSON.stringify(patched) !== JSON.stringify(object)) {
      // A change: every webhook called before that may be called again sees it.
      for (const earlier of reinvocable) reinvoke.add(earlier);
    }
    object = patched;
    if (webhook.reinvocationPolicy === 'IfNeeded') reinvocable.add(webhook);
    return undefined;
  };

  for (const webhook of webhooks) {
    const refused = await invoke(webhook);
    if (refused) return refused;
  }
  if (reinvoke.size > 0) {
    reinvocable.clear();
    for (const webhook of webhooks.filter((w) => reinvoke.has(w))) {
      const refused = await invoke(webhook);
      if (refused) return refused;
    }
  }
  return { allowed: true, object, called };
}

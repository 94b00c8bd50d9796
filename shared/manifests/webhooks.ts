/**
 * The MutatingWebhookConfiguration that routes pods, pod bindings and Services to berth
 *. Pure: builds a plain object; printing is `print.ts`'s job.
 *
 * One entry per (resource, failure mode) rather than one per resource: a webhook has a single
 * `failurePolicy`, and berth needs Fail where a missed call breaks a promise (a game server
 * without its port, two Services on one IP) and Ignore where it only delays cleanup that the
 * repair pass does anyway (deletes) or where failing would stop scheduling (bindings).
 */
import type { V1MutatingWebhook, V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import {
  APP_NAME_LABEL,
  APP_PART_OF_LABEL,
  BYPASS_LABEL,
  CLUSTER_ANNOTATION,
  GAME_SERVER_LABEL,
  NAMESPACE_NAME_LABEL,
  PORTS_ANNOTATION,
} from '../vocabulary/labels.js';
import { WebhookEndpointError } from './errors.js';

/** Name of the MutatingWebhookConfiguration object. */
export const WEBHOOK_CONFIGURATION_NAME = 'berth';

/** Namespaces berth never sees: the control plane's own objects must not depend on berth. */
export const EXCLUDED_NAMESPACES = ['kube-system'] as const;

/** Webhooks an operator may turn to fail open; Services never: two Services must not share an IP. */
export const FAIL_OPEN_CHOICES = ['pods'] as const;
/** One of `FAIL_OPEN_CHOICES`. */
export type FailOpen = (typeof FAIL_OPEN_CHOICES)[number];

/**
 * Seconds the apiserver waits for one call. A cold admission Lambda (≈0.3-1 s init with the
 * Secrets Manager read) plus a handful of DynamoDB round trips (≈10 ms each, a few conflict
 * retries at worst) and, for bindings, an EKS token and two Kubernetes reads fit in well under
 * 2 s; 5 s leaves that margin twice over and, being half the 10 s default, returns a hung
 * call's apiserver worker sooner. The admission function's own timeout sits below it, so the
 * apiserver sees an error it can apply its failurePolicy to rather than its own deadline.
 */
export const WEBHOOK_TIMEOUT_SECONDS = 5;

/** Labels every berth manifest carries, so `kubectl get -l` finds (and deletes) them all. */
export const MANIFEST_LABELS = {
  [APP_NAME_LABEL]: 'berth',
  [APP_PART_OF_LABEL]: 'berth',
};

/** Where the apiserver sends reviews. */
export interface WebhookEndpoint {
  /** `https://…/admission` locally, `https://…/admission/<secret>` in AWS. */
  readonly url: string;
  /** PEM of the CA that signed the server certificate; absent when public roots apply (AWS). */
  readonly caPem?: string;
}

type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

/** What sets one webhook apart from the others; the shared fields come from `berthWebhook`. */
interface WebhookPolicy {
  readonly name: string;
  readonly resources: readonly string[];
  readonly operations: readonly Operation[];
  readonly failurePolicy: 'Fail' | 'Ignore';
  readonly reinvocationPolicy: 'IfNeeded' | 'Never';
  readonly objectSelector?: V1MutatingWebhook['objectSelector'];
  readonly matchConditions?: V1MutatingWebhook['matchConditions'];
}

/**
 * CEL: the Service `object` names holds no cluster IP and no node port (type ExternalName, or
 * headless: `clusterIP: None`, which only type ClusterIP may have). Every field is tested with
 * `has` first: an absent field is an evaluation error, which the apiserver answers with the
 * webhook's failurePolicy instead of skipping it.
 */
function holdsNothing(object: 'object' | 'oldObject'): string {
  const spec = `${object}.spec`;
  return `has(${spec}.type) && ${spec}.type == 'ExternalName' || has(${spec}.clusterIP) && ${spec}.clusterIP == 'None'`;
}

/** berth's webhooks as data, each with the reason for its failure mode and filters. */
export const WEBHOOK_POLICIES: readonly WebhookPolicy[] = [
  {
    // Fail: a game server started without its host port cannot be reached, and the pod would
    // run unrecorded (no release on delete). A refused CREATE is retried by its controller.
    // Only pods asking for ports: objectSelector cannot see annotations, a CEL condition can.
    // IfNeeded: a later webhook may add containers or ports; berth's patch is idempotent
    // (the allocation id is recognised), so a second call re-applies the same ports.
    name: 'pods-create.berth.dev',
    resources: ['pods'],
    operations: ['CREATE'],
    failurePolicy: 'Fail',
    reinvocationPolicy: 'IfNeeded',
    matchConditions: [
      {
        name: 'requests-berth-ports',
        expression: `has(object.metadata.annotations) && '${PORTS_ANNOTATION}' in object.metadata.annotations`,
      },
    ],
  },
  {
    // Ignore: an outage must never block deleting a pod (or a node drain). A missed release is
    // a leak the repair pass frees after its grace passes.
    // Only pods berth labelled at CREATE; for DELETE the selector is matched on the old object.
    // Not a pod already terminating: the DELETE that set its deletionTimestamp released its
    // ports, and the kubelet's final DELETE after the grace period would only be answered
    // "nothing to release" (one billed invocation per game session).
    name: 'pods-delete.berth.dev',
    resources: ['pods'],
    operations: ['DELETE'],
    failurePolicy: 'Ignore',
    reinvocationPolicy: 'Never',
    objectSelector: { matchLabels: { [GAME_SERVER_LABEL]: 'true' } },
    matchConditions: [
      { name: 'not-terminating', expression: '!has(oldObject.metadata.deletionTimestamp)' },
    ],
  },
  {
    // Ignore: failing a Binding would stop the scheduler placing any pod during an outage; a
    // missed address annotation is recoverable, an unschedulable cluster is not.
    // All bindings: a Binding carries neither the pod's labels nor its annotations, so nothing
    // can filter it here; berth answers a pod without an allocation id at once, untouched.
    name: 'pods-binding.berth.dev',
    resources: ['pods/binding'],
    operations: ['CREATE'],
    failurePolicy: 'Ignore',
    reinvocationPolicy: 'Never',
  },
  {
    // Fail: a Service admitted without berth would get no cluster IP from berth's ranges, or
    // one berth does not know about, so two Services could end up sharing an IP or node port.
    // IfNeeded: a later webhook may change the type or ports; berth's answer is idempotent.
    // Not a Service that holds nothing before or after (ExternalName, headless): an UPDATE
    // from or to one that holds values still reaches berth, which allocates or gives back.
    name: 'services.berth.dev',
    resources: ['services'],
    operations: ['CREATE', 'UPDATE'],
    failurePolicy: 'Fail',
    reinvocationPolicy: 'IfNeeded',
    matchConditions: [
      {
        name: 'holds-cluster-values',
        expression: `!(${holdsNothing('object')}) || (oldObject != null && !(${holdsNothing('oldObject')}))`,
      },
    ],
  },
  {
    // Ignore: deleting a Service must work during an outage; repair frees what it held.
    // Not a Service that held nothing (ExternalName, headless).
    name: 'services-delete.berth.dev',
    resources: ['services'],
    operations: ['DELETE'],
    failurePolicy: 'Ignore',
    reinvocationPolicy: 'Never',
    matchConditions: [
      { name: 'holds-cluster-values', expression: `!(${holdsNothing('oldObject')})` },
    ],
  },
];

/**
 * Checks a webhook URL against what `admissionregistration/v1` accepts: HTTPS, no user info,
 * no query (the apiserver adds its own `?timeout=`), no fragment. Returns it normalised.
 */
export function webhookUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new WebhookEndpointError(
      `webhook URL "${text}" is not a URL: write it as https://host/admission`,
      {
        cause: error,
      },
    );
  }
  if (url.protocol !== 'https:') {
    throw new WebhookEndpointError(
      `webhook URL "${text}" must use https: the apiserver calls webhooks over TLS only`,
    );
  }
  if (url.username || url.password) {
    throw new WebhookEndpointError(
      `webhook URL "${text}" must not carry user:password@; the apiserver rejects it`,
    );
  }
  if (url.search || url.hash || text.includes('?') || text.includes('#')) {
    throw new WebhookEndpointError(
      `webhook URL "${text}" must not have a query or fragment; put a secret in the path instead`,
    );
  }
  return url.toString();
}

/**
 * The AWS webhook URL: the stack's base URL (ending in `/admission/`) and the secret path
 * segment, which Secrets Manager generates without punctuation.
 */
export function securedWebhookUrl(baseUrl: string, secret: string): string {
  if (!/^[A-Za-z0-9_-]{32,}$/.test(secret)) {
    throw new WebhookEndpointError(
      "the webhook secret must be at least 32 letters or digits; is this the stack's WebhookSecretArn?",
    );
  }
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  return webhookUrl(`${base}${secret}`);
}

/**
 * The local server's webhook URL (`berth serve` on this machine); `prefix` is the cluster's
 * path (`/clusters/<name>`) where the server serves several.
 */
export function localWebhookUrl(port: number, host = '127.0.0.1', prefix = ''): string {
  const authority = host.includes(':') ? `[${host}]` : host;
  return `https://${authority}:${port}${prefix}/admission`;
}

/**
 * The failure policy a webhook gets: its own, or Ignore for the pod CREATE webhook when pods fail
 * open (game servers then start without host ports while berth is down; the Service webhook
 * stays Fail whatever is asked).
 */
function failurePolicyOf(policy: WebhookPolicy, failOpen: readonly FailOpen[]): 'Fail' | 'Ignore' {
  const pods = policy.resources.includes('pods') && failOpen.includes('pods');
  return pods ? 'Ignore' : policy.failurePolicy;
}

function berthWebhook(
  policy: WebhookPolicy,
  endpoint: WebhookEndpoint,
  failOpen: readonly FailOpen[],
): V1MutatingWebhook {
  return {
    name: policy.name,
    clientConfig: {
      url: endpoint.url,
      ...(endpoint.caPem
        ? { caBundle: Buffer.from(endpoint.caPem, 'utf8').toString('base64') }
        : {}),
    },
    rules: [
      {
        apiGroups: [''],
        apiVersions: ['v1'],
        operations: [...policy.operations],
        resources: [...policy.resources],
        scope: 'Namespaced',
      },
    ],
    namespaceSelector: {
      matchExpressions: [
        { key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: [...EXCLUDED_NAMESPACES] },
        { key: BYPASS_LABEL, operator: 'NotIn', values: ['true'] },
      ],
    },
    ...(policy.objectSelector ? { objectSelector: policy.objectSelector } : {}),
    ...(policy.matchConditions ? { matchConditions: policy.matchConditions } : {}),
    // berth writes DynamoDB, but never for a dry run (it answers the patch it would apply).
    sideEffects: 'NoneOnDryRun',
    admissionReviewVersions: ['v1'],
    // Equivalent: a request through another API version of the same resource still reaches berth.
    matchPolicy: 'Equivalent',
    failurePolicy: failurePolicyOf(policy, failOpen),
    reinvocationPolicy: policy.reinvocationPolicy,
    timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
  };
}

/** The MutatingWebhookConfiguration for one endpoint; `failOpen` turns the pod webhook to Ignore. */
export function mutatingWebhookConfiguration(
  endpoint: WebhookEndpoint,
  cluster: string,
  failOpen: readonly FailOpen[] = [],
): V1MutatingWebhookConfiguration {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: {
      name: WEBHOOK_CONFIGURATION_NAME,
      labels: { ...MANIFEST_LABELS },
      annotations: { [CLUSTER_ANNOTATION]: cluster },
    },
    webhooks: WEBHOOK_POLICIES.map((policy) => berthWebhook(policy, endpoint, failOpen)),
  };
}

/** Every Kubernetes object a cluster needs for berth, in the order `kubectl apply` should create them. */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ScaleConfig } from '../config/schema.js';
import { karpenterNodePoolOf } from '../node-pool/node-pool.js';
import { placeholderManifests } from '../scale/placeholders.js';
import { annotationGuard } from './annotation-guard.js';
import { berthClusterRole, berthClusterRoleBinding } from './rbac.js';
import { type FailOpen, mutatingWebhookConfiguration, type WebhookEndpoint } from './webhooks.js';

/**
 * The manifests for one cluster and one webhook endpoint; with node pool `karpenter` or
 * `auto-mode`, also the buffer's placeholders (shared/scale/placeholders.ts). `failOpen` names the
 * webhooks that let requests through while berth does not answer.
 */
export function berthManifests(
  endpoint: WebhookEndpoint,
  cluster: string,
  scale: ScaleConfig,
  failOpen: readonly FailOpen[] = [],
): readonly KubernetesObject[] {
  // RBAC first: the webhook starts calling berth as soon as it exists, and the binding webhook
  // reads pods and nodes with the permissions granted here.
  return [
    berthClusterRole(),
    berthClusterRoleBinding(),
    ...(karpenterNodePoolOf(scale.nodePool) !== undefined ? placeholderManifests(scale) : []),
    mutatingWebhookConfiguration(endpoint, cluster, failOpen),
    // After the webhooks: berth's own CREATE patch must be in place before pods are checked.
    ...annotationGuard(),
  ];
}

/**
 * What `kubectl delete -f -` needs to remove berth from a cluster: each object by kind and name
 * only, the webhook configuration first (so no request is sent to a berth on its way out), RBAC
 * last.
 */
export function berthManifestsToDelete(
  cluster: string,
  scale: ScaleConfig,
): readonly KubernetesObject[] {
  const placeholder: WebhookEndpoint = { url: 'https://berth.invalid/admission' };
  return berthManifests(placeholder, cluster, scale)
    .toReversed()
    .map(({ apiVersion, kind, metadata }) => ({
      apiVersion,
      kind,
      metadata: {
        name: metadata?.name,
        ...(metadata?.namespace === undefined ? {} : { namespace: metadata.namespace }),
      },
    }));
}

/** Every Kubernetes object a cluster needs for berth, in the order `kubectl apply` should create them. */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ScaleConfig } from '../config/schema.js';
import { placeholderManifests } from '../scale/placeholders.js';
import { berthClusterRole, berthClusterRoleBinding } from './rbac.js';
import { mutatingWebhookConfiguration, type WebhookEndpoint } from './webhooks.js';

/**
 * The manifests for one cluster and one webhook endpoint; with node pool `karpenter`, also the
 * buffer's placeholders (shared/scale/placeholders.ts).
 */
export function berthManifests(
  endpoint: WebhookEndpoint,
  cluster: string,
  scale: ScaleConfig,
): readonly KubernetesObject[] {
  // RBAC first: the webhook starts calling berth as soon as it exists, and the binding webhook
  // reads pods and nodes with the permissions granted here.
  return [
    berthClusterRole(),
    berthClusterRoleBinding(),
    ...(scale.nodePool.type === 'karpenter' ? placeholderManifests(scale) : []),
    mutatingWebhookConfiguration(endpoint, cluster),
  ];
}

/**
 * What berth's Lambda roles may do in the cluster. The stack's EKS access entries put each
 * function role in the Kubernetes group `berth`; these objects give that group exactly the calls
 * of `ClusterApi` (shared/k8s/cluster-api.ts) and nothing else. Pure.
 */
import type { V1ClusterRole, V1ClusterRoleBinding } from '@kubernetes/client-node';
import { PLACEHOLDER_DEPLOYMENT } from '../scale/placeholders.js';
import { MANIFEST_LABELS } from './webhooks.js';

/** The Kubernetes group of berth's access entries (CDK `kubernetesGroups`). */
export const BERTH_GROUP = 'berth';

/** Name of the ClusterRole and its binding. */
export const CLUSTER_ROLE_NAME = 'berth';

/** The ClusterRole: reads for repair and binding, node changes for scale, events for findings. */
export function berthClusterRole(): V1ClusterRole {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: CLUSTER_ROLE_NAME, labels: { ...MANIFEST_LABELS } },
    rules: [
      // Repair lists every Service; the settle step reads one by name to see what it carries.
      { apiGroups: [''], resources: ['services'], verbs: ['get', 'list'] },
      // Repair and scale list pods; binding reads the bound pod (a Binding lacks its annotations);
      // scale sets the autoscaler protection that follows game state (patch).
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'patch'] },
      // Scale moves ready game servers off the nodes it drains through the Eviction API.
      { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
      // Binding reads a node's addresses; scale cordons (patch) and removes drained nodes.
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch', 'delete'] },
      // Findings and scale decisions are core/v1 Events; a repeated one raises the count of the
      // Event it made before (read, then patch), as client-go's recorder does.
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'get', 'patch'] },
      // Scale reads Agones game state and moves a ready Agones game server by deleting its
      // GameServer (its fleet makes another; deleting the pod would fight Agones' controller),
      // and sets multi-session servers' session label as it cordons and uncordons (patch).
      { apiGroups: ['agones.dev'], resources: ['gameservers'], verbs: ['list', 'patch', 'delete'] },
      // With node pool karpenter, scale reads the NodePool's expireAfter (forced node lifetimes).
      { apiGroups: ['karpenter.sh'], resources: ['nodepools'], verbs: ['get'] },
      // Start and repair read the cluster's Service ranges and its record of every cluster IP
      // (Kubernetes 1.33+; an older cluster answers 404 and berth keeps its configured ranges).
      {
        apiGroups: ['networking.k8s.io'],
        resources: ['servicecidrs', 'ipaddresses'],
        verbs: ['get', 'list', 'watch'],
      },
      // With node pool karpenter, scale sets the buffer's placeholder replicas.
      {
        apiGroups: ['apps'],
        resources: ['deployments/scale'],
        resourceNames: [PLACEHOLDER_DEPLOYMENT],
        verbs: ['patch'],
      },
    ],
  };
}

/** Binds the ClusterRole to the group the access entries name. */
export function berthClusterRoleBinding(): V1ClusterRoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: CLUSTER_ROLE_NAME, labels: { ...MANIFEST_LABELS } },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: CLUSTER_ROLE_NAME,
    },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: BERTH_GROUP }],
  };
}

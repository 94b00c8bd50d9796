/**
 * The buffer under Karpenter. berth cannot ask a Karpenter NodePool for nodes: Karpenter
 * launches nodes for pods that do not fit. So berth keeps the buffer the way Karpenter users do,
 * with placeholder pods: a Deployment of pause containers, each requesting one game-server slot,
 * at a negative priority that never preempts, on the game-server nodes. A game server that
 * arrives preempts a placeholder and starts at once; the evicted placeholder is recreated,
 * Pending, and Karpenter launches a node for it: the buffer is back a provisioning time later.
 * The scale pass sets the Deployment's replicas to the buffer it computes (demand.ts), and counts
 * placeholders' CPU as free slots.
 */
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { ScaleConfig } from '../config/schema.js';
import { selectorLabels } from '../vocabulary/label-selector.js';
import { APP_NAME_LABEL, PLACEHOLDER_LABEL } from '../vocabulary/labels.js';

/** Where the placeholders live, and their PriorityClass. */
export const PLACEHOLDER_NAMESPACE = 'berth-buffer';
export const PLACEHOLDER_DEPLOYMENT = 'berth-buffer';
export const PLACEHOLDER_PRIORITY_CLASS = 'berth-buffer';
/** Below the default 0 of game servers, so any of them preempts a placeholder. */
export const PLACEHOLDER_PRIORITY = -10;
const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

/** A placeholder pod: its CPU is a free slot to the scale pass, and it holds no node. */
export function isPlaceholder(pod: V1Pod): boolean {
  return pod.metadata?.labels?.[PLACEHOLDER_LABEL] === 'true';
}

/**
 * The Namespace, PriorityClass and Deployment of the placeholders (0 replicas: the scale pass
 * sets them), for `berth manifests` with node pool `karpenter` or `auto-mode`.
 */
export function placeholderManifests(scale: ScaleConfig): KubernetesObject[] {
  const labels = { [APP_NAME_LABEL]: 'berth-buffer', [PLACEHOLDER_LABEL]: 'true' };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: PLACEHOLDER_NAMESPACE } },
    {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: PLACEHOLDER_PRIORITY_CLASS },
      value: PLACEHOLDER_PRIORITY,
      preemptionPolicy: 'Never',
      globalDefault: false,
      description: "berth's buffer: game-server slots held for game servers, which preempt them",
    } as KubernetesObject,
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: PLACEHOLDER_DEPLOYMENT, namespace: PLACEHOLDER_NAMESPACE, labels },
      spec: {
        replicas: 0,
        selector: { matchLabels: { [PLACEHOLDER_LABEL]: 'true' } },
        template: {
          metadata: { labels },
          spec: {
            priorityClassName: PLACEHOLDER_PRIORITY_CLASS,
            terminationGracePeriodSeconds: 0,
            nodeSelector: selectorLabels(scale.nodeSelector),
            containers: [
              {
                name: 'pause',
                image: PAUSE_IMAGE,
                resources: { requests: { cpu: `${scale.gameServerCpuMillis}m` } },
              },
            ],
          },
        },
      },
    } as KubernetesObject,
  ];
}

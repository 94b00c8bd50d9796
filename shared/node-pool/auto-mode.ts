/**
 * EKS Auto Mode nodes, told apart from the nodes whose networking berth may run. On Auto Mode, AWS
 * runs Karpenter and the VPC CNI for the cluster: its nodes are locked down, take their pod IPs
 * from Auto Mode's own CNI (always /28 prefixes) and run no other CNI, so berth keeps no ENI pool
 * for them and installs no plugin there. Pure: labels and the cluster's compute config in, a
 * reason (or none) out.
 *
 * The signs, strongest first:
 * - `eks.amazonaws.com/compute-type: auto`, which Auto Mode sets on every node it manages (Amazon
 *   EKS User Guide, "Control if a workload is deployed on EKS Auto Mode nodes");
 * - `eks.amazonaws.com/nodeclass`, the node's NodeClass of the `eks.amazonaws.com` group (Amazon
 *   EKS User Guide, "Create a Node Class for Amazon EKS"), which only Auto Mode's Karpenter
 *   provisions from (self-managed Karpenter labels `karpenter.k8s.aws/ec2nodeclass` instead);
 * - where the cluster's compute config says Auto Mode is on, `karpenter.sh/nodepool` naming one of
 *   its built-in NodePools (`general-purpose`, `system`: Amazon EKS User Guide, "Enable or
 *   Disable Built-in NodePools"). NodePool names are cluster-wide, so no other Karpenter can own
 *   a pool of that name there.
 */

import { BUILT_IN_NODE_POOLS } from '../config/cross-field.js';
import type { NodePoolConfig } from '../config/schema.js';
import type { KarpenterNodePool } from '../k8s/cluster-api.js';
import {
  COMPUTE_TYPE_LABEL,
  KARPENTER_NODE_POOL_LABEL,
  NODE_CLASS_LABEL,
} from '../vocabulary/labels.js';

/** Its value on an Auto Mode node. */
export const AUTO_COMPUTE_TYPE = 'auto';
/** The API group of Auto Mode's NodeClass, as a NodePool's `nodeClassRef.group` names it. */
export const NODE_CLASS_GROUP = 'eks.amazonaws.com';

/**
 * The cluster's compute config as EKS `DescribeCluster` answers it (`computeConfig`): whether Auto
 * Mode's compute is on, and which built-in NodePools are enabled.
 */
export interface AutoModeCompute {
  readonly enabled: boolean;
  readonly nodePools: readonly string[];
}

/** The labels of a node, as `metadata.labels` holds them. */
type Labels = Readonly<Record<string, string>> | undefined;

/**
 * Why a node with these labels is an Auto Mode node, in words for a status line or an error;
 * undefined when it is not one (berth may pool its IPs).
 */
export function autoModeReason(labels: Labels, compute?: AutoModeCompute): string | undefined {
  if (labels?.[COMPUTE_TYPE_LABEL] === AUTO_COMPUTE_TYPE) {
    return `label ${COMPUTE_TYPE_LABEL}=${AUTO_COMPUTE_TYPE}`;
  }
  const nodeClass = labels?.[NODE_CLASS_LABEL];
  if (nodeClass !== undefined) return `label ${NODE_CLASS_LABEL}=${nodeClass}`;
  const pool = labels?.[KARPENTER_NODE_POOL_LABEL];
  if (compute?.enabled && pool !== undefined && compute.nodePools.includes(pool)) {
    return `built-in NodePool ${pool} of the cluster's Auto Mode compute`;
  }
  return undefined;
}

/** Whether a node is an Auto Mode node (see `autoModeReason`). */
export function isAutoModeNode(
  node: { readonly metadata?: { readonly labels?: Labels } } | undefined,
  compute?: AutoModeCompute,
): boolean {
  return autoModeReason(node?.metadata?.labels, compute) !== undefined;
}

/**
 * The compute config berth's own config implies: node pool `auto-mode` says the cluster runs Auto
 * Mode with its built-in NodePools; any other leaves the labels alone to tell.
 */
export function autoModeComputeOf(nodePool: NodePoolConfig): AutoModeCompute | undefined {
  return nodePool.type === 'auto-mode'
    ? { enabled: true, nodePools: [...BUILT_IN_NODE_POOLS] }
    : undefined;
}

/** Why berth keeps its hands off an Auto Mode node's networking, for messages. */
export const AUTO_MODE_NETWORKING =
  "EKS Auto Mode runs this node's networking (its own VPC CNI, /28 prefixes); berth keeps no ENI pool and assigns no pod IP here";

/** A node selector requirement, as a pod's `nodeAffinity` writes it. */
export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/**
 * The node affinity terms that keep a pod off every Auto Mode node `autoModeReason` would name:
 * all must hold (one `nodeSelectorTerms` entry), and `NotIn` matches a node without the label.
 */
export function avoidAutoModeNodes(compute?: AutoModeCompute): NodeSelectorRequirement[] {
  return [
    { key: COMPUTE_TYPE_LABEL, operator: 'NotIn', values: [AUTO_COMPUTE_TYPE] },
    { key: NODE_CLASS_LABEL, operator: 'DoesNotExist' },
    ...(compute?.enabled && compute.nodePools.length > 0
      ? [{ key: KARPENTER_NODE_POOL_LABEL, operator: 'NotIn' as const, values: compute.nodePools }]
      : []),
  ];
}

/**
 * What is wrong with the NodePool node pool `auto-mode` names, as the cluster has it: absent, or
 * made from a NodeClass that is not Auto Mode's (`eks.amazonaws.com`), which a self-managed
 * Karpenter runs (node pool `karpenter`). Undefined when it is an Auto Mode NodePool.
 */
export function autoModePoolProblem(
  name: string,
  pool: KarpenterNodePool | undefined,
): string | undefined {
  if (pool === undefined) {
    return `EKS Auto Mode NodePool ${name} not found (karpenter.sh/v1 nodepools/${name}); check scale.nodePool.name`;
  }
  const ref = pool.spec?.template?.spec?.nodeClassRef;
  if (ref?.group === undefined || ref.group === NODE_CLASS_GROUP) return undefined;
  return `NodePool ${name} makes its nodes from ${ref.kind ?? 'NodeClass'} ${ref.name ?? ''} of ${ref.group}, not from an EKS Auto Mode NodeClass (${NODE_CLASS_GROUP}): a self-managed Karpenter runs it; use node pool type karpenter`;
}

/**
 * Nodes where the VPC CNI runs, told apart from those berth-cni serves alone. The VPC CNI's node
 * agent is the DaemonSet `aws-node` in `kube-system`; its ipamd takes every address on the
 * instance's primary ENI for its own pool (aws/amazon-vpc-cni-k8s pkg/ipamd/ipamd.go at v1.23.0:
 * "Ignoring primary ENI ... since it is always managed"), so an address berth put there could be
 * handed to two pods. berth keeps no pool on a node where an aws-node pod runs, and its
 * manifests keep aws-node off the nodes berth-cni serves. Pure: pods and selectors in, answers
 * out.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { selectorLabels } from '../vocabulary/label-selector.js';
import { ARCH_LABEL, COMPUTE_TYPE_LABEL, K8S_APP_LABEL, OS_LABEL } from '../vocabulary/labels.js';
import type { NodeSelectorRequirement } from './auto-mode.js';

/** The VPC CNI's DaemonSet, as EKS installs it. */
export const VPC_CNI_DAEMONSET = { namespace: 'kube-system', name: 'aws-node' } as const;

/** The label selector of aws-node's pods: a listing of them, not of every pod. */
export const VPC_CNI_POD_SELECTOR = `${K8S_APP_LABEL}=${VPC_CNI_DAEMONSET.name}`;

/** Why a node where aws-node runs has no pool, as status and the node IP API say it. */
export const VPC_CNI_NODE =
  'aws-node runs on this node; berth serves no pool where the VPC CNI does';

/**
 * Whether the pod is aws-node's and may still run: in `kube-system`, owned by the DaemonSet
 * `aws-node`, bound to a node, and not Succeeded or Failed.
 */
export function isLiveVpcCniPod(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return (
    pod.metadata?.namespace === VPC_CNI_DAEMONSET.namespace &&
    (pod.metadata.ownerReferences ?? []).some(
      (owner) => owner.kind === 'DaemonSet' && owner.name === VPC_CNI_DAEMONSET.name,
    ) &&
    pod.spec?.nodeName !== undefined &&
    phase !== 'Succeeded' &&
    phase !== 'Failed'
  );
}

/**
 * The required node affinity aws-node's own manifest sets (one term: Linux, amd64 or arm64, not
 * Fargate, hybrid or Auto Mode nodes), as of aws/amazon-vpc-cni-k8s
 * config/master/aws-k8s-cni.yaml at v1.23.0.
 */
export const VPC_CNI_NODE_AFFINITY: readonly NodeSelectorRequirement[] = [
  { key: OS_LABEL, operator: 'In', values: ['linux'] },
  { key: ARCH_LABEL, operator: 'In', values: ['amd64', 'arm64'] },
  { key: COMPUTE_TYPE_LABEL, operator: 'NotIn', values: ['fargate', 'hybrid', 'auto'] },
];

/**
 * A strategic-merge patch of aws-node's DaemonSet that keeps it off the nodes `nodeSelector`
 * (berth-cni's, `key=value[,key=value]`) selects. A node is berth's when it has every one of
 * those labels, so aws-node may run where any one is missing or different: one term per label,
 * ORed, each `NotIn` that label's value (which a node without the label matches). The terms
 * replace aws-node's whole list (`NodeSelector.nodeSelectorTerms` is `+listType=atomic`,
 * kubernetes/api core/v1/types.go at v0.33.0), so each carries aws-node's own requirements too.
 */
export function keepVpcCniOff(nodeSelector: string): Record<string, unknown> {
  const terms = Object.entries(selectorLabels(nodeSelector)).map(([key, value]) => ({
    matchExpressions: [...VPC_CNI_NODE_AFFINITY, { key, operator: 'NotIn', values: [value] }],
  }));
  return {
    spec: {
      template: {
        spec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms },
            },
          },
        },
      },
    },
  };
}

/**
 * The nodes where the VPC CNI's aws-node runs, named for `berth status` and `/v1/status`: berth
 * keeps no ENI pool there (shared/node-pool/vpc-cni.ts), so a node without a pool says why.
 */
import type { ClusterApi } from '../k8s/cluster-api.js';
import { isLiveVpcCniPod, VPC_CNI_NODE, VPC_CNI_POD_SELECTOR } from '../node-pool/vpc-cni.js';

/** What status says of the nodes aws-node runs on. */
export interface VpcCniNodesReport {
  /** The nodes, by name; absent when the pods could not be read. */
  readonly nodes?: readonly string[];
  /** Why they have no pool, or why they were not read. */
  readonly why: string;
}

/**
 * Lists the nodes an aws-node pod runs on (one listing of aws-node's pods). A listing that fails
 * is said in the report instead of failing the status it is part of.
 */
export async function vpcCniNodesReport(
  cluster: Pick<ClusterApi, 'listPods'>,
): Promise<VpcCniNodesReport> {
  const nodes = new Set<string>();
  try {
    for await (const pod of cluster.listPods({ labelSelector: VPC_CNI_POD_SELECTOR })) {
      const node = pod.spec?.nodeName;
      if (node !== undefined && isLiveVpcCniPod(pod)) nodes.add(node);
    }
  } catch (error) {
    return { why: `the cluster's pods could not be read: ${(error as Error).message}` };
  }
  return { nodes: [...nodes].sort(), why: VPC_CNI_NODE };
}

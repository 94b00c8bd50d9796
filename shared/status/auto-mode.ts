/**
 * The EKS Auto Mode nodes berth leaves alone, counted for `berth status` and `/v1/status`: their
 * pod IPs come from Auto Mode's own VPC CNI, so they have no ENI pool and berth-cni does not run
 * there (shared/node-pool/auto-mode.ts). Host ports, Services and binding addresses serve them as
 * any other node.
 */
import type { ClusterApi } from '../k8s/cluster-api.js';
import { type AutoModeCompute, isAutoModeNode } from '../node-pool/auto-mode.js';

/** What status says of Auto Mode nodes. */
export interface AutoModeNodesReport {
  /** Auto Mode nodes in the cluster; absent when the nodes could not be read. */
  readonly count?: number;
  /** Why they are left out, or why they were not counted. */
  readonly why: string;
}

/** Why an Auto Mode node is left out, as status says it. */
export const AUTO_MODE_LEFT_OUT =
  "EKS Auto Mode's own VPC CNI gives their pods IPs: no ENI pool, no berth-cni; host ports, Services and binding addresses as on any node";

/**
 * Counts the cluster's Auto Mode nodes. A listing that fails is said in the report instead of
 * failing the status it is part of: the ranges and pools are read from the table alone.
 */
export async function autoModeNodesReport(
  cluster: Pick<ClusterApi, 'listNodes'>,
  compute?: AutoModeCompute,
): Promise<AutoModeNodesReport> {
  let count = 0;
  try {
    for await (const node of cluster.listNodes({ pageSize: 500 })) {
      if (isAutoModeNode(node, compute)) count++;
    }
  } catch (error) {
    return { why: `the cluster's nodes could not be read: ${(error as Error).message}` };
  }
  return { count, why: AUTO_MODE_LEFT_OUT };
}

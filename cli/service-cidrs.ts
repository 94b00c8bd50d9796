/**
 * `berth serve`'s start against the clusters' ServiceCIDRs: a configured Service range the
 * cluster does not have refuses the start (a configuration error, exit 2) naming both; served
 * clusters whose Service CIDRs overlap are warned about.
 */
import {
  type ClusterServiceCidrs,
  overlappingServiceCidrs,
  type ServiceCidrOverlap,
} from '../shared/clusters/cluster-set.js';
import type { BerthConfig } from '../shared/config/schema.js';
import { clusterServiceCidrs } from '../shared/k8s/service-cidrs.js';
import {
  type ClusterServiceCidr,
  reconcileServiceCidrs,
} from '../shared/services/cluster-cidrs.js';
import { UsageError } from './errors.js';
import type { LocalCluster } from './local-cluster.js';

/** What the start read of each served cluster's ServiceCIDRs. */
export interface ServiceCidrStart {
  /** By cluster name; undefined for a cluster without ServiceCIDRs, or not read. */
  readonly readings: ReadonlyMap<string, readonly ClusterServiceCidr[] | undefined>;
  /** Served clusters whose Service CIDRs overlap. */
  readonly overlaps: readonly ServiceCidrOverlap[];
}

/**
 * Reads every served cluster's ServiceCIDRs; throws UsageError (exit 2) when a configured range
 * is missing from its cluster, every such range of every cluster in one error.
 */
export async function checkServiceCidrs(
  configs: readonly BerthConfig[],
  clusters: ReadonlyMap<string, LocalCluster | undefined>,
): Promise<ServiceCidrStart> {
  const readings = new Map<string, readonly ClusterServiceCidr[] | undefined>();
  const problems: string[] = [];
  const used: ClusterServiceCidrs[] = [];
  for (const config of configs) {
    const cluster = clusters.get(config.cluster);
    const reading = cluster ? await clusterServiceCidrs(cluster.api) : undefined;
    readings.set(config.cluster, reading);
    const state = reconcileServiceCidrs({
      configured: config.serviceCIDRs,
      follow: config.services.followClusterCIDRs,
      cluster: reading,
    });
    const where = configs.length > 1 ? `clusters.${config.cluster}.` : '';
    for (const refusal of state.refused.values()) {
      if (refusal.reason === 'missing') problems.push(`${where}${refusal.message}`);
    }
    used.push({
      cluster: config.cluster,
      cidrs: [...config.serviceCIDRs, ...(reading ?? []).flatMap((object) => object.cidrs)],
    });
  }
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
  return { readings, overlaps: overlappingServiceCidrs(used) };
}

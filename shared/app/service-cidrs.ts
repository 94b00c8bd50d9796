/**
 * The clusters' ServiceCIDRs as a local host reads them. `berth serve`'s start: a configured
 * Service range the cluster does not have refuses it (a configuration error, exit 2) naming both;
 * served clusters whose Service CIDRs overlap are warned about. `berth status` reads them to
 * report.
 */
import {
  type ClusterServiceCidrs,
  overlappingServiceCidrs,
  type ServiceCidrOverlap,
} from '../clusters/cluster-set.js';
import type { BerthConfig } from '../config/schema.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import type { ClusterServiceCidr } from '../k8s/service-cidrs.js';
import { clusterIpAddresses, clusterServiceCidrs } from '../k8s/service-cidrs.js';
import type { ServiceCidrGate } from '../services/cidr-gate.js';
import { reconcileServiceCidrs } from '../services/cluster-cidrs.js';
import type { LocalCluster } from './local-cluster.js';
import { UsageError } from './local-errors.js';

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

/**
 * Reads a cluster's ServiceCIDRs, and its IPAddresses when it has them (they name what holds
 * addresses in a terminating one), into the gate admission decides by.
 */
export async function refreshServiceCidrs(gate: ServiceCidrGate, api: ClusterApi): Promise<void> {
  const cluster = await clusterServiceCidrs(api);
  gate.apply(cluster, cluster ? await clusterIpAddresses(api) : undefined);
}

/**
 * Reads the cluster's ServiceCIDRs into the gate every `intervalMs`, for a server that runs no
 * repair pass (which would read them itself); answers the function that stops it.
 */
export function watchServiceCidrs(
  gate: ServiceCidrGate,
  api: ClusterApi,
  intervalMs: number,
  failed: (error: unknown) => void,
): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = refreshServiceCidrs(gate, api).catch(failed);
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

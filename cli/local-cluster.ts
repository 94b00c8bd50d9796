/** The Kubernetes cluster a local command reads, found as kubectl finds it. */
import type { PassContext } from '../shared/app/pass-context.js';
import type { BerthConfig } from '../shared/config/schema.js';
import { ClientNodeClusterApi } from '../shared/k8s/client-node-cluster-api.js';
import type { ClusterApi } from '../shared/k8s/cluster-api.js';
import {
  kubeconfigFiles,
  loadLocalKubeConfig,
  localKubeContexts,
} from '../shared/k8s/kubeconfig.js';
import type { StoreTarget } from '../shared/local/store-target.js';
import { clusterContexts } from './cluster-contexts.js';
import type { CliOptions } from './main.js';

/** The cluster as kubectl would find it: `--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`. */
export interface LocalCluster {
  readonly api: ClusterApi;
  readonly context: string;
  readonly server: string;
}

function kubeconfigSource(options: CliOptions, context: string | undefined) {
  return {
    ...(options.kubeconfig ? { kubeconfigPath: options.kubeconfig } : {}),
    ...(options.kubeconfigEnv ? { kubeconfigEnv: options.kubeconfigEnv } : {}),
    ...(context ? { context } : {}),
  };
}

/** The context the command's cluster is read through (`--context`, see cluster-contexts.ts). */
function contextOf(options: CliOptions): string | undefined {
  const cluster = options.config.cluster;
  return clusterContexts({
    flag: options.context,
    clusters: [cluster],
    configured: options.configuredClusters,
    available: () => kubeconfigContexts(options),
  }).get(cluster);
}

/**
 * The cluster the passes need, through `context` (default: the command's cluster's, from
 * `--context`, else the kubeconfig's current context); a missing or unusable kubeconfig is an
 * environment error.
 */
export function requiredCluster(
  options: CliOptions,
  context: string | undefined = contextOf(options),
): LocalCluster {
  const kubeConfig = loadLocalKubeConfig(kubeconfigSource(options, context));
  return {
    api: new ClientNodeClusterApi({ kubeConfig }),
    context: kubeConfig.getCurrentContext(),
    server: kubeConfig.getCurrentCluster()?.server ?? '?',
  };
}

/** Whether kubectl would find a kubeconfig at all; none is no error for a local server. */
export function hasKubeconfig(options: CliOptions): boolean {
  return (
    options.kubeconfig !== undefined ||
    kubeconfigFiles(kubeconfigSource(options, undefined)).length > 0
  );
}

/** The cluster `serve` reads, if kubectl would find one. */
export function optionalCluster(options: CliOptions): LocalCluster | undefined {
  return hasKubeconfig(options) ? requiredCluster(options) : undefined;
}

/** The names of the kubeconfig's contexts (none without a kubeconfig). */
export function kubeconfigContexts(options: CliOptions): string[] {
  return hasKubeconfig(options) ? localKubeContexts(kubeconfigSource(options, undefined)) : [];
}

/** What a pass runs against for one cluster of the config. */
export function passContext(
  options: CliOptions,
  config: BerthConfig,
  store: StoreTarget,
  clusterApi: ClusterApi,
): PassContext {
  return {
    config,
    dynamo: store.client,
    tableName: store.tableName,
    clusterApi,
    ...(options.region ? { region: options.region } : {}),
  };
}

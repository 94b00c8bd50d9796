/** The Kubernetes cluster a local command reads, found as kubectl finds it. */

import type { BerthConfig } from '../config/schema.js';
import { ClientNodeClusterApi } from '../k8s/client-node-cluster-api.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { KubernetesUnreachableError } from '../k8s/errors.js';
import { kubeconfigFiles, loadLocalKubeConfig, localKubeContexts } from '../k8s/kubeconfig.js';
import type { StoreTarget } from '../local/store-target.js';
import { clusterContexts } from './cluster-contexts.js';
import { EnvironmentError } from './local-errors.js';
import type { LocalOptions } from './local-options.js';
import type { PassContext } from './pass-context.js';

/** The cluster as kubectl would find it: `--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`. */
export interface LocalCluster {
  readonly api: ClusterApi;
  readonly context: string;
  readonly server: string;
}

function kubeconfigSource(options: LocalOptions, context: string | undefined) {
  return {
    ...(options.kubeconfig ? { kubeconfigPath: options.kubeconfig } : {}),
    ...(options.kubeconfigEnv ? { kubeconfigEnv: options.kubeconfigEnv } : {}),
    ...(context ? { context } : {}),
  };
}

/** The context the command's cluster is read through (`--context`, see cluster-contexts.ts). */
function contextOf(options: LocalOptions): string | undefined {
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
  options: LocalOptions,
  context: string | undefined = contextOf(options),
): LocalCluster {
  const kubeConfig = loadLocalKubeConfig(kubeconfigSource(options, context));
  const current = kubeConfig.getCurrentContext();
  const server = kubeConfig.getCurrentCluster()?.server ?? '?';
  return {
    api: namingServer(
      new ClientNodeClusterApi({ kubeConfig }),
      `API server ${server}, context ${current}`,
    ),
    context: current,
    server,
  };
}

/**
 * The API with every "no response" failure naming the server it tried and the context it came
 * from: the first thing a user checks. The error keeps its class, so callers branch as before.
 */
function namingServer(api: ClusterApi, where: string): ClusterApi {
  const named = (error: unknown): unknown => {
    for (let cause = error; cause instanceof Error; cause = cause.cause) {
      if (cause instanceof KubernetesUnreachableError && !cause.message.includes(where)) {
        cause.message = `${cause.message} (${where})`;
      }
    }
    return error;
  };
  return new Proxy(api, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (result instanceof Promise) return result.catch((error) => Promise.reject(named(error)));
        if (result && typeof result === 'object' && Symbol.asyncIterator in result) {
          return (async function* () {
            try {
              yield* result as AsyncIterable<unknown>;
            } catch (error) {
              throw named(error);
            }
          })();
        }
        return result;
      };
    },
  });
}

/** How long `berth serve` waits for a cluster's API server at start. */
const START_CHECK_MS = 15_000;

/**
 * Refuses to start against a cluster whose API server does not answer (exit 3, naming it):
 * otherwise every binding review would fail until it does. An answer of any kind (a refusal for
 * want of permissions included) is an API server that answers.
 */
export async function checkClusterAnswers(cluster: LocalCluster): Promise<void> {
  const fix = `check that it answers (kubectl --context ${cluster.context} get --raw /readyz), or pass --kubeconfig / --context`;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), START_CHECK_MS);
  });
  const probe = (async () => {
    for await (const _ of cluster.api.listNodes({ pageSize: 1 })) break;
    return 'answered' as const;
  })().catch((error: unknown) => error);
  try {
    const outcome = await Promise.race([probe, late]);
    if (outcome === 'late') {
      throw new EnvironmentError(
        `the API server ${cluster.server} (context ${cluster.context}) did not answer within ${START_CHECK_MS / 1000} s: ${fix}`,
      );
    }
    if (outcome instanceof KubernetesUnreachableError) {
      // Not its cause: the chain's generic fix would follow this one.
      throw new EnvironmentError(`${outcome.message}: ${fix}`);
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Whether kubectl would find a kubeconfig at all; none is no error for a local server. */
export function hasKubeconfig(options: LocalOptions): boolean {
  return (
    options.kubeconfig !== undefined ||
    kubeconfigFiles(kubeconfigSource(options, undefined)).length > 0
  );
}

/** The cluster `serve` reads, if kubectl would find one. */
export function optionalCluster(options: LocalOptions): LocalCluster | undefined {
  return hasKubeconfig(options) ? requiredCluster(options) : undefined;
}

/** The names of the kubeconfig's contexts (none without a kubeconfig). */
export function kubeconfigContexts(options: LocalOptions): string[] {
  return hasKubeconfig(options) ? localKubeContexts(kubeconfigSource(options, undefined)) : [];
}

/** What a pass runs against for one cluster of the config. */
export function passContext(
  options: LocalOptions,
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

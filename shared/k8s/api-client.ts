/**
 * client-node API clients whose every request gives up after a deadline. `makeApiClient` sets
 * none, so an API server that accepts the connection and never answers (a stuck proxy, a
 * blackholed load balancer) would hold a command or pass forever; abandoned, the request fails
 * as unreachable, which commands answer with exit 3 naming the server. The configuration is the
 * one `KubeConfig.makeApiClient` builds (kubernetes-client/javascript `src/config.ts` at 1.x),
 * plus a middleware that arms the deadline.
 */
import {
  type ApiConstructor,
  type ApiType,
  createConfiguration,
  type KubeConfig,
  ServerConfiguration,
} from '@kubernetes/client-node';

/**
 * How long one request may take. Lists read pages of 500 objects, which an apiserver answers in
 * well under a second; a minute without an answer is no slow server, but none.
 */
export const KUBERNETES_REQUEST_TIMEOUT_MS = 60_000;

/** An API client of `apiClientType` over the kubeconfig's current cluster, with a deadline. */
export function apiClientWithDeadline<T extends ApiType>(
  kubeConfig: KubeConfig,
  apiClientType: ApiConstructor<T>,
  timeoutMs: number = KUBERNETES_REQUEST_TIMEOUT_MS,
): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) return kubeConfig.makeApiClient(apiClientType); // throws its own "No active cluster!"
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kubeConfig },
    promiseMiddleware: [
      {
        pre: async (context) => {
          context.setSignal(AbortSignal.timeout(timeoutMs));
          return context;
        },
        post: async (context) => context,
      },
    ],
  });
  return new apiClientType(configuration);
}

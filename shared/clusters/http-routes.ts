/**
 * One HTTP endpoint for several clusters: `/clusters/<name>/<route>` is `<route>` of that
 * cluster's API (`/clusters/games-a/admission/<secret>`, `/clusters/games-a/v1/nodes/…/ips`).
 * A cluster's node agents and webhook are configured with its prefixed base URL, so nothing
 * below the prefix changes. Where one cluster is served, plain paths reach it as well: a
 * single-cluster deployment's URLs stay as they were, and a plain `/healthz` (the shared
 * table's health) goes to the first cluster's API whatever the number of clusters (where paths
 * carry a secret, that API still wants its own: `/healthz/<secret>` is under its prefix).
 */
import type { HttpRequest, HttpResponse } from '../http/exchange.js';
import type { ClusterSet } from './cluster-set.js';

/** An HTTP API as `createHttpApi` builds it. */
export type HttpHandler = (request: HttpRequest) => Promise<HttpResponse>;

const CLUSTER_PATH = /^\/clusters\/([^/]+)(\/.*)?$/;

/** The path prefix of one cluster's routes. */
export function clusterPathPrefix(cluster: string): string {
  return `/clusters/${encodeURIComponent(cluster)}`;
}

/** How a request that names no served cluster is answered. */
export type UnknownClusterAnswer =
  /** An empty 404, as for any path without its secret: a scanner learns no cluster names. */
  | 'opaque'
  /** A 404 that lists the clusters served (the local server, the SigV4-signed node IP API). */
  | 'explain';

/** Routes each request to its cluster's API; `onCluster` hears the cluster before the call. */
export function clusterRoutes(
  apis: ClusterSet<HttpHandler>,
  options: {
    readonly unknown: UnknownClusterAnswer;
    readonly onCluster?: (cluster: string) => void;
    /** Whether the request's caller may reach this cluster's API; 403 when not. */
    readonly authorize?: (cluster: string, request: HttpRequest) => boolean;
  },
): HttpHandler {
  const notFound = (message: string): HttpResponse =>
    options.unknown === 'opaque'
      ? { statusCode: 404, headers: {}, body: '' }
      : {
          statusCode: 404,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ error: message }),
        };
  return async (request) => {
    const match = CLUSTER_PATH.exec(request.path);
    let cluster: string;
    let path: string;
    if (match) {
      try {
        cluster = decodeURIComponent(match[1] ?? '');
      } catch {
        // Not a name at all (a malformed escape): no cluster's, and no fault of berth's.
        return notFound(`${request.path}: the cluster name is not a valid URL segment`);
      }
      path = match[2] ?? '/';
      if (!apis.has(cluster)) {
        return notFound(
          `cluster "${cluster}" is not served here; served: ${apis.names.map(clusterPathPrefix).join(', ')}`,
        );
      }
    } else if (apis.names.length === 1 || request.path === '/healthz') {
      // Health is the shared table's: any cluster's API answers it.
      cluster = apis.names[0] as string;
      path = request.path;
    } else {
      return notFound(
        `${request.path} names no cluster: prefix it with one of ${apis.names.map(clusterPathPrefix).join(', ')}`,
      );
    }
    options.onCluster?.(cluster);
    if (options.authorize && !options.authorize(cluster, request)) {
      return {
        statusCode: 403,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ error: `this caller may not call cluster "${cluster}"` }),
      };
    }
    return apis.get(cluster).value({ ...request, path });
  };
}

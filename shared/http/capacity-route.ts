/**
 * `GET /v1/capacity`: the capacity view of every cluster served (`?cluster=NAME` for one), read
 * from what the passes recorded. A route of its own, in front of the clusters' routes, because it
 * answers for all of them at once; in AWS it is the capacity function's only route.
 */
import { UnknownClusterError } from '../clusters/cluster-set.js';
import type { HttpHandler } from '../clusters/http-routes.js';
import type { HttpResponse } from './exchange.js';
import { refusalOf } from './refusal.js';

/** The route's path. */
export const CAPACITY_PATH = '/v1/capacity';

const json = (statusCode: number, body: unknown): HttpResponse => ({
  statusCode,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  body: JSON.stringify(body),
});

/** Answers the capacity route with `read`, and hands every other request to `next`. */
export function withCapacity(
  read: (cluster: string | undefined) => Promise<unknown>,
  next: HttpHandler,
): HttpHandler {
  return async (request) => {
    if (request.path !== CAPACITY_PATH) return next(request);
    const refused = request.headers && refusalOf(request.method, request.headers);
    if (refused) return refused;
    if (request.method !== 'GET') {
      return json(405, { error: `${request.method} is not allowed on ${CAPACITY_PATH}: use GET` });
    }
    const cluster = request.query?.cluster;
    try {
      return json(200, await read(cluster === '' ? undefined : cluster));
    } catch (error) {
      if (error instanceof UnknownClusterError) return json(404, { error: error.message });
      throw error;
    }
  };
}

import { describe, expect, it } from 'vitest';
import { ClusterSet } from '../../shared/clusters/cluster-set.js';
import { clusterRoutes, type HttpHandler } from '../../shared/clusters/http-routes.js';
import { parseClusterConfigs } from '../../shared/config/clusters.js';
import { createHttpApi } from '../../shared/http/api.js';
import type { HttpRequest } from '../../shared/http/exchange.js';

const get = (path: string): HttpRequest => ({ method: 'GET', path, body: undefined });

/** Each cluster's API answers its status with its own name, behind its own path secret. */
function apis(document: unknown, secrets?: Record<string, string>): ClusterSet<HttpHandler> {
  return new ClusterSet(parseClusterConfigs(document), (config) =>
    createHttpApi({
      healthy: async () => true,
      status: async () => ({ cluster: config.cluster }),
      ...(secrets ? { pathSecret: secrets[config.cluster] as string } : {}),
    }),
  );
}

describe('clusterRoutes', () => {
  it("sends /clusters/<name>/… to that cluster's API, the prefix taken off", async () => {
    const heard: string[] = [];
    const route = clusterRoutes(apis({ clusters: { 'games-a': {}, 'games-b': {} } }), {
      unknown: 'explain',
      onCluster: (cluster) => heard.push(cluster),
    });
    const b = await route(get('/clusters/games-b/v1/status'));
    expect(b.statusCode).toBe(200);
    expect(JSON.parse(b.body)).toEqual({ cluster: 'games-b' });
    const a = await route(get('/clusters/games-a/v1/status'));
    expect(JSON.parse(a.body)).toEqual({ cluster: 'games-a' });
    expect(heard).toEqual(['games-b', 'games-a']);
  });

  it('names the clusters served when a path names another or none (explain)', async () => {
    const route = clusterRoutes(apis({ clusters: { 'games-a': {}, 'games-b': {} } }), {
      unknown: 'explain',
    });
    const other = await route(get('/clusters/games-c/v1/status'));
    expect(other.statusCode).toBe(404);
    expect(JSON.parse(other.body).error).toMatch(/"games-c" is not served.*\/clusters\/games-a/);
    const none = await route(get('/v1/status'));
    expect(none.statusCode).toBe(404);
    expect(JSON.parse(none.body).error).toMatch(/names no cluster/);
    // A name that is not a URL segment is nobody's, not a fault.
    expect((await route(get('/clusters/%E0/v1/status'))).statusCode).toBe(404);
    // The shared table's health needs no cluster.
    expect((await route(get('/healthz'))).statusCode).toBe(200);
  });

  it('answers an unknown cluster like a wrong secret where paths carry one (opaque)', async () => {
    const secrets = { 'games-a': 'secretA', 'games-b': 'secretB' };
    const route = clusterRoutes(apis({ clusters: { 'games-a': {}, 'games-b': {} } }, secrets), {
      unknown: 'opaque',
    });
    expect((await route(get('/clusters/games-a/v1/status/secretA'))).statusCode).toBe(200);
    // Each cluster's path takes its own secret only.
    const crossed = await route(get('/clusters/games-a/v1/status/secretB'));
    const unknown = await route(get('/clusters/games-c/v1/status/secretA'));
    for (const answer of [crossed, unknown]) {
      expect(answer).toEqual({ statusCode: 404, headers: {}, body: '' });
    }
  });

  it('answers 403 when the caller may not reach the cluster, before its API runs', async () => {
    const route = clusterRoutes(apis({ clusters: { 'games-a': {}, 'games-b': {} } }), {
      unknown: 'explain',
      authorize: (cluster, request) => request.caller === `node-of-${cluster}`,
    });
    const as = (caller: string, cluster: string) =>
      route({ ...get(`/clusters/${cluster}/v1/status`), caller });
    expect((await as('node-of-games-a', 'games-a')).statusCode).toBe(200);
    const refused = await as('node-of-games-a', 'games-b');
    expect(refused.statusCode).toBe(403);
    expect(JSON.parse(refused.body).error).toMatch(/may not call cluster "games-b"/);
  });

  it("keeps a single cluster's plain paths, and takes its prefixed ones too", async () => {
    const route = clusterRoutes(apis({ cluster: 'games' }), { unknown: 'explain' });
    expect(JSON.parse((await route(get('/v1/status'))).body)).toEqual({ cluster: 'games' });
    expect(JSON.parse((await route(get('/clusters/games/v1/status'))).body)).toEqual({
      cluster: 'games',
    });
  });
});

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiException, KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ClientNodeClusterApi,
  translateKubernetesError,
} from '../../shared/k8s/client-node-cluster-api.js';
import {
  KubernetesApiError,
  KubernetesConflictError,
  KubernetesInvalidError,
  KubernetesListExpiredError,
  KubernetesNotFoundError,
  KubernetesUnreachableError,
} from '../../shared/k8s/errors.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';

const TOKEN = 'k8s-aws-v1.test-token';
const NOW = Date.parse('2026-03-01T12:00:00Z');

const node = (name: string, labels: Record<string, string> = {}): V1Node => ({
  metadata: { name, labels },
  spec: {},
  status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
});

const pod = (
  namespace: string,
  name: string,
  nodeName: string | undefined,
  phase: string,
  labels: Record<string, string> = {},
): V1Pod => ({
  metadata: { namespace, name, labels },
  spec: { containers: [{ name: 'game' }], ...(nodeName ? { nodeName } : {}) },
  status: { phase },
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('ClientNodeClusterApi', () => {
  let fake: KubeApiServer;
  let api: ClientNodeClusterApi;

  beforeAll(async () => {
    fake = await startKubeApiServer({ token: TOKEN, now: () => NOW });
  });

  afterAll(async () => {
    await fake.stop();
  });

  beforeEach(() => {
    api = new ClientNodeClusterApi({
      kubeConfig: fake.kubeConfig(TOKEN),
      now: () => NOW,
    });
  });

  afterEach(() => {
    fake.token = TOKEN;
    fake.nodes.clear();
    fake.pods.clear();
    fake.services.clear();
    fake.events.length = 0;
    fake.requests.length = 0;
  });

  describe('getNode and getPod', () => {
    it('reads a node through the API', async () => {
      fake.addNode(node('n1', { role: 'game-server' }));

      const got = await api.getNode('n1');

      expect(got?.metadata?.name).toBe('n1');
      expect(got?.metadata?.labels).toEqual({ role: 'game-server' });
      expect(got?.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.1' }]);
      expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/api/v1/nodes/n1' });
    });

    it('answers undefined for a node that does not exist', async () => {
      await expect(api.getNode('missing')).resolves.toBeUndefined();
    });

    it('reads a pod by namespace and name, and answers undefined for a missing one', async () => {
      fake.addPod(pod('games', 'gs-1', 'n1', 'Running'));

      expect((await api.getPod('games', 'gs-1'))?.status?.phase).toBe('Running');
      await expect(api.getPod('other', 'gs-1')).resolves.toBeUndefined();
    });

    it('sends the bearer token of its kubeconfig', async () => {
      fake.addNode(node('n1'));

      await api.getNode('n1');

      expect(fake.requests.at(-1)?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    });

    it('throws a non-retryable 401 error when the token is refused', async () => {
      fake.token = 'another-token';

      const error = await api.getNode('n1').catch((e: unknown) => e);

      expect(error).toBeInstanceOf(KubernetesApiError);
      expect(error).toMatchObject({ statusCode: 401, reason: 'Unauthorized', retryable: false });
    });

    it('throws a retryable error for a server failure', async () => {
      fake.failNext({ method: 'GET', path: '/api/v1/nodes/n1', status: 503 });

      const error = await api.getNode('n1').catch((e: unknown) => e);

      expect(error).toBeInstanceOf(KubernetesApiError);
      expect(error).toMatchObject({
        statusCode: 503,
        reason: 'ServiceUnavailable',
        retryable: true,
      });
    });
  });

  describe('lists', () => {
    it('pages through nodes with limit and continue, in name order', async () => {
      for (const name of ['n5', 'n3', 'n1', 'n4', 'n2']) fake.addNode(node(name));

      const names = (await collect(api.listNodes({ pageSize: 2 }))).map((n) => n.metadata?.name);

      expect(names).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
      const lists = fake.requests.filter((r) => r.path === '/api/v1/nodes');
      expect(lists.map((r) => r.query.limit)).toEqual(['2', '2', '2']);
      expect(lists[0]?.query.continue).toBeUndefined();
      expect(lists[1]?.query.continue).toEqual(expect.any(String));
      expect(lists[2]?.query.continue).toEqual(expect.any(String));
    });

    it('asks for pages of 500 when no page size is given', async () => {
      fake.addService({ metadata: { namespace: 'games', name: 'lobby' }, spec: {} });

      const services = await collect(api.listServices());

      expect(services.map((s) => s.metadata?.name)).toEqual(['lobby']);
      expect(fake.requests.at(-1)).toMatchObject({
        path: '/api/v1/services',
        query: { limit: '500' },
      });
    });

    it('filters nodes by an equality label selector', async () => {
      fake.addNode(node('a', { role: 'game-server', zone: 'z1' }));
      fake.addNode(node('b', { role: 'game-server', zone: 'z2' }));
      fake.addNode(node('c', { role: 'system' }));

      const gameServers = await collect(api.listNodes({ labelSelector: 'role=game-server' }));
      const inZone = await collect(
        api.listNodes({ labelSelector: 'role=game-server,zone=z2', pageSize: 1 }),
      );

      expect(gameServers.map((n) => n.metadata?.name)).toEqual(['a', 'b']);
      expect(inZone.map((n) => n.metadata?.name)).toEqual(['b']);
      expect(fake.requests.at(-1)?.query.labelSelector).toBe('role=game-server,zone=z2');
    });

    it('filters pods of all namespaces by node and phase field selectors', async () => {
      fake.addPod(pod('games', 'gs-1', 'n1', 'Running', { 'berth.dev/game-server': 'true' }));
      fake.addPod(pod('games', 'gs-2', 'n1', 'Succeeded', { 'berth.dev/game-server': 'true' }));
      fake.addPod(pod('kube-system', 'dns', 'n1', 'Running'));
      fake.addPod(pod('games', 'gs-3', 'n2', 'Running', { 'berth.dev/game-server': 'true' }));
      fake.addPod(pod('games', 'gs-4', undefined, 'Pending', { 'berth.dev/game-server': 'true' }));

      const onN1 = await collect(
        api.listPods({ fieldSelector: 'spec.nodeName=n1,status.phase!=Succeeded', pageSize: 1 }),
      );
      const gameServersOnN1 = await collect(
        api.listPods({
          fieldSelector: 'spec.nodeName=n1',
          labelSelector: 'berth.dev/game-server=true',
        }),
      );
      const unscheduled = await collect(api.listPods({ fieldSelector: 'spec.nodeName=' }));

      expect(onN1.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)).toEqual([
        'games/gs-1',
        'kube-system/dns',
      ]);
      expect(gameServersOnN1.map((p) => p.metadata?.name)).toEqual(['gs-1', 'gs-2']);
      expect(unscheduled.map((p) => p.metadata?.name)).toEqual(['gs-4']);
    });

    it('throws a typed error, without restarting, when a continue token expires', async () => {
      for (const name of ['n1', 'n2', 'n3', 'n4']) fake.addNode(node(name));
      const seen: string[] = [];

      const listing = (async () => {
        for await (const n of api.listNodes({ pageSize: 2 })) {
          seen.push(n.metadata?.name ?? '');
          if (seen.length === 2) fake.expireContinueTokens();
        }
      })();

      await expect(listing).rejects.toBeInstanceOf(KubernetesListExpiredError);
      await expect(listing).rejects.toMatchObject({ statusCode: 410, reason: 'Expired' });
      expect(seen).toEqual(['n1', 'n2']);
      const lists = fake.requests.filter((r) => r.path === '/api/v1/nodes');
      expect(lists).toHaveLength(2);
      expect(lists[1]?.query.continue).toEqual(expect.any(String));
    });

    it('yields every node exactly once for any node set and page size', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/), { maxLength: 12 }),
          fc.integer({ min: 1, max: 5 }),
          async (names, pageSize) => {
            fake.nodes.clear();
            for (const name of names) fake.addNode(node(name));

            const listed = (await collect(api.listNodes({ pageSize }))).map(
              (n) => n.metadata?.name ?? '',
            );

            expect([...listed].sort()).toEqual([...names].sort());
            expect(new Set(listed).size).toBe(listed.length);
          },
        ),
        { numRuns: 25 },
      );
    });
  });

  describe('patchNode', () => {
    it('sends a JSON patch and answers the patched node', async () => {
      fake.addNode(node('n1'));

      const patched = await api.patchNode('n1', [
        { op: 'add', path: '/spec/unschedulable', value: true },
        { op: 'add', path: '/metadata/annotations', value: { 'berth.dev/cordoned-at': 'x' } },
      ]);

      expect(patched.spec?.unschedulable).toBe(true);
      expect(patched.metadata?.annotations).toEqual({ 'berth.dev/cordoned-at': 'x' });
      expect(fake.nodes.get('n1')?.spec?.unschedulable).toBe(true);
      const request = fake.requests.at(-1);
      expect(request?.method).toBe('PATCH');
      expect(request?.headers['content-type']).toMatch(/^application\/json-patch\+json/);
      expect(request?.body).toEqual([
        { op: 'add', path: '/spec/unschedulable', value: true },
        { op: 'add', path: '/metadata/annotations', value: { 'berth.dev/cordoned-at': 'x' } },
      ]);
    });

    it('throws a conflict and changes nothing when a test operation fails (apiserver 422)', async () => {
      fake.addNode({ ...node('n1'), spec: { unschedulable: true } });

      const error = await api
        .patchNode('n1', [
          { op: 'test', path: '/spec/unschedulable', value: false },
          { op: 'replace', path: '/spec/unschedulable', value: true },
          { op: 'add', path: '/metadata/labels/touched', value: 'yes' },
        ])
        .catch((e: unknown) => e);

      expect(error).toBeInstanceOf(KubernetesConflictError);
      expect(error).toMatchObject({ statusCode: 422, reason: 'Invalid' });
      expect(fake.nodes.get('n1')?.metadata?.labels).toEqual({});
    });

    it('throws a conflict when the resourceVersion it names is stale (apiserver 409)', async () => {
      const stored = fake.addNode(node('n1'));
      await api.patchNode('n1', [{ op: 'add', path: '/metadata/labels/a', value: '1' }]);

      const error = await api
        .patchNode('n1', [
          {
            op: 'replace',
            path: '/metadata/resourceVersion',
            value: stored.metadata?.resourceVersion,
          },
          { op: 'add', path: '/metadata/labels/b', value: '2' },
        ])
        .catch((e: unknown) => e);

      expect(error).toBeInstanceOf(KubernetesConflictError);
      expect(error).toMatchObject({ statusCode: 409, reason: 'Conflict' });
      expect(fake.nodes.get('n1')?.metadata?.labels).toEqual({ a: '1' });
    });

    it('throws not-found for a node that is gone', async () => {
      await expect(
        api.patchNode('gone', [{ op: 'add', path: '/spec/unschedulable', value: true }]),
      ).rejects.toBeInstanceOf(KubernetesNotFoundError);
    });
  });

  describe('scaleDeployment', () => {
    it("sets a Deployment's replicas with a JSON patch of its scale subresource", async () => {
      await api.scaleDeployment('berth-buffer', 'berth-buffer', 42);
      const request = fake.requests.at(-1);
      expect(request).toMatchObject({
        method: 'PATCH',
        path: '/apis/apps/v1/namespaces/berth-buffer/deployments/berth-buffer/scale',
        body: [{ op: 'replace', path: '/spec/replicas', value: 42 }],
      });
      expect(request?.headers['content-type']).toMatch(/^application\/json-patch\+json/);
      expect(fake.deploymentReplicas.get('berth-buffer/berth-buffer')).toBe(42);
    });
  });

  describe('deleteNode', () => {
    it('deletes the node, and a second delete of it succeeds', async () => {
      fake.addNode(node('n1'));

      await api.deleteNode('n1');
      await api.deleteNode('n1');

      expect(fake.nodes.has('n1')).toBe(false);
      const deletes = fake.requests.filter((r) => r.method === 'DELETE');
      expect(deletes.map((r) => r.path)).toEqual(['/api/v1/nodes/n1', '/api/v1/nodes/n1']);
    });

    it('throws when the apiserver refuses the delete', async () => {
      fake.addNode(node('n1'));
      fake.failNext({ method: 'DELETE', path: '/api/v1/nodes/n1', status: 403 });

      await expect(api.deleteNode('n1')).rejects.toMatchObject({
        statusCode: 403,
        reason: 'Forbidden',
      });
      expect(fake.nodes.has('n1')).toBe(true);
    });
  });

  describe('createEvent', () => {
    it('records a core/v1 event on a pod in the pod namespace', async () => {
      await api.createEvent({
        involvedObject: { kind: 'Pod', namespace: 'games', name: 'gs-1', uid: 'u-1' },
        type: 'Warning',
        reason: 'HostPortNotAllocated',
        message: 'host port 7001 of gs-1 was not recorded',
        component: 'berth-repair',
      });

      expect(fake.events).toHaveLength(1);
      expect(fake.events[0]).toMatchObject({
        metadata: { name: expect.stringMatching(/^gs-1\.[0-9a-f]{16}$/), namespace: 'games' },
        involvedObject: {
          apiVersion: 'v1',
          kind: 'Pod',
          namespace: 'games',
          name: 'gs-1',
          uid: 'u-1',
        },
        type: 'Warning',
        reason: 'HostPortNotAllocated',
        message: 'host port 7001 of gs-1 was not recorded',
        source: { component: 'berth-repair' },
        count: 1,
      });
      expect(Date.parse(String(fake.events[0]?.firstTimestamp))).toBe(NOW);
      expect(Date.parse(String(fake.events[0]?.lastTimestamp))).toBe(NOW);
      expect(fake.requests.at(-1)?.path).toBe('/api/v1/namespaces/games/events');
    });

    it('records an event on a node in the default namespace', async () => {
      await api.createEvent({
        involvedObject: { kind: 'Node', name: 'n1' },
        type: 'Normal',
        reason: 'Cordoned',
        message: 'too many free slots',
        component: 'berth-scale',
      });

      expect(fake.events[0]?.metadata).toMatchObject({
        name: expect.stringMatching(/^n1\.[0-9a-f]{16}$/),
        namespace: 'default',
      });
      expect(fake.events[0]?.involvedObject.namespace).toBeUndefined();
    });

    it('merges a repeated finding into one Event with a rising count, as client-go does', async () => {
      const event = {
        involvedObject: { kind: 'Service', namespace: 'games', name: 'lobby' },
        type: 'Warning',
        reason: 'ClusterIPOutOfRange',
        message: 'x',
        component: 'berth-repair',
      } as const;

      await api.createEvent(event);
      await api.createEvent(event);
      await api.createEvent(event);
      await api.createEvent({ ...event, message: 'another finding' });

      expect(fake.events.map((e) => [e.metadata.name, e.count, e.message])).toEqual([
        [expect.stringMatching(/^lobby\.[0-9a-f]{16}$/), 3, 'x'],
        [expect.stringMatching(/^lobby\.[0-9a-f]{16}$/), 1, 'another finding'],
      ]);
    });

    it('throws an invalid-object error when the apiserver rejects the event', async () => {
      fake.failNext({ method: 'POST', path: /\/events$/, status: 422 });

      await expect(
        api.createEvent({
          involvedObject: { kind: 'Node', name: 'n1' },
          type: 'Normal',
          reason: 'R',
          message: 'm',
          component: 'berth-scale',
        }),
      ).rejects.toBeInstanceOf(KubernetesInvalidError);
    });
  });

  it('throws an unreachable error when nothing answers', async () => {
    const gone = await startKubeApiServer();
    const kubeConfig = gone.kubeConfig();
    await gone.stop();
    const orphan = new ClientNodeClusterApi({ kubeConfig });

    const error = await orphan.getNode('n1').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(KubernetesUnreachableError);
    expect(error).toMatchObject({ statusCode: undefined, retryable: true });
  });

  it('gives up on a server that takes the connection and never answers, as unreachable', async () => {
    const silent = createServer(() => {
      // Holds every request open: a stuck proxy or a blackholed load balancer.
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'silent', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: TOKEN }],
      contexts: [{ name: 'silent', cluster: 'silent', user: 'u' }],
      currentContext: 'silent',
    });
    try {
      const stuck = new ClientNodeClusterApi({ kubeConfig, requestTimeoutMs: 300 });
      const error = await stuck.getNode('n1').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KubernetesUnreachableError);
      expect(String((error as Error).message)).toMatch(/get nodes\/n1 failed: no response/);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('translateKubernetesError', () => {
  const target = { verb: 'patch', resource: 'nodes/n1' };
  const status = (code: number, reason: string, causes?: unknown[]): string =>
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      code,
      reason,
      message: 'm',
      details: causes ? { causes } : {},
    });

  it('maps a cause-less 422 answering a JSON patch to a conflict', () => {
    const error = translateKubernetesError(
      new ApiException(422, 'x', status(422, 'Invalid'), {}),
      target,
      { jsonPatch: true },
    );

    expect(error).toBeInstanceOf(KubernetesConflictError);
    expect(error.cause).toBeInstanceOf(ApiException);
  });

  it('maps a 422 with field causes to an invalid-object error, even for a JSON patch', () => {
    const body = status(422, 'Invalid', [{ reason: 'FieldValueInvalid', field: 'spec.taints' }]);

    const error = translateKubernetesError(new ApiException(422, 'x', body, {}), target, {
      jsonPatch: true,
    });

    expect(error).toBeInstanceOf(KubernetesInvalidError);
    expect(error.status?.details?.causes).toHaveLength(1);
  });

  it('keeps status code and reason of other failures', () => {
    const error = translateKubernetesError(
      new ApiException(429, 'x', status(429, 'TooManyRequests'), {}),
      target,
    );

    expect(error).toMatchObject({ statusCode: 429, reason: 'TooManyRequests', retryable: true });
    expect(error.message).toContain('patch nodes/n1');
  });

  it('tolerates an error body that is not a Status', () => {
    const error = translateKubernetesError(new ApiException(502, 'x', '<html>', {}), target);

    expect(error).toMatchObject({ statusCode: 502, reason: 'Unknown', status: undefined });
  });
});

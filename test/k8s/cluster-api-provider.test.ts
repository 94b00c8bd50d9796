import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import type { ClusterApi } from '../../shared/k8s/cluster-api.js';
import {
  type ClusterApiProvider,
  ProvidedClusterApi,
} from '../../shared/k8s/cluster-api-provider.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';

/** Hands out the clients it is given, one per `get`, repeating the last. */
class SequenceProvider implements ClusterApiProvider {
  gets = 0;
  readonly #apis: ClusterApi[];
  constructor(...apis: ClusterApi[]) {
    this.#apis = apis;
  }
  async get(): Promise<ClusterApi> {
    const api = this.#apis[Math.min(this.gets, this.#apis.length - 1)];
    this.gets++;
    if (!api) throw new Error('no client');
    return api;
  }
}

describe('ProvidedClusterApi', () => {
  it('asks the provider for the current client on every call', async () => {
    const first = new FakeClusterApi().withNodes({ metadata: { name: 'old' } });
    const second = new FakeClusterApi().withNodes({ metadata: { name: 'new' } });
    const api = new ProvidedClusterApi(new SequenceProvider(first, second));

    expect((await api.getNode('old'))?.metadata?.name).toBe('old');
    expect((await api.getNode('new'))?.metadata?.name).toBe('new');
    expect(first.callsOf('getNode')).toHaveLength(1);
    expect(second.callsOf('getNode')).toHaveLength(1);
  });

  it('serves a whole list from one client', async () => {
    const first = new FakeClusterApi().withNodes(
      { metadata: { name: 'a' } },
      { metadata: { name: 'b' } },
    );
    const provider = new SequenceProvider(first, new FakeClusterApi());
    const api = new ProvidedClusterApi(provider);

    const names: string[] = [];
    for await (const node of api.listNodes({ labelSelector: '' }))
      names.push(node.metadata?.name ?? '');

    expect(names).toEqual(['a', 'b']);
    expect(provider.gets).toBe(1);
  });

  it('passes every call through with its arguments', async () => {
    const cluster = new FakeClusterApi()
      .withNodes({ metadata: { name: 'n1' }, spec: {} })
      .withPods({ metadata: { namespace: 'games', name: 'gs' } });
    const api = new ProvidedClusterApi(new SequenceProvider(cluster));
    const event = {
      involvedObject: { kind: 'Node', name: 'n1' },
      type: 'Normal',
      reason: 'R',
      message: 'm',
      component: 'c',
    } as const;

    await api.getPod('games', 'gs');
    for await (const _ of api.listPods({ fieldSelector: 'spec.nodeName=n1' })) {
      // drain
    }
    for await (const _ of api.listServices()) {
      // drain
    }
    await api.patchNode('n1', [{ op: 'add', path: '/spec/unschedulable', value: true }]);
    await api.createEvent(event);
    await api.deleteNode('n1');

    expect(cluster.calls.map((c) => c.method)).toEqual([
      'getPod',
      'listPods',
      'listServices',
      'patchNode',
      'createEvent',
      'deleteNode',
    ]);
    expect(cluster.events).toEqual([event]);
    expect(cluster.nodes.size).toBe(0);
  });
});

/** Clients of the loopback fake, each with the next token of a list; counts invalidations. */
class TokenProvider implements ClusterApiProvider {
  invalidations = 0;
  #next = 0;
  #current: ClusterApi | undefined;
  constructor(
    readonly fake: KubeApiServer,
    readonly tokens: readonly string[],
  ) {}
  async get(): Promise<ClusterApi> {
    if (this.#current) return this.#current;
    const token = this.tokens[Math.min(this.#next, this.tokens.length - 1)] ?? '';
    this.#next++;
    this.#current = new ClientNodeClusterApi({ kubeConfig: this.fake.kubeConfig(token) });
    return this.#current;
  }
  invalidate(): void {
    this.invalidations++;
    this.#current = undefined;
  }
}

describe('ProvidedClusterApi on a refused token', () => {
  let fake: KubeApiServer;

  beforeAll(async () => {
    fake = await startKubeApiServer({ token: 'fresh' });
    fake.addNode({ metadata: { name: 'n1' }, spec: {} });
  });

  afterAll(async () => {
    await fake.stop();
  });

  it('invalidates the client and retries once with a new token after a 401', async () => {
    const provider = new TokenProvider(fake, ['stale', 'fresh']);
    const api = new ProvidedClusterApi(provider);

    expect((await api.getNode('n1'))?.metadata?.name).toBe('n1');
    await api.patchNode('n1', [{ op: 'add', path: '/spec/unschedulable', value: true }]);

    expect(provider.invalidations).toBe(1);
    expect(fake.nodes.get('n1')?.spec?.unschedulable).toBe(true);
  });

  it('throws the 401 when the new token is refused too, after one retry', async () => {
    const provider = new TokenProvider(fake, ['stale', 'also-stale', 'fresh']);
    const api = new ProvidedClusterApi(provider);

    await expect(api.getNode('n1')).rejects.toMatchObject({ statusCode: 401 });
    expect(provider.invalidations).toBe(1);
  });

  it('does not retry a list that is refused', async () => {
    const provider = new TokenProvider(fake, ['stale', 'fresh']);
    const api = new ProvidedClusterApi(provider);

    const drain = async () => {
      for await (const _ of api.listNodes()) {
        // drain
      }
    };
    await expect(drain()).rejects.toMatchObject({ statusCode: 401 });
    expect(provider.invalidations).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import type { ClusterApi } from '../../shared/k8s/cluster-api.js';
import {
  type ClusterApiProvider,
  ProvidedClusterApi,
} from '../../shared/k8s/cluster-api-provider.js';
import { FakeClusterApi } from '../fakes/cluster-api.js';

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

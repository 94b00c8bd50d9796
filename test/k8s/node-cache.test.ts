import type { V1Node } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KubernetesApiError } from '../../shared/k8s/errors.js';
import {
  NODE_CACHE_MISS_TTL_MS,
  NODE_CACHE_TTL_MS,
  NodeCache,
} from '../../shared/k8s/node-cache.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';

const node = (name: string, address = '10.0.0.1'): V1Node => ({
  metadata: { name },
  status: { addresses: [{ type: 'InternalIP', address }] },
});

function setup(options: { maxEntries?: number } = {}) {
  let now = 1_000_000;
  const cluster = new FakeClusterApi().withNodes(node('n1'), node('n2'));
  const cache = new NodeCache({ source: cluster, now: () => now, ...options });
  return {
    cluster,
    cache,
    reads: () => cluster.callsOf('getNode').length,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('NodeCache', () => {
  it('serves a repeated read from the cache within the TTL', async () => {
    const { cache, reads, advance } = setup();

    await cache.getNode('n1');
    advance(NODE_CACHE_TTL_MS - 1);
    const again = await cache.getNode('n1');

    expect(again?.metadata?.name).toBe('n1');
    expect(reads()).toBe(1);
  });

  it('reads the node again once the TTL has passed', async () => {
    const { cluster, cache, reads, advance } = setup();

    await cache.getNode('n1');
    cluster.withNodes(node('n1', '10.0.0.9'));
    advance(NODE_CACHE_TTL_MS);
    const fresh = await cache.getNode('n1');

    expect(fresh?.status?.addresses?.[0]?.address).toBe('10.0.0.9');
    expect(reads()).toBe(2);
  });

  it('caches a missing node only briefly', async () => {
    const { cluster, cache, reads, advance } = setup();

    expect(await cache.getNode('new')).toBeUndefined();
    advance(NODE_CACHE_MISS_TTL_MS - 1);
    expect(await cache.getNode('new')).toBeUndefined();
    expect(reads()).toBe(1);

    cluster.withNodes(node('new'));
    advance(1);
    expect((await cache.getNode('new'))?.metadata?.name).toBe('new');
    expect(reads()).toBe(2);
  });

  it('shares one read among concurrent callers of the same node', async () => {
    const { cache, reads } = setup();

    const [a, b, c] = await Promise.all([
      cache.getNode('n1'),
      cache.getNode('n1'),
      cache.getNode('n1'),
    ]);

    expect(reads()).toBe(1);
    expect([a, b, c].map((n) => n?.metadata?.name)).toEqual(['n1', 'n1', 'n1']);
  });

  it('does not cache a failed read', async () => {
    const { cluster, cache, reads } = setup();
    cluster.failNext(
      'getNode',
      new KubernetesApiError({ verb: 'get', resource: 'nodes/n1' }, 503, undefined),
    );

    await expect(cache.getNode('n1')).rejects.toBeInstanceOf(KubernetesApiError);
    expect((await cache.getNode('n1'))?.metadata?.name).toBe('n1');
    expect(reads()).toBe(2);
  });

  it('reads again after invalidate, and a read under way then does not fill the cache', async () => {
    const { cluster, cache, reads } = setup();

    const early = cache.getNode('n1');
    cache.invalidate('n1');
    cluster.withNodes(node('n1', '10.0.0.7'));
    await early;
    const after = await cache.getNode('n1');

    expect(after?.status?.addresses?.[0]?.address).toBe('10.0.0.7');
    expect(reads()).toBe(2);
  });

  it('evicts the least recently used node when full', async () => {
    const { cluster, cache, reads } = setup({ maxEntries: 2 });
    cluster.withNodes(node('n3'));

    await cache.getNode('n1');
    await cache.getNode('n2');
    await cache.getNode('n1');
    await cache.getNode('n3');
    await cache.getNode('n1');
    expect(reads()).toBe(3);

    await cache.getNode('n2');
    expect(reads()).toBe(4);
  });

  it('never holds more entries than its bound', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), { maxLength: 40 }),
        async (maxEntries, names) => {
          const cluster = new FakeClusterApi().withNodes(node('a'), node('c'), node('e'));
          const cache = new NodeCache({ source: cluster, now: () => 0, maxEntries });
          for (const name of names) {
            await cache.getNode(name);
            expect(cache.size).toBeLessThanOrEqual(maxEntries);
          }
        },
      ),
    );
  });
});

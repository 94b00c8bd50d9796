/**
 * A re-invocation keeps its allocation (contract section 11): the apiserver calls berth's
 * IfNeeded webhooks again after the injector changed the object, with a new request uid and,
 * for a `generateName` object, still no name. The same object gets no second allocation and
 * no 409, named or not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOCATION_ID_ANNOTATION, HOST_PORTS_ANNOTATION } from '../../shared/vocabulary/labels.js';
import {
  type ChainedCluster,
  INJECTED_LABEL,
  startChainedCluster,
} from '../support/chained-cluster.js';
import { gamePod, rangeUse, records, service } from './objects.js';

let cluster: ChainedCluster;

beforeAll(async () => {
  cluster = await startChainedCluster({ hostPortQuotas: { games: 4 } });
});

afterAll(async () => {
  await cluster?.close();
});

describe('a webhook re-invocation', () => {
  it('keeps a generateName pod to one allocation, one use and one quota unit', async () => {
    const created = await cluster.request(
      'POST',
      '/api/v1/namespaces/games/pods',
      gamePod({ generateName: 'lobby-' }),
    );
    expect(created.status).toBe(201);
    const stored = created.body;
    expect(stored.metadata.labels[INJECTED_LABEL]).toBe('true');
    expect(stored.metadata.name).toMatch(/^lobby-[a-z0-9]{5}$/);
    const id = stored.metadata.annotations[ALLOCATION_ID_ANNOTATION];
    const held = JSON.parse(stored.metadata.annotations[HOST_PORTS_ANNOTATION]);
    expect(await records(cluster.runtime)).toEqual([id]);
    expect(await rangeUse(cluster.runtime, 'default')).toBe(1);
    expect(await cluster.runtime.hostPortStore.namespaceUse('games')).toBe(1);
    // The container carries the one port berth recorded.
    expect(stored.spec.containers[0].ports).toEqual([
      expect.objectContaining({ name: 'game', hostPort: held.game }),
    ]);
  });

  it('keeps a named pod to one allocation too', async () => {
    const before = (await records(cluster.runtime)).length;
    const created = await cluster.request(
      'POST',
      '/api/v1/namespaces/games/pods',
      gamePod({ name: 'arena-1' }),
    );
    expect(created.status).toBe(201);
    expect((await records(cluster.runtime)).length).toBe(before + 1);
  });

  it('lets a generateName Service keep its cluster IP (no 409 for its own values)', async () => {
    const created = await cluster.request(
      'POST',
      '/api/v1/namespaces/games/services',
      service({ generateName: 'lobby-' }, 'NodePort'),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.metadata.labels[INJECTED_LABEL]).toBe('true');
    expect(created.body.spec.clusterIP).toMatch(/^10\.100\./);
    expect(await rangeUse(cluster.runtime, '10.100.0.0/16')).toBe(1);
    expect(await rangeUse(cluster.runtime, '30000-32767')).toBe(1);
  });

  it('gives a copy of a stored generateName pod a fresh allocation', async () => {
    const original = await cluster.request(
      'POST',
      '/api/v1/namespaces/games/pods',
      gamePod({ generateName: 'copied-' }),
    );
    const { name: _name, uid: _uid, ...metadata } = original.body.metadata;
    const copy = await cluster.request('POST', '/api/v1/namespaces/games/pods', {
      ...original.body,
      metadata,
    });
    expect(copy.status).toBe(201);
    const id = (pod: { metadata: { annotations: Record<string, string> } }) =>
      pod.metadata.annotations[ALLOCATION_ID_ANNOTATION];
    expect(id(copy.body)).not.toBe(id(original.body));
    expect(await records(cluster.runtime)).toContain(id(copy.body));
  });

  it('refuses a copy of a stored generateName Service its values (409)', async () => {
    const original = await cluster.request(
      'POST',
      '/api/v1/namespaces/games/services',
      service({ generateName: 'copied-' }),
    );
    expect(original.status).toBe(201);
    const { name: _name, uid: _uid, ...metadata } = original.body.metadata;
    const copy = await cluster.request('POST', '/api/v1/namespaces/games/services', {
      ...original.body,
      metadata,
    });
    expect(copy.status).toBe(409);
    expect(copy.body.message).toMatch(/provided IP is already allocated/);
  });
});

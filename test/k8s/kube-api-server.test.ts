/** The loopback fake's own behaviour, where it mimics the apiserver, checked over raw HTTP. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';

describe('startKubeApiServer', () => {
  let fake: KubeApiServer;

  beforeAll(async () => {
    fake = await startKubeApiServer();
  });

  afterAll(async () => {
    await fake.stop();
  });

  afterEach(() => {
    fake.nodes.clear();
    fake.pods.clear();
    fake.requests.length = 0;
  });

  const call = async (path: string, init?: RequestInit) => {
    const response = await fetch(`${fake.url}${path}`, init);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('answers a missing node with a NotFound Status naming it', async () => {
    expect(await call('/api/v1/nodes/ghost')).toEqual({
      status: 404,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'nodes "ghost" not found',
        reason: 'NotFound',
        details: { name: 'ghost', kind: 'nodes' },
        code: 404,
      },
    });
  });

  it('refuses a field selector the apiserver does not support', async () => {
    const { status, body } = await call('/api/v1/nodes?fieldSelector=spec.nodeName%3Dn1');

    expect(status).toBe(400);
    expect(body).toMatchObject({
      reason: 'BadRequest',
      message: 'field label not supported: spec.nodeName',
    });
  });

  it('counts the remaining items only for lists without selectors', async () => {
    for (const name of ['a', 'b', 'c']) fake.addNode({ metadata: { name, labels: { x: '1' } } });

    const plain = await call('/api/v1/nodes?limit=1');
    const selected = await call('/api/v1/nodes?limit=1&labelSelector=x%3D1');

    expect(plain.body.metadata).toMatchObject({
      remainingItemCount: 2,
      continue: expect.any(String),
    });
    expect(selected.body.metadata).not.toHaveProperty('remainingItemCount');
  });

  it('rejects a merge patch body sent as a JSON patch content type', async () => {
    fake.addNode({ metadata: { name: 'n1' } });

    const { status } = await call('/api/v1/nodes/n1', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json-patch+json' },
      body: JSON.stringify({ spec: { unschedulable: true } }),
    });

    expect(status).toBe(400);
  });

  it('answers a failed test operation with the generic 422 Invalid Status', async () => {
    fake.addNode({ metadata: { name: 'n1' }, spec: {} });

    const { status, body } = await call('/api/v1/nodes/n1', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json-patch+json' },
      body: JSON.stringify([{ op: 'test', path: '/spec/unschedulable', value: true }]),
    });

    expect(status).toBe(422);
    expect(body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'the server rejected our request due to an error in our request',
      reason: 'Invalid',
      details: {},
      code: 422,
    });
  });

  it('refuses an event whose involved object lives in another namespace', async () => {
    const { status, body } = await call('/api/v1/namespaces/games/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        metadata: { name: 'e1' },
        involvedObject: { kind: 'Pod', namespace: 'other', name: 'p' },
      }),
    });

    expect(status).toBe(422);
    expect(body).toMatchObject({
      reason: 'Invalid',
      details: { causes: [{ field: 'involvedObject.namespace' }] },
    });
  });

  it('fails exactly the next N matching requests', async () => {
    fake.addNode({ metadata: { name: 'n1' } });
    fake.failNext({ path: '/api/v1/nodes/n1', status: 500, times: 2 });

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call('/api/v1/nodes/n1')).status);

    expect(statuses).toEqual([500, 500, 200]);
  });
});

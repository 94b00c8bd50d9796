import { describe, expect, it } from 'vitest';
import { createHttpApi } from '../../shared/http/api.js';
import { eniWorld } from '../../sim/eni-world.js';
import { nodeIpApi } from '../../sim/node-ip-server.js';

function api() {
  const world = eniWorld();
  world.addNode('gs-1', 'c5.large');
  const handle = nodeIpApi(world);
  const call = async (method: string, target: string, body?: unknown) => {
    const [path = '', search = ''] = target.split('?', 2);
    const response = await handle({
      method,
      path,
      query: Object.fromEntries(new URLSearchParams(search)),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: response.statusCode,
      body: JSON.parse(response.body),
      retryAfter: response.headers['retry-after'],
    };
  };
  return { world, call };
}

describe('node IP routes', () => {
  it('assigns an IP with its ENI, subnet and gateway, and answers a repeated request the same', async () => {
    const { call } = api();
    const first = await call('POST', '/v1/nodes/gs-1/ips', { namespace: 'games', pod: 'match-1' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      ip: expect.stringMatching(/^10\.0\.0\.\d+$/),
      eniId: expect.stringMatching(/^eni-/),
      subnetCidr: '10.0.0.0/24',
      gateway: '10.0.0.1',
      // The primary ENI: berth assigns there first.
      deviceIndex: 0,
      macAddress: expect.stringMatching(/^0a(:[0-9a-f]{2}){5}$/),
    });
    const lookUp = '/v1/nodes/gs-1/ips?namespace=games&pod=match-1';
    expect(await call('GET', lookUp)).toEqual(first);
    expect(
      await call('POST', '/v1/nodes/gs-1/ips', { namespace: 'games', pod: 'match-1' }),
    ).toEqual(first);
    const release = `/v1/nodes/gs-1/ips/${first.body.ip}?namespace=games&pod=match-1`;
    const released = await call('DELETE', release);
    expect(released).toEqual({ status: 200, body: { released: true } });
    expect((await call('DELETE', release)).body).toEqual({ released: false });
    expect((await call('GET', lookUp)).status).toBe(404);
    expect((await call('GET', '/v1/nodes/gs-1/ips?pod=match-1')).status).toBe(400);
  });

  it('answers 409 to a release for a pod or container that does not hold the IP, and 400 without a holder', async () => {
    const { call } = api();
    const held = await call('POST', '/v1/nodes/gs-1/ips', {
      namespace: 'games',
      pod: 'match-2',
      containerId: 'c2',
    });
    const base = `/v1/nodes/gs-1/ips/${held.body.ip}`;
    const other = await call('DELETE', `${base}?namespace=games&pod=match-1`);
    expect(other.status).toBe(409);
    expect(other.body.error).toMatch(/held by games\/match-2/);
    expect(
      (await call('DELETE', `${base}?namespace=games&pod=match-2&containerId=c1`)).status,
    ).toBe(409);
    const missing = await call('DELETE', base);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/namespace: .*pod: /);
    expect(
      (await call('DELETE', `${base}?namespace=games&pod=match-2&containerId=c2`)).body,
    ).toEqual({ released: true });
  });

  it("answers 429 with Retry-After, not 503, when the pod's own sandboxes race for its address", async () => {
    const { call } = api();
    const ips = '/v1/nodes/gs-1/ips';
    const first = await call('POST', ips, {
      namespace: 'games',
      pod: 'match-3',
      containerId: 'c1',
    });
    // Two new sandboxes of the pod at once: each takes the address over from c1; one wins.
    const [a, b] = await Promise.all(
      ['c2', 'c3'].map((containerId) =>
        call('POST', ips, { namespace: 'games', pod: 'match-3', containerId }),
      ),
    );
    const answers = [a, b].map((answer) => answer?.status).sort();
    expect(answers).toEqual([200, 429]);
    const lost = [a, b].find((answer) => answer?.status === 429);
    expect(lost?.retryAfter).toBe('1');
    expect(lost?.body.error).toMatch(
      new RegExp(`${first.body.ip} changed while it was handed over`),
    );
  });

  it('answers a bad body 400, an unknown node 404, and a wrong method 405', async () => {
    const { call } = api();
    const bad = await call('POST', '/v1/nodes/gs-1/ips', { namespace: 'games' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/pod/);
    expect(
      (await call('POST', '/v1/nodes/nope/ips', { namespace: 'games', pod: 'p' })).status,
    ).toBe(404);
    expect((await call('PUT', '/v1/nodes/gs-1/ips')).status).toBe(405);
  });

  it('answers a path that is not valid percent-encoding 400, never 500', async () => {
    const { call } = api();
    for (const [method, target] of [
      ['POST', '/v1/nodes/%ZZ/ips'],
      ['DELETE', '/v1/nodes/%ZZ/ips/10.0.0.1?namespace=g&pod=p'],
      ['DELETE', '/v1/nodes/gs-1/ips/%E0?namespace=g&pod=p'],
    ] as const) {
      const answer = await call(method, target, { namespace: 'g', pod: 'p' });
      expect(answer.status, target).toBe(400);
      expect(answer.body.error).toMatch(/not valid percent-encoding/);
    }
  });

  it('answers 503 where ENI management is not enabled', async () => {
    const handle = createHttpApi({ healthy: async () => true });
    const response = await handle({ method: 'POST', path: '/v1/nodes/gs-1/ips', body: '{}' });
    expect(response.statusCode).toBe(503);
    expect(JSON.parse(response.body).error).toMatch(/needs a cluster/);
  });
});

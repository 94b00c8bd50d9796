import { describe, expect, it } from 'vitest';
import { nodeIpFault } from '../../shared/app/eni-pass.js';
import { handleAssignIp, handleReleaseIp } from '../../shared/eni/service.js';
import { createHttpApi } from '../../shared/http/api.js';
import { eniWorld } from '../eni/harness.js';

function api() {
  const world = eniWorld();
  world.addNode('gs-1', 'c5.large');
  const handle = createHttpApi({
    healthy: async () => true,
    nodeIps: {
      assign: (node, body) => handleAssignIp(world.deps, node, body),
      release: (node, ip) => handleReleaseIp(world.deps, node, ip),
    },
    classify: nodeIpFault,
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await handle({
      method,
      path,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.statusCode, body: JSON.parse(response.body) };
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
    });
    expect(
      await call('POST', '/v1/nodes/gs-1/ips', { namespace: 'games', pod: 'match-1' }),
    ).toEqual(first);
    const released = await call('DELETE', `/v1/nodes/gs-1/ips/${first.body.ip}`);
    expect(released).toEqual({ status: 200, body: { released: true } });
    expect((await call('DELETE', `/v1/nodes/gs-1/ips/${first.body.ip}`)).body).toEqual({
      released: false,
    });
  });

  it('answers a bad body 400, an unknown node 404, and a wrong method 405', async () => {
    const { call } = api();
    const bad = await call('POST', '/v1/nodes/gs-1/ips', { namespace: 'games' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/pod/);
    expect(
      (await call('POST', '/v1/nodes/nope/ips', { namespace: 'games', pod: 'p' })).status,
    ).toBe(404);
    expect((await call('GET', '/v1/nodes/gs-1/ips')).status).toBe(405);
  });

  it('answers 503 where ENI management is not enabled', async () => {
    const handle = createHttpApi({ healthy: async () => true });
    const response = await handle({ method: 'POST', path: '/v1/nodes/gs-1/ips', body: '{}' });
    expect(response.statusCode).toBe(503);
    expect(JSON.parse(response.body).error).toMatch(/needs a cluster/);
  });
});

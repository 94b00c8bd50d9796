/**
 * Repair never frees a value between admission and commit (contract sections 6 and 11): while a
 * Service's CREATE is still in the admission chain (a slow webhook after berth's), repair passes
 * with `leakGracePasses: 1` find its cluster IP held by no stored Service, and must leave it, so
 * that another Service asking for the same IP is refused and the first one is stored with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChainedCluster,
  SLOW_LABEL,
  SLOW_MS,
  startChainedCluster,
} from '../support/chained-cluster.js';
import { service } from './objects.js';

let cluster: ChainedCluster;
const SERVICES = '/api/v1/namespaces/games/services';

beforeAll(async () => {
  cluster = await startChainedCluster({ repair: { intervalSeconds: 1, leakGracePasses: 1 } });
});

afterAll(async () => {
  await cluster?.close();
});

const asking = (name: string, labels: Record<string, string> = {}) => {
  const object = service({ name, labels }, 'NodePort');
  return {
    ...object,
    spec: { ...object.spec, clusterIP: '10.100.7.7', ports: [{ port: 80, nodePort: 31_007 }] },
  };
};

describe('repair between admission and commit', () => {
  it('leaves a value whose CREATE is still on its way, so no second Service gets it', async () => {
    const slow = cluster.request('POST', SERVICES, asking('first', { [SLOW_LABEL]: 'true' }));
    // berth has answered; the injector after it holds the request.
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS / 3));
    for (let pass = 0; pass < 3; pass++) await cluster.repairPass();
    const second = await cluster.request('POST', SERVICES, asking('second'));
    expect(second.status, JSON.stringify(second.body)).toBe(409);
    expect(second.body.message).toMatch(/provided IP is already allocated/);
    const first = await slow;
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.spec.clusterIP).toBe('10.100.7.7');
  });
});

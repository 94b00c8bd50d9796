import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { RepairIncompleteError } from '../../shared/repair/errors.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { sid } from '../support/shaped-id.js';
import { gamePod, held, IPS, NOW, repairEnv, service, svcOwner } from './support.js';

describe('runRepairPass through the real client and a paging API server', () => {
  let fake: KubeApiServer;

  beforeAll(async () => {
    fake = await startKubeApiServer({ now: () => NOW });
  });

  afterAll(async () => {
    await fake.stop();
  });

  const clusterApi = () =>
    new ClientNodeClusterApi({
      kubeConfig: fake.kubeConfig(),
      now: () => NOW,
    });

  it('reads every Service and Pod page by page and posts its Events', async () => {
    const env = await repairEnv();
    for (let i = 0; i < 7; i++) {
      fake.addService(service(`s${i}`, { id: sid(`sid${i}`), clusterIPs: [`10.100.0.${10 + i}`] }));
    }
    for (let i = 0; i < 5; i++) {
      fake.addPod(gamePod(`gs${i}`, sid(`pid${i}`), [{ name: 'game', hostPort: 7000 + i }]));
    }
    // A pod that is gone in the cluster but recorded, and one listed on the last page.
    await env.commitPod('gone', 'default', 'gs-gone', [held('game', 7090)]);
    await env.allocator.assign(sid('sid6'), svcOwner('s6'), [
      { slot: 'clusterIP/IPv4', range: IPS, value: '10.100.0.16' },
    ]);

    const summary = await env.pass({ cluster: clusterApi() }, { pageSize: 2, leakGracePasses: 1 });

    expect(summary.findings).toEqual({
      ClusterIPNotAllocated: 6,
      HostPortNotAllocated: 5,
      HostPortLeaked: 1,
    });
    const lists = (path: string) =>
      fake.requests.filter((r) => r.method === 'GET' && r.path === path);
    const servicePages = lists('/api/v1/services');
    const podPages = lists('/api/v1/pods');
    expect(servicePages.map((r) => r.query.limit)).toEqual(['2', '2', '2', '2']);
    expect(servicePages.filter((r) => r.query.continue)).toHaveLength(3);
    expect(podPages).toHaveLength(3);
    expect(fake.events.map((e) => e.reason).sort()).toEqual([
      ...Array(6).fill('ClusterIPNotAllocated'),
      ...Array(5).fill('HostPortNotAllocated'),
    ]);
    expect(fake.events[0]?.source?.component).toBe('berth-repair');
  });

  it('fails the pass and advances no counter when a page cannot be read', async () => {
    const env = await repairEnv();
    fake.services.clear();
    fake.pods.clear();
    for (let i = 0; i < 5; i++) fake.addService(service(`t${i}`, { id: sid(`tid${i}`) }));
    await env.allocator.assign(sid('leak'), svcOwner('l'), [
      { slot: 'clusterIP/IPv4', range: IPS, value: '10.100.0.99' },
    ]);
    fake.failNext({ method: 'GET', path: '/api/v1/services', status: 500, times: 1 });
    // First the API answers 500; then a pass gets a page in and its continue token expires.
    await expect(env.pass({ cluster: clusterApi() }, { pageSize: 2 })).rejects.toBeInstanceOf(
      RepairIncompleteError,
    );
    const cluster = clusterApi();
    const pages = cluster.listServices.bind(cluster);
    let read = 0;
    cluster.listServices = async function* (options) {
      for await (const item of pages(options)) {
        if (++read === 2) fake.expireContinueTokens();
        yield item;
      }
    };
    await expect(env.pass({ cluster }, { pageSize: 2 })).rejects.toMatchObject({ stage: 'list' });
    expect(await env.ledger.list()).toEqual(new Map());
    expect(await env.holderOf(IPS, '10.100.0.99')).toBe(sid('leak'));
  });
});

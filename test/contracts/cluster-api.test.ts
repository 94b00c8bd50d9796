/** The in-memory ClusterApi and the client-node adapter over the loopback apiserver, held to one contract. */
import { describe, expect, it } from 'vitest';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { clusterApiContract } from './cluster-api.contract.js';

clusterApiContract('FakeClusterApi', async () => {
  const api = new FakeClusterApi();
  return {
    api,
    seed: async ({ nodes = [], pods = [], gameServers = [] }) => {
      api
        .withNodes(...nodes)
        .withPods(...pods)
        .withGameServers(...gameServers);
    },
    stop: async () => {},
  };
});

clusterApiContract('ClientNodeClusterApi over the loopback apiserver', async () => {
  const server = await startKubeApiServer({ agones: true });
  return {
    api: new ClientNodeClusterApi({ kubeConfig: server.kubeConfig() }),
    seed: async ({ nodes = [], pods = [], gameServers = [] }) => {
      for (const node of nodes) server.addNode(node);
      for (const pod of pods) server.addPod(pod);
      for (const gameServer of gameServers) server.addGameServer(gameServer);
    },
    stop: () => server.stop(),
  };
});

describe('FakeClusterApi', () => {
  it('throws a queued error once, for its method or its object only', async () => {
    const cluster = new FakeClusterApi().withNodes({ metadata: { name: 'n1' }, spec: {} });
    cluster.failNext('getNode', new Error('boom'));
    await expect(cluster.getNode('n1')).rejects.toThrow('boom');
    expect((await cluster.getNode('n1'))?.metadata?.name).toBe('n1');
    cluster.failNext('deleteNode:n2', new Error('reset'));
    await cluster.deleteNode('n1');
    await expect(cluster.deleteNode('n2')).rejects.toThrow('reset');
  });
});

/**
 * The calls that move and protect game servers, through the real `@kubernetes/client-node`
 * adapter against the loopback Kubernetes API: the Eviction subresource with its
 * PodDisruptionBudget check, delete preconditions, Agones GameServers (present or not), pod
 * patches.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { KubernetesConflictError } from '../../shared/k8s/errors.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { agonesServer, pod, statefulServer } from '../scale/builders.js';

let fake: KubeApiServer;

async function start(agones: boolean): Promise<ClientNodeClusterApi> {
  fake = await startKubeApiServer({ agones });
  return new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig() });
}

afterEach(async () => {
  await fake.stop();
});

describe('ClientNodeClusterApi.evictPod', () => {
  let cluster: ClientNodeClusterApi;
  beforeEach(async () => {
    cluster = await start(false);
  });

  it('posts a policy/v1 Eviction and the pod goes', async () => {
    fake.addPod(statefulServer('r1', 'n1', 'ready'));
    expect(await cluster.evictPod('games', 'r1')).toBe('evicted');
    expect(fake.pods.has('games/r1')).toBe(false);
    const request = fake.requests.find((r) => r.method === 'POST');
    expect(request?.path).toBe('/api/v1/namespaces/games/pods/r1/eviction');
    expect(request?.body).toMatchObject({ apiVersion: 'policy/v1', kind: 'Eviction' });
  });

  it('answers refused when the PodDisruptionBudget allows no disruption (429), and the pod stays', async () => {
    fake.addPod(statefulServer('r1', 'n1', 'ready'));
    fake.addPod(statefulServer('r2', 'n1', 'ready'));
    fake.addPodDisruptionBudget({
      metadata: { name: 'games', namespace: 'games' },
      spec: { minAvailable: 2, selector: { matchLabels: { 'berth.dev/game-server': 'true' } } },
    });
    expect(await cluster.evictPod('games', 'r1')).toBe('refused');
    expect(fake.pods.has('games/r1')).toBe(true);
    // A budget with room for one lets one go, then refuses the next.
    fake.podDisruptionBudgets.set('games/games', {
      metadata: { name: 'games', namespace: 'games' },
      spec: { minAvailable: 1, selector: { matchLabels: { 'berth.dev/game-server': 'true' } } },
    });
    expect(await cluster.evictPod('games', 'r1')).toBe('evicted');
    expect(await cluster.evictPod('games', 'r2')).toBe('refused');
  });

  it('answers changed when the pod is not the version named (409), gone when it is not there', async () => {
    const stored = fake.addPod(statefulServer('r1', 'n1', 'ready'));
    expect(await cluster.evictPod('games', 'r1', { resourceVersion: 'older' })).toBe('changed');
    expect(
      await cluster.evictPod('games', 'r1', {
        uid: stored.metadata?.uid,
        resourceVersion: stored.metadata?.resourceVersion,
      }),
    ).toBe('evicted');
    expect(await cluster.evictPod('games', 'r1')).toBe('gone');
  });
});

describe('ClientNodeClusterApi and Agones GameServers', () => {
  it('lists none, without failing, where Agones is not installed', async () => {
    const cluster = await start(false);
    const listed = [];
    for await (const gs of cluster.listGameServers()) listed.push(gs);
    expect(listed).toEqual([]);
  });

  it('lists GameServers of every namespace, and deletes one only under its preconditions', async () => {
    const cluster = await start(true);
    const server = agonesServer('gs-1', 'n1', 'Ready');
    const stored = fake.addGameServer(server.gameServer);
    fake.addPod(server.pod);
    fake.addGameServer({ ...agonesServer('gs-2', 'n1', 'Allocated').gameServer });
    const listed = [];
    for await (const gs of cluster.listGameServers({ pageSize: 1 })) listed.push(gs);
    expect(listed.map((gs) => `${gs.metadata?.name}:${gs.status?.state}`)).toEqual([
      'gs-1:Ready',
      'gs-2:Allocated',
    ]);
    expect(await cluster.deleteGameServer('games', 'gs-1', { resourceVersion: 'older' })).toBe(
      'changed',
    );
    expect(
      await cluster.deleteGameServer('games', 'gs-1', {
        uid: stored.metadata?.uid,
        resourceVersion: stored.metadata?.resourceVersion,
      }),
    ).toBe('deleted');
    expect(fake.gameServers.has('games/gs-1')).toBe(false);
    expect(await cluster.deleteGameServer('games', 'gs-1')).toBe('gone');
  });
});

describe('ClientNodeClusterApi.getKarpenterNodePool', () => {
  it('reads undefined where Karpenter is not installed', async () => {
    const cluster = await start(false);
    expect(await cluster.getKarpenterNodePool('games')).toBeUndefined();
    expect(fake.requests.at(-1)?.path).toBe('/apis/karpenter.sh/v1/nodepools/games');
  });
});

describe('ClientNodeClusterApi.patchPod', () => {
  it('applies a JSON patch, and a failed test is a conflict', async () => {
    const cluster = await start(false);
    const stored = fake.addPod(pod('g', { node: 'n1' }));
    const patched = await cluster.patchPod('games', 'g', [
      { op: 'test', path: '/metadata/resourceVersion', value: stored.metadata?.resourceVersion },
      {
        op: 'add',
        path: '/metadata/annotations',
        value: { 'karpenter.sh/do-not-disrupt': 'true' },
      },
    ]);
    expect(patched.metadata?.annotations).toEqual({ 'karpenter.sh/do-not-disrupt': 'true' });
    await expect(
      cluster.patchPod('games', 'g', [
        { op: 'test', path: '/metadata/resourceVersion', value: 'older' },
        { op: 'remove', path: '/metadata/annotations' },
      ]),
    ).rejects.toBeInstanceOf(KubernetesConflictError);
  });
});

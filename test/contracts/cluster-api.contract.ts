/**
 * What every `ClusterApi` answers, registered against a factory so the in-memory fake the domain
 * tests use and the client-node adapter over the loopback apiserver cannot drift apart: absent
 * reads, selectors and key order of lists, JSON patches as compare-and-swap, deletes, evictions
 * and GameServer deletes with their preconditions, and GameServer JSON patches.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgonesGameServer, ClusterApi } from '../../shared/k8s/cluster-api.js';
import { KubernetesConflictError, KubernetesNotFoundError } from '../../shared/k8s/errors.js';

/** A cluster for one case: the API under test, and how to seed and read what it stores. */
export interface ContractCluster {
  readonly api: ClusterApi;
  /** Stores objects as a controller or a user would, behind the API's back. */
  seed(objects: {
    nodes?: V1Node[];
    pods?: V1Pod[];
    gameServers?: AgonesGameServer[];
  }): Promise<void>;
  stop(): Promise<void>;
}

const node = (name: string, labels: Record<string, string> = {}): V1Node => ({
  metadata: { name, labels },
  spec: {},
});

const pod = (name: string, nodeName: string, phase = 'Running'): V1Pod => ({
  metadata: { namespace: 'games', name, uid: `uid-${name}` },
  spec: { nodeName, containers: [{ name: 'game' }] },
  status: { phase },
});

async function names(items: AsyncIterable<{ metadata?: { name?: string } }>): Promise<string[]> {
  const out: string[] = [];
  for await (const item of items) out.push(item.metadata?.name ?? '');
  return out;
}

/** Registers the contract's cases for the cluster `make` builds, empty, for each case. */
export function clusterApiContract(name: string, make: () => Promise<ContractCluster>): void {
  describe(`${name} keeps the ClusterApi contract`, () => {
    let cluster: ContractCluster | undefined;
    const start = async () => {
      cluster = await make();
      return cluster;
    };
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('reads stored objects, and absent ones as undefined', async () => {
      const { api, seed } = await start();
      await seed({ nodes: [node('n1')], pods: [pod('p1', 'n1')] });
      expect((await api.getNode('n1'))?.metadata?.name).toBe('n1');
      expect(await api.getNode('n2')).toBeUndefined();
      expect((await api.getPod('games', 'p1'))?.spec?.nodeName).toBe('n1');
      expect(await api.getPod('games', 'p2')).toBeUndefined();
      expect(await api.getService('games', 's1')).toBeUndefined();
    });

    it('lists in name order, honouring label and field selectors, in pages of any size', async () => {
      const { api, seed } = await start();
      await seed({
        nodes: [node('c', { role: 'game' }), node('a', { role: 'game' }), node('b')],
        pods: [pod('p2', 'a'), pod('p1', 'a', 'Succeeded'), pod('p3', 'c')],
      });
      expect(await names(api.listNodes({ pageSize: 1 }))).toEqual(['a', 'b', 'c']);
      expect(await names(api.listNodes({ labelSelector: 'role=game' }))).toEqual(['a', 'c']);
      expect(
        await names(api.listPods({ fieldSelector: 'spec.nodeName=a,status.phase!=Succeeded' })),
      ).toEqual(['p2']);
    });

    it('applies a JSON patch whose tests hold, under a new resourceVersion', async () => {
      const { api, seed } = await start();
      await seed({ nodes: [node('n1')] });
      const before = await api.getNode('n1');
      const patched = await api.patchNode('n1', [
        { op: 'test', path: '/metadata/name', value: 'n1' },
        { op: 'add', path: '/spec/unschedulable', value: true },
      ]);
      expect(patched.spec?.unschedulable).toBe(true);
      expect(patched.metadata?.resourceVersion).not.toBe(before?.metadata?.resourceVersion);
      expect((await api.getNode('n1'))?.spec?.unschedulable).toBe(true);
    });

    it('refuses a patch whose test fails as a conflict, and a patch of a missing node', async () => {
      const { api, seed } = await start();
      await seed({ nodes: [node('n1')] });
      await expect(
        api.patchNode('n1', [{ op: 'test', path: '/spec/unschedulable', value: true }]),
      ).rejects.toBeInstanceOf(KubernetesConflictError);
      expect((await api.getNode('n1'))?.spec?.unschedulable).toBeUndefined();
      await expect(api.patchNode('n2', [])).rejects.toBeInstanceOf(KubernetesNotFoundError);
    });

    it('deletes a node, and a node already gone counts as deleted', async () => {
      const { api, seed } = await start();
      await seed({ nodes: [node('n1')] });
      await api.deleteNode('n1');
      expect(await api.getNode('n1')).toBeUndefined();
      await api.deleteNode('n1');
    });

    it('evicts a pod under its preconditions, and answers gone and changed', async () => {
      const { api, seed } = await start();
      await seed({ nodes: [node('n1')], pods: [pod('p1', 'n1')] });
      expect(await api.evictPod('games', 'p1', { uid: 'another' })).toBe('changed');
      expect(await api.evictPod('games', 'p1', { uid: 'uid-p1' })).toBe('evicted');
      expect(await api.getPod('games', 'p1')).toBeUndefined();
      expect(await api.evictPod('games', 'p1')).toBe('gone');
    });

    it("lists a GameServer's Counters and Lists as Agones stores them", async () => {
      const { api, seed } = await start();
      const status = {
        state: 'Allocated',
        counters: { sessions: { count: 2, capacity: 4 } },
        lists: { players: { capacity: 8, values: ['p-1', 'p-2'] } },
      };
      await seed({
        gameServers: [
          {
            apiVersion: 'agones.dev/v1',
            kind: 'GameServer',
            metadata: { namespace: 'games', name: 'gs-1', uid: 'uid-gs-1' },
            status,
          },
        ],
      });
      const listed = [];
      for await (const gs of api.listGameServers()) listed.push(gs.status);
      expect(listed).toEqual([status]);
    });

    it('deletes a GameServer under its preconditions, and its pod with it', async () => {
      const { api, seed } = await start();
      await seed({
        nodes: [node('n1')],
        pods: [
          {
            ...pod('gs-1', 'n1'),
            metadata: {
              namespace: 'games',
              name: 'gs-1',
              ownerReferences: [
                { apiVersion: 'agones.dev/v1', kind: 'GameServer', name: 'gs-1', uid: 'uid-gs-1' },
              ],
            },
          },
        ],
        gameServers: [
          {
            apiVersion: 'agones.dev/v1',
            kind: 'GameServer',
            metadata: { namespace: 'games', name: 'gs-1', uid: 'uid-gs-1' },
            status: { state: 'Ready' },
          },
        ],
      });
      expect(await names(api.listGameServers())).toEqual(['gs-1']);
      expect(await api.deleteGameServer('games', 'gs-1', { uid: 'another' })).toBe('changed');
      expect(await api.deleteGameServer('games', 'gs-1', { uid: 'uid-gs-1' })).toBe('deleted');
      expect(await api.getPod('games', 'gs-1')).toBeUndefined();
      expect(await api.deleteGameServer('games', 'gs-1')).toBe('gone');
    });

    it("patches a GameServer's labels with a JSON patch, its test a compare-and-swap", async () => {
      const { api, seed } = await start();
      await seed({
        gameServers: [
          {
            apiVersion: 'agones.dev/v1',
            kind: 'GameServer',
            metadata: {
              namespace: 'games',
              name: 'gs-1',
              uid: 'uid-gs-1',
              labels: { 'agones.dev/sdk-gs-session-ready': 'true' },
            },
            status: { state: 'Allocated' },
          },
        ],
      });
      const path = '/metadata/labels/agones.dev~1sdk-gs-session-ready';
      const patched = await api.patchGameServer('games', 'gs-1', [
        { op: 'add', path, value: 'false' },
      ]);
      expect(patched.metadata?.labels?.['agones.dev/sdk-gs-session-ready']).toBe('false');
      const listed: AgonesGameServer[] = [];
      for await (const gs of api.listGameServers()) listed.push(gs);
      expect(listed[0]?.metadata?.labels?.['agones.dev/sdk-gs-session-ready']).toBe('false');
      await expect(
        api.patchGameServer('games', 'gs-1', [{ op: 'test', path, value: 'true' }]),
      ).rejects.toBeInstanceOf(KubernetesConflictError);
      await expect(
        api.patchGameServer('games', 'gs-2', [{ op: 'add', path, value: 'true' }]),
      ).rejects.toBeInstanceOf(KubernetesNotFoundError);
    });
  });
}

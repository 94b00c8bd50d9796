/**
 * Settle recovery after a restart, against DynamoDB Local and the Kubernetes API stand-in: the
 * tasks a `kill -9` lost (here: a settler that drops them) are found again from the store.
 */
import type { V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExclusiveAllocator } from '../../shared/allocation/allocator.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { settleRunner } from '../../shared/app/settle.js';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { clusterIpRange, nodePortRange } from '../../shared/net/value-range.js';
import { freeNeverStored, recoverSettleTasks } from '../../shared/settle/recovery.js';
import type { SettleTask } from '../../shared/settle/task.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { freshTable } from '../support/dynamo.js';
import { serviceReviews } from '../support/service-reviews.js';

const TOKEN = 'recovery-token';
let fake: KubeApiServer;

beforeAll(async () => {
  fake = await startKubeApiServer({ token: TOKEN });
});
afterAll(async () => {
  await fake.stop();
});

/** A cluster whose admissions' settle tasks are lost, as a killed server loses them. */
async function crashedServer() {
  const { client, tableName } = await freshTable();
  const config = parseConfig({ cluster: 'recovery' });
  const runtime = createRuntime({
    config,
    dynamo: client,
    tableName,
    settler: () => ({ track: async () => undefined }),
  });
  const clusterApi = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(TOKEN) });
  const store = new DynamoAllocationStore({ client, tableName, cluster: config.cluster });
  const ranges = {
    clusterIps: config.serviceCIDRs.map(clusterIpRange),
    nodePorts: nodePortRange(config.nodePortRange),
  };
  const allocator = new ExclusiveAllocator({ store, random: Math.random, now: Date.now });
  const send = serviceReviews(runtime.admission);
  /** The settle tasks a restarted server hands its queue. */
  const recover = async () => {
    const tasks: SettleTask[] = [];
    const found = await recoverSettleTasks({
      store,
      ranges,
      settler: { track: async (task) => void tasks.push(task) },
    });
    return { ...found, tasks };
  };
  return {
    send,
    recover,
    settle: settleRunner({ config, dynamo: client, tableName, clusterApi }),
    neverStored: (found: Awaited<ReturnType<typeof recover>>) =>
      freeNeverStored({ cluster: clusterApi, allocator, ranges }, found.unrecorded),
  };
}

const nodePort = (name: string, port: number, extra: Partial<V1Service['metadata']> = {}) =>
  ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', ...extra },
    spec: { type: 'NodePort', ports: [{ name: 'game', port: 80, nodePort: port }] },
  }) as V1Service;

describe('settle recovery after a restart', () => {
  it('hands a DELETE’s release, lost with the process, to the settle step again, which frees it', async () => {
    fake.services.clear();
    const server = await crashedServer();
    const created = await server.send('CREATE', nodePort('lb', 30600));
    const stored = fake.addService(applyPatch(nodePort('lb', 30600), decodePatch(created.patch)));
    expect((await server.send('DELETE', undefined, stored)).allowed).toBe(true);
    fake.services.clear();
    // The restart: nothing waits in the queue; the store says what did.
    const found = await server.recover();
    expect(found.releases).toBe(1);
    const [release] = found.tasks;
    expect(release).toMatchObject({ reason: 'release', attempt: 0 });
    if (!release) return;
    expect(await server.settle(release)).toEqual({ freed: 2, kept: 0 });
    expect((await server.send('CREATE', nodePort('next', 30600))).allowed).toBe(true);
  });

  it('hands a generateName CREATE to the settle step as a CREATE', async () => {
    fake.services.clear();
    const server = await crashedServer();
    const object = nodePort('', 30601, { generateName: 'game-' });
    expect((await server.send('CREATE', object)).allowed).toBe(true);
    const found = await server.recover();
    expect(found.creates).toBe(1);
    expect(found.tasks).toEqual([expect.objectContaining({ reason: 'create', attempt: 0 })]);
  });

  it('frees the values of a named CREATE never stored, and keeps those a stored Service carries', async () => {
    fake.services.clear();
    const server = await crashedServer();
    expect((await server.send('CREATE', nodePort('ghost', 30602))).allowed).toBe(true);
    const kept = await server.send('CREATE', nodePort('kept', 30603));
    fake.addService(applyPatch(nodePort('kept', 30603), decodePatch(kept.patch)));
    const found = await server.recover();
    expect(found.tasks).toEqual([]);
    expect(found.unrecorded.size).toBe(2);
    // Once the commit window after the restart has closed:
    expect(await server.neverStored(found)).toBe(2);
    expect((await server.send('CREATE', nodePort('again', 30602))).allowed).toBe(true);
    expect((await server.send('CREATE', nodePort('copy', 30603))).status?.code).toBe(409);
  });
});

import type { V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { settleRunner } from '../../shared/app/settle.js';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import type { SettleTask } from '../../shared/settle/task.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';
import { serviceReviews } from '../support/service-reviews.js';

const TOKEN = 'settle-token';

describe('settle step through the Kubernetes client and DynamoDB Local', () => {
  let fake: KubeApiServer;
  beforeAll(async () => {
    fake = await startKubeApiServer({ token: TOKEN });
  });
  afterAll(async () => {
    await fake.stop();
  });

  /** A fresh table and cluster config: the webhook (its settle tasks recorded) and the settle step over the fake apiserver. */
  async function settleOver(cluster: string) {
    const { client, tableName } = await freshTable();
    const config = parseConfig({ cluster });
    const tasks: SettleTask[] = [];
    const runtime = createRuntime({
      config,
      dynamo: client,
      tableName,
      settler: () => ({ track: async (task) => void tasks.push(task) }),
    });
    const clusterApi = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(TOKEN) });
    const settle = settleRunner({ config, dynamo: client, tableName, clusterApi });
    return { runtime, tasks, settle, send: serviceReviews(runtime.admission) };
  }

  it("frees a deleted Service's cluster IP and node port only once the apiserver no longer has the Service", async () => {
    const { tasks, settle, send } = await settleOver('settle');
    const nodePort = (name: string): V1Service => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'default' },
      spec: { type: 'NodePort', ports: [{ name: 'game', port: 80, nodePort: 30500 }] },
    });

    const created = await send('CREATE', nodePort('lb'));
    expect(created.allowed).toBe(true);
    const stored = fake.addService(applyPatch(nodePort('lb'), decodePatch(created.patch)));
    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    const release = tasks.find((t) => t.reason === 'release');
    expect(release).toBeDefined();
    if (!release) return;

    // Still in the API (a finalizer, or the DELETE not yet stored): nothing is freed.
    const held = await settle(release);
    expect(held).toMatchObject({ freed: 0 });
    expect(held.recheckAfter).toBeGreaterThan(0);
    expect((await send('CREATE', nodePort('next'))).status?.code).toBe(409);

    fake.services.clear();
    expect(await settle({ ...release, attempt: 1 })).toEqual({ freed: 2, kept: 0 });
    expect((await send('CREATE', nodePort('next'))).allowed).toBe(true);
  });

  it('learns the name of a Service created with generateName, denies a copy of it 409, and frees its values once it is gone', async () => {
    const { runtime, tasks, settle, send } = await settleOver('settle-generated');
    const unnamed: V1Service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { generateName: 'game-', namespace: 'default' },
      spec: { type: 'NodePort', ports: [{ name: 'game', port: 80 }] },
    };

    const created = await send('CREATE', unnamed);
    expect(created.allowed).toBe(true);
    const admitted = applyPatch(unnamed, decodePatch(created.patch));
    const stored = fake.addService({
      ...admitted,
      metadata: { ...admitted.metadata, name: 'game-k2x9q' },
    });
    const id = stored.metadata?.annotations?.['berth.dev/allocation-id'] ?? '';
    const create = tasks.find((t) => t.reason === 'create' && t.id === id);
    if (!create) throw new Error('no create task');
    await settle(create);
    expect((await runtime.allocationStore.getOwner(id))?.owner.name).toBe('game-k2x9q');

    // kubectl get -o json, name, uid and resourceVersion dropped: a new object, its values taken.
    expect((await send('CREATE', admitted)).status?.code).toBe(409);
    const labelled = { ...stored, metadata: { ...stored.metadata, labels: { team: 'blue' } } };
    const update = review({
      resource: 'services',
      operation: 'UPDATE',
      name: 'game-k2x9q',
      object: labelled,
      oldObject: stored,
    });
    expect((await admit(parseAdmissionReview(update), runtime.admission)).response.allowed).toBe(
      true,
    );

    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    const release = tasks.find((t) => t.reason === 'release' && t.id === id);
    if (!release) throw new Error('no release task');
    fake.services.clear();
    expect(await settle(release)).toEqual({ freed: 2, kept: 0 });
  });
});

import type { V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../shared/app/runtime.js';
import { settleRunner } from '../../shared/app/settle.js';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import type { SettleTask } from '../../shared/settle/task.js';
import { type KubeApiServer, startKubeApiServer } from '../fakes/kube-api-server.js';
import { freshTable } from '../support/dynamo.js';
import { applyPatch, decodePatch } from '../support/json-patch.js';
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

  it("frees a deleted Service's cluster IP and node port only once the apiserver no longer has the Service", async () => {
    const { client, tableName } = await freshTable();
    const config = parseConfig({ cluster: 'settle' });
    const tasks: SettleTask[] = [];
    const runtime = createRuntime({
      config,
      dynamo: client,
      tableName,
      settler: () => ({ track: async (task) => void tasks.push(task) }),
    });
    const clusterApi = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(TOKEN) });
    const settle = settleRunner({ config, dynamo: client, tableName, clusterApi });
    const send = serviceReviews(runtime.admission);
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
});

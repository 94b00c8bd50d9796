/** `berth status` on a cluster with EKS Auto Mode nodes: the line that counts them, and its JSON. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { captureOutput } from '../support/capture.js';
import { freshTable } from '../support/dynamo.js';

let api: KubeApiServer;
let kubeconfig: string;

beforeAll(async () => {
  api = await startKubeApiServer();
  for (const [name, labels] of [
    ['mng-1', { 'eks.amazonaws.com/nodegroup': 'games' }],
    ['auto-1', { 'eks.amazonaws.com/compute-type': 'auto' }],
    ['auto-2', { 'eks.amazonaws.com/compute-type': 'auto', 'karpenter.sh/nodepool': 'system' }],
  ] as const) {
    api.addNode({ metadata: { name, labels } });
  }
  kubeconfig = join(await mkdtemp(join(tmpdir(), 'berth-status-auto-')), 'kubeconfig');
  await writeFile(kubeconfig, api.kubeConfig().exportConfig());
});

afterAll(async () => {
  await api?.stop();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('berth status on a cluster with EKS Auto Mode nodes', () => {
  it('counts the Auto Mode nodes left out of the ENI pools, and says why', async () => {
    const { tableName } = await freshTable();
    const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', tableName];
    let io = captureOutput();
    expect(await main(['status', '--kubeconfig', kubeconfig, ...store])).toBe(0);
    expect(io.out()).toContain(
      "EKS Auto Mode nodes left out of ENI pools: 2 (EKS Auto Mode's own VPC CNI gives their pods IPs",
    );
    vi.restoreAllMocks();
    io = captureOutput();
    expect(await main(['status', '--json', '--kubeconfig', kubeconfig, ...store])).toBe(0);
    expect(JSON.parse(io.out()).autoModeNodes).toMatchObject({ count: 2 });
  });
});

/** `berth status` on a cluster where the VPC CNI's aws-node runs on some nodes: why they have no pool. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { vpcCniPod } from '../../sim/fakes/cluster-api.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { captureOutput } from '../support/capture.js';
import { freshTable } from '../support/dynamo.js';

let api: KubeApiServer;
let kubeconfig: string;

beforeAll(async () => {
  api = await startKubeApiServer();
  for (const name of ['system-1', 'game-1']) api.addNode({ metadata: { name } });
  api.addPod(vpcCniPod('system-1'));
  kubeconfig = join(await mkdtemp(join(tmpdir(), 'berth-status-vpc-cni-')), 'kubeconfig');
  await writeFile(kubeconfig, api.kubeConfig().exportConfig());
});

afterAll(async () => {
  await api?.stop();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('berth status on a cluster where aws-node runs on some nodes', () => {
  it('names each such node and says why it has no ENI pool', async () => {
    const { tableName } = await freshTable();
    const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', tableName];
    let io = captureOutput();
    expect(await main(['status', '--kubeconfig', kubeconfig, ...store])).toBe(0);
    expect(io.out()).toContain(
      'no ENI pool on 1 node:\n  system-1: aws-node runs on this node; berth serves no pool where the VPC CNI does',
    );
    vi.restoreAllMocks();
    io = captureOutput();
    expect(await main(['status', '--json', '--kubeconfig', kubeconfig, ...store])).toBe(0);
    expect(JSON.parse(io.out()).vpcCniNodes).toEqual({
      nodes: ['system-1'],
      why: 'aws-node runs on this node; berth serves no pool where the VPC CNI does',
    });
  });
});

/**
 * A cluster with EKS Auto Mode nodes, end to end: the stand-in Kubernetes API holds a managed node
 * group's node and an Auto Mode node labelled as Auto Mode labels its own, the real client-node
 * adapter reads them, the table is DynamoDB Local and EC2 is the simulator's fake. The ENI pass
 * and the node IP API leave the Auto Mode node alone; host ports, Services, binding addresses,
 * repair and settle serve it as any node.
 */
import type { V1Node, V1Pod, V1PodSpec, V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eniRunner, localEc2Account, nodeIpFault } from '../../shared/app/eni-pass.js';
import type { PassContext } from '../../shared/app/pass-context.js';
import { repairRunner } from '../../shared/app/repair-pass.js';
import { type BerthRuntime, createRuntime } from '../../shared/app/runtime.js';
import { settleRunner } from '../../shared/app/settle.js';
import { parseConfig } from '../../shared/config/schema.js';
import { createHttpApi } from '../../shared/http/api.js';
import type { HttpRequest } from '../../shared/http/exchange.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import type { SettleTask } from '../../shared/settle/task.js';
import { FakeEc2 } from '../../sim/fakes/ec2.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { review } from '../../sim/reviews.js';
import { gamePod, hostPortsOf, patched, podRequest } from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';
import { serviceReviews } from '../support/service-reviews.js';

const TOKEN = 'auto-mode-token';
const SUBNET = 'subnet-auto';

/** A node backed by `instanceId`, Ready, with one address and `labels`. */
function node(name: string, instanceId: string, address: string, labels: Record<string, string>) {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    spec: { providerID: `aws:///us-east-1a/${instanceId}` },
    status: {
      addresses: [{ type: 'ExternalIP', address }],
      allocatable: { cpu: '4', pods: '58' },
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  } satisfies V1Node;
}

/** The labels EKS Auto Mode puts on a node of its built-in general-purpose NodePool. */
const AUTO_MODE_LABELS = {
  'eks.amazonaws.com/compute-type': 'auto',
  'eks.amazonaws.com/nodeclass': 'default',
  'karpenter.sh/nodepool': 'general-purpose',
};

describe('a cluster with EKS Auto Mode nodes', () => {
  let fake: KubeApiServer;
  let runtime: BerthRuntime;
  let context: PassContext;
  let call: (request: HttpRequest) => Promise<{ status: number; body: unknown }>;
  const tasks: SettleTask[] = [];
  let eni: ReturnType<typeof eniRunner>;

  beforeAll(async () => {
    fake = await startKubeApiServer({ token: TOKEN });
    const ec2 = new FakeEc2({ now: Date.now });
    ec2.addSubnet(SUBNET, '10.0.0.0/24');
    const managed = ec2.launchInstance({ instanceType: 'c5.large', subnetId: SUBNET });
    const auto = ec2.launchInstance({ instanceType: 'c5.large', subnetId: SUBNET });
    fake.addNode(node('mng-1', managed, '203.0.113.1', { 'eks.amazonaws.com/nodegroup': 'games' }));
    fake.addNode(node('auto-1', auto, '203.0.113.9', AUTO_MODE_LABELS));

    const { client, tableName } = await freshTable();
    const config = parseConfig({
      cluster: 'auto',
      serviceCIDRs: ['10.60.0.0/24'],
      eni: { mode: 'ip', minIdle: 1, maxIdle: 2 },
    });
    const clusterApi = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(TOKEN) });
    runtime = createRuntime({
      config,
      dynamo: client,
      tableName,
      clusterApi,
      nodeLister: clusterApi,
      settler: () => ({ track: async (task) => void tasks.push(task) }),
    });
    context = { config, dynamo: client, tableName, clusterApi };
    eni = eniRunner(context, localEc2Account(ec2), {
      sleep: async () => {},
      random: Math.random,
    });
    const handle = createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      status: () => runtime.status(),
      nodeIps: eni.nodeIps({ request: async () => {} }),
      classify: nodeIpFault,
    });
    call = async (request) => {
      const response = await handle({
        headers: { 'content-type': 'application/json' },
        ...request,
      });
      return { status: response.statusCode, body: JSON.parse(response.body) };
    };
  }, 600_000);

  afterAll(async () => {
    await fake?.stop();
  });

  it('builds ENI pools for the node group only, counting the Auto Mode node it leaves out', async () => {
    const summary = await eni.pass();
    expect(summary).toMatchObject({ pools: 1, poolsCreated: 1, autoModeNodes: 1, failures: [] });
    const status = await call({ method: 'GET', path: '/v1/status', body: undefined });
    expect(status.status).toBe(200);
    const body = status.body as {
      pools: { node: string }[];
      autoModeNodes: { count: number; why: string };
    };
    expect(body.pools.map((pool) => pool.node)).toEqual(['mng-1']);
    expect(body.autoModeNodes.count).toBe(1);
    expect(body.autoModeNodes.why).toMatch(/EKS Auto Mode's own VPC CNI/);
  });

  it('answers the node IP API 409 for the Auto Mode node, naming it and why, and serves the other', async () => {
    const refused = await call({
      method: 'POST',
      path: '/v1/nodes/auto-1/ips',
      body: JSON.stringify({ namespace: 'games', pod: 'gs-1' }),
    });
    expect(refused.status).toBe(409);
    expect((refused.body as { error: string }).error).toBe(
      "node auto-1: an EKS Auto Mode node (label eks.amazonaws.com/compute-type=auto): EKS Auto Mode runs this node's networking (its own VPC CNI, /28 prefixes); berth keeps no ENI pool and assigns no pod IP here",
    );
    for (const [method, path] of [
      ['GET', '/v1/nodes/auto-1/ips'],
      ['DELETE', '/v1/nodes/auto-1/ips/10.0.0.77'],
    ] as const) {
      const answer = await call({
        method,
        path,
        query: { namespace: 'games', pod: 'gs-1' },
        body: undefined,
      });
      expect(answer.status, method).toBe(409);
      expect((answer.body as { error: string }).error).toMatch(
        /^node auto-1: an EKS Auto Mode node/,
      );
    }
    const served = await call({
      method: 'POST',
      path: '/v1/nodes/mng-1/ips',
      body: JSON.stringify({ namespace: 'games', pod: 'gs-0' }),
    });
    expect(served.status).toBe(200);
    expect((served.body as { ip: string }).ip).toMatch(/^10\.0\.0\./);
  });

  it('gives a game server on the Auto Mode node host ports and its address, and a Service its values; repair finds all in order', async () => {
    const game = gamePod([{ name: 'game', containerPort: 7777 }], {
      name: 'gs-1',
      namespace: 'games',
    });
    const pod = patched(game, await runtime.admission.pods(podRequest(game)));
    const port = hostPortsOf(pod).game;
    expect(port).toBeGreaterThanOrEqual(7000);
    expect(port).toBeLessThanOrEqual(8000);
    fake.addPod({ ...pod, spec: { ...(pod.spec as V1PodSpec), nodeName: 'auto-1' } } as V1Pod);

    const binding = await call({
      method: 'POST',
      path: '/admission',
      body: JSON.stringify(
        review({
          resource: 'pods',
          subResource: 'binding',
          operation: 'CREATE',
          name: 'gs-1',
          namespace: 'games',
          object: {
            apiVersion: 'v1',
            kind: 'Binding',
            metadata: { name: 'gs-1', namespace: 'games' },
            target: { apiVersion: 'v1', kind: 'Node', name: 'auto-1' },
          },
        }),
      ),
    });
    const bound = (binding.body as { response: { allowed: boolean; patch?: string } }).response;
    expect(bound.allowed).toBe(true);
    expect(JSON.stringify(decodePatch(bound.patch))).toContain('"berth.dev/address":"203.0.113.9"');

    const send = serviceReviews(runtime.admission);
    const web: V1Service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'games' },
      spec: { type: 'NodePort', ports: [{ name: 'game', port: 80 }] },
    };
    const created = await send('CREATE', web);
    expect(created.allowed).toBe(true);
    const stored = fake.addService(applyPatch(web, decodePatch(created.patch)));
    expect(stored.spec?.clusterIP).toMatch(/^10\.60\.0\./);
    expect(stored.spec?.ports?.[0]?.nodePort).toBeGreaterThanOrEqual(30000);

    const summary = await repairRunner(context)('auto-mode-test');
    expect(summary.findings).toEqual({});
    expect(summary.released).toBe(0);
  });

  it('frees a deleted Service on the settle step once the apiserver no longer has it', async () => {
    const send = serviceReviews(runtime.admission);
    const stored = fake.services.get('games/web');
    expect(stored).toBeDefined();
    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    const release = tasks.find((task) => task.reason === 'release');
    expect(release).toBeDefined();
    if (!release) return;
    fake.removeService('games', 'web');
    expect(await settleRunner(context)(release)).toEqual({ freed: 2, kept: 0 });
  });
});

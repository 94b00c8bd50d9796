/**
 * berth behind the Kubernetes API stand-in as a real cluster runs it: the stand-in's admission
 * chain calls berth's webhooks as `berth manifests` prints them, then a second mutating webhook
 * (a sidecar injector, as the EKS pod identity webhook, mesh injectors and Kyverno are), which
 * changes every pod and Service it sees once, so the apiserver calls berth again
 * (`reinvocationPolicy: IfNeeded`). berth reads the cluster through client-node, stores in
 * DynamoDB Local, and, with `nlb`, fronts game servers with an NLB of the fake ELBv2.
 * Users' requests go to the stand-in over HTTP, as kubectl's would.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1MutatingWebhook } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { serveRuntime } from '../../bench/support/serve-runtime.js';
import { frontsWiring } from '../../shared/app/fronts.js';
import { repairRunner } from '../../shared/app/repair-pass.js';
import { type BerthRuntime, createRuntime } from '../../shared/app/runtime.js';
import { scaleRunner } from '../../shared/app/scale-pass.js';
import { type BerthConfig, parseConfig } from '../../shared/config/schema.js';
import { InProcessFrontQueue } from '../../shared/fronts/in-process-queue.js';
import { handleFrontWork } from '../../shared/fronts/worker.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { mutatingWebhookConfiguration } from '../../shared/manifests/webhooks.js';
import type { RepairSummary } from '../../shared/repair/pass.js';
import type { ScaleReport } from '../../shared/scale/pass.js';
import { dynamoClient } from '../../shared/store/client.js';
import { ensureTable } from '../../shared/store/ensure-table.js';
import { FakeCustomRoutingAccelerator } from '../../sim/fakes/accelerator.js';
import { FakeElbv2 } from '../../sim/fakes/elbv2.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';

/** The label the injector adds, once. */
export const INJECTED_LABEL = 'sidecar.example.com/injected';

/** An object with this label is answered by the injector only after `SLOW_MS`: a slow chain. */
export const SLOW_LABEL = 'example.com/slow-admission';
export const SLOW_MS = 3_000;

/** A mutating webhook that labels every pod and Service it has not labelled yet. */
async function startInjector(): Promise<{ webhook: V1MutatingWebhook; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const labels = review.request.object?.metadata?.labels;
      if (labels?.[SLOW_LABEL] === 'true') {
        await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
      }
      const patch =
        labels?.[INJECTED_LABEL] === 'true'
          ? []
          : labels
            ? [
                {
                  op: 'add',
                  path: `/metadata/labels/${INJECTED_LABEL.replace('/', '~1')}`,
                  value: 'true',
                },
              ]
            : [{ op: 'add', path: '/metadata/labels', value: { [INJECTED_LABEL]: 'true' } }];
      const body = JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: {
          uid: review.request.uid,
          allowed: true,
          ...(patch.length > 0
            ? {
                patchType: 'JSONPatch',
                patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
              }
            : {}),
        },
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    webhook: {
      name: 'injector.example.com',
      clientConfig: { url: `http://127.0.0.1:${port}/mutate` },
      rules: [
        {
          apiGroups: [''],
          apiVersions: ['v1'],
          operations: ['CREATE'],
          resources: ['pods', 'services'],
        },
      ],
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
    },
  };
}

/** A request to the stand-in, as kubectl makes it: the status and the JSON answered. */
export interface ApiAnswer {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read whatever the API answered.
  readonly body: any;
}

export interface ChainedCluster {
  readonly api: KubeApiServer;
  readonly runtime: BerthRuntime;
  /** The NLB of the front pool and the fake ELBv2 behind it (with `nlb`). */
  readonly elbv2: FakeElbv2;
  readonly nlbArn: string;
  /** The fronts pass over the stand-in (with `nlb`). */
  frontsPass(): Promise<unknown>;
  /** One repair pass over the stand-in, as `berth repair --once` runs it. */
  repairPass(): Promise<RepairSummary>;
  /** One scale pass over the stand-in, as `berth scale --once` runs it. */
  scalePass(): Promise<ScaleReport>;
  /** The config berth runs with. */
  readonly config: BerthConfig;
  /** The table berth keeps its state in. */
  readonly tableName: string;
  /** The NLB listener slots berth holds, by allocation id (with `nlb`). */
  listenerHolders(): Promise<string[]>;
  /** Moves berth's clock (its runtime, fronts and the fake ELBv2) `ms` ahead. */
  advance(ms: number): void;
  /** Waits until queued front work is done. */
  settleFronts(): Promise<void>;
  request(method: string, path: string, body?: unknown): Promise<ApiAnswer>;
  close(): Promise<void>;
}

/** Starts the stand-in, berth behind it, and the injector after berth in the chain. */
export async function startChainedCluster(
  overrides: Record<string, unknown> = {},
  options: {
    readonly nlb?: boolean;
    /** A table another cluster's berth shares (made already); a table of its own by default. */
    readonly tableName?: string;
  } = {},
): Promise<ChainedCluster> {
  const api = await startKubeApiServer();
  let skew = 0;
  const now = () => Date.now() + skew;
  const elbv2 = new FakeElbv2({ now });
  const nlb = elbv2.addLoadBalancer({ name: 'games', vpcId: 'vpc-1' });
  const config = parseConfig({
    cluster: 'chained',
    hostPortRanges: { default: '7000-7099' },
    settle: { delaySeconds: 1 },
    ...(options.nlb ? { fronts: { nlb: { loadBalancers: [nlb.arn] } } } : {}),
    ...overrides,
  });
  const dynamo = dynamoClient({ endpoint: inject('dynamodbEndpoint') });
  const tableName = options.tableName ?? `chained-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  await ensureTable(dynamo, tableName);
  const clusterApi = new ClientNodeClusterApi({ kubeConfig: api.kubeConfig() });
  const pending = new Set<Promise<unknown>>();
  let wiring: ReturnType<typeof frontsWiring>;
  const queue = new InProcessFrontQueue({
    windowMs: 50,
    handle: (batch) => {
      if (!wiring) throw new Error('no fronts');
      const work = handleFrontWork(wiring.worker(clusterApi), batch);
      pending.add(work);
      void work.finally(() => pending.delete(work));
      return work;
    },
  });
  wiring = frontsWiring(
    { config, dynamo, tableName, now },
    {
      account: {
        elbv2,
        accelerator: new FakeCustomRoutingAccelerator({ now }),
        scope: 'test-account',
      },
      queue,
    },
  );
  const runtime = createRuntime({
    config,
    dynamo,
    tableName,
    now,
    clusterApi,
    ...(wiring ? { fronts: { pods: wiring.pods, binding: wiring.binding } } : {}),
  });
  const { server } = await serveRuntime(runtime);
  const injector = await startInjector();
  const berth = mutatingWebhookConfiguration({ url: `${server.url}/admission` }, config.cluster);
  api.webhooks.push(...(berth.webhooks ?? []), injector.webhook);

  return {
    api,
    runtime,
    elbv2,
    nlbArn: nlb.arn,
    config,
    tableName,
    repairPass: () => repairRunner({ config, dynamo, tableName, clusterApi, now })('chained-test'),
    scalePass: () =>
      scaleRunner(
        { config, dynamo, tableName, clusterApi, now },
        { triggers: false },
      )('chained-test'),
    listenerHolders: async () => {
      if (!wiring) throw new Error('no fronts configured');
      return (await wiring.store.listSlots()).map((record) => record.owner.allocationId).sort();
    },
    advance: (ms) => {
      skew += ms;
    },
    frontsPass: async () => {
      if (!wiring) throw new Error('no fronts configured');
      return wiring.pass(clusterApi);
    },
    settleFronts: async () => {
      // The queue's window, then whatever it started.
      await new Promise((resolve) => setTimeout(resolve, 200 + config.settle.delaySeconds * 1000));
      await Promise.all([...pending]);
    },
    async request(method, path, body) {
      const response = await fetch(`${api.url}${path}`, {
        method,
        headers: {
          'content-type': method === 'PATCH' ? 'application/json-patch+json' : 'application/json',
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: await response.json() };
    },
    async close() {
      await queue.close();
      await server.close();
      await new Promise((resolve) => injector.server.close(resolve));
      await api.stop();
    },
  };
}

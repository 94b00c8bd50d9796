/**
 * What a simulated day runs through: berth's HTTP surface (admission, the node IP API, the web
 * view) over a runtime, the cluster's Kubernetes API on loopback (`kube-api-server.ts`), and an
 * EC2 account (the EC2 fake, `machines.ts`) whose instances back the nodes. berth's repair, ENI
 * and scale passes run over that API and that account, on the day's clock, exactly as they run
 * over a real cluster.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { eniRunner, localEc2Account, nodeIpFault } from '../shared/app/eni-pass.js';
import { repairRunner } from '../shared/app/repair-pass.js';
import { type BerthRuntime, createRuntime } from '../shared/app/runtime.js';
import { scaleRunner } from '../shared/app/scale-pass.js';
import type { BerthConfig } from '../shared/config/schema.js';
import { DEFAULT_EC2_BUDGET } from '../shared/ec2/rate-budget.js';
import { InProcessRefills } from '../shared/eni/refill.js';
import { createHttpApi } from '../shared/http/api.js';
import { ClientNodeClusterApi } from '../shared/k8s/client-node-cluster-api.js';
import { type RunningServer, startServer } from '../shared/local/server.js';
import { WEB_VIEW_PAGE } from '../shared/ui/page.js';
import type { UiClusterView } from '../shared/ui/state.js';
import { SimClock } from './clock.js';
import { SIM_NODE_LABELS, simMachines } from './config.js';
import { type KubeApiServer, startKubeApiServer } from './fakes/kube-api-server.js';
import { type MachineOptions, SimMachines, SimNodePool } from './machines.js';
import type { SimTarget } from './run.js';

/** The berth server and the cluster's API, and where the running day hands its view. */
export interface SimServer {
  /** berth, wired over the day's table and clock. */
  readonly runtime: BerthRuntime;
  readonly server: RunningServer;
  readonly api: KubeApiServer;
  /** What `runSim` runs against: the server's URL, the API, the account, berth's passes. */
  readonly target: SimTarget;
  readonly watch: (view: () => UiClusterView) => void;
  close(): Promise<void>;
}

/** EC2 mutating calls a minute the account's budget allows (every family but Describe). */
export const MUTATING_BUDGET_PER_MINUTE = Object.entries(DEFAULT_EC2_BUDGET)
  .filter(([family]) => family !== 'describe')
  .reduce((sum, [, bucket]) => sum + bucket.refillPerSecond * 60, 0);

/**
 * Starts berth for a day under `config` (see `simConfig`), on the day's clock: admission, the
 * passes and the EC2 fake all read day time.
 */
export async function startSimServer(options: {
  readonly config: BerthConfig;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  readonly listen: { readonly host: string; readonly port: number };
  /** The day's instances and subnet; `simMachines` of the runtime's config where absent. */
  readonly machines?: Partial<MachineOptions>;
  /** A request that failed inside berth, or a background pool refill that did; `where` says which. */
  readonly onError: (error: unknown, where: string) => void;
}): Promise<SimServer> {
  // The day begins at a fixed midnight, so a seeded run replays.
  const clock = new SimClock(Date.UTC(2026, 0, 1));
  // Agones' API is served: the agones-fleet day keeps its GameServers there.
  const api = await startKubeApiServer({ now: clock.now, agones: true });
  const clusterApi = new ClientNodeClusterApi({ kubeConfig: api.kubeConfig() });
  // Admission reads the stand-in's pods and nodes as it reads a real cluster's: bindings get
  // their addresses, and game servers are refused the nodes the scale pass is removing.
  const runtime = createRuntime({
    config: options.config,
    dynamo: options.dynamo,
    tableName: options.tableName,
    clusterApi,
    now: clock.now,
  });
  const fleet = simMachines(runtime.config, options.machines);
  const machines = new SimMachines(clock, fleet);
  const pool = new SimNodePool(clock, machines, fleet);
  const context = {
    config: runtime.config,
    dynamo: options.dynamo,
    tableName: options.tableName,
    clusterApi,
    now: clock.now,
  };
  const eni = eniRunner(context, localEc2Account(machines.ec2));
  const scale = scaleRunner(context, { nodePool: pool, triggers: false });
  const repair = repairRunner(context);
  const refills = new InProcessRefills(
    (node) => eni.refill(node),
    (node, error) => options.onError(error, `background refill of node ${node}`),
  );

  let clusterView: (() => UiClusterView) | undefined;
  const server = await startServer({
    ...options.listen,
    handle: createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      status: () => runtime.status(),
      nodeIps: eni.nodeIps(refills),
      classify: nodeIpFault,
      webView: {
        page: WEB_VIEW_PAGE,
        state: async () => ({
          ...(await runtime.uiState()),
          ...(clusterView ? { clusterView: clusterView() } : {}),
        }),
        holders: (query) => runtime.holders(query),
      },
    }),
    onError: (error, request) => options.onError(error, `${request.method} ${request.path}`),
  });
  return {
    runtime,
    server,
    api,
    target: {
      url: server.url,
      api,
      repair: () => repair('berth-sim'),
      world: {
        clock,
        machines,
        pool,
        nodeLabels: SIM_NODE_LABELS,
        eni: () => eni.pass(),
        scale: () => scale('berth-sim'),
        eniEverySeconds: runtime.config.eni.intervalSeconds,
        scaleEverySeconds: runtime.config.scale.intervalSeconds,
        mutatingBudgetPerMinute: MUTATING_BUDGET_PER_MINUTE,
      },
    },
    watch: (view) => {
      clusterView = view;
    },
    close: async () => {
      await server.close();
      await api.stop();
    },
  };
}

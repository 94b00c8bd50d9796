/**
 * What a simulated day runs through: berth's HTTP surface over a runtime, with the web view
 * showing the simulated cluster beside berth's own state, and the cluster's Kubernetes API on
 * loopback (`kube-api-server.ts`), which berth's repair pass reads as it reads a real one.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { repairRunner } from '../shared/app/repair-pass.js';
import type { BerthRuntime } from '../shared/app/runtime.js';
import { createHttpApi, type HttpRequest } from '../shared/http/api.js';
import { ClientNodeClusterApi } from '../shared/k8s/client-node-cluster-api.js';
import { type RunningServer, startServer } from '../shared/local/server.js';
import { WEB_VIEW_PAGE } from '../shared/ui/page.js';
import type { UiClusterView } from '../shared/ui/state.js';
import { type KubeApiServer, startKubeApiServer } from './kube-api-server.js';
import type { SimTarget } from './run.js';

/** The berth server and the cluster's API, and where the running day hands its view. */
export interface SimServer {
  readonly server: RunningServer;
  readonly api: KubeApiServer;
  /** What `runSim` runs against: the server's URL, the API, berth's repair pass over it. */
  readonly target: SimTarget;
  readonly watch: (view: () => UiClusterView) => void;
  close(): Promise<void>;
}

export async function startSimServer(options: {
  readonly runtime: BerthRuntime;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  readonly listen: { readonly host: string; readonly port: number };
  readonly onError: (error: unknown, request: HttpRequest) => void;
}): Promise<SimServer> {
  const { runtime } = options;
  let clusterView: (() => UiClusterView) | undefined;
  const server = await startServer({
    ...options.listen,
    handle: createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      status: () => runtime.status(),
      webView: {
        page: WEB_VIEW_PAGE,
        state: async () => ({
          ...(await runtime.uiState()),
          ...(clusterView ? { clusterView: clusterView() } : {}),
        }),
      },
    }),
    onError: options.onError,
  });
  const api = await startKubeApiServer();
  const repair = repairRunner({
    config: runtime.config,
    dynamo: options.dynamo,
    tableName: options.tableName,
    clusterApi: new ClientNodeClusterApi({ kubeConfig: api.kubeConfig() }),
  });
  return {
    server,
    api,
    target: { url: server.url, api, repair: () => repair('berth-sim') },
    watch: (view) => {
      clusterView = view;
    },
    close: async () => {
      await server.close();
      await api.stop();
    },
  };
}

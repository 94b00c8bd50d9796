/**
 * The server a simulated day runs through: berth's HTTP surface over a runtime, with the web
 * view showing the simulated cluster's nodes and the invariants beside berth's own state.
 */
import type { BerthRuntime } from '../shared/app/runtime.js';
import type { HttpRequest } from '../shared/http/api.js';
import { createHttpApi } from '../shared/http/api.js';
import { type RunningServer, startServer } from '../shared/local/server.js';
import type { UiClusterView } from '../shared/ui/state.js';

/** A listening server, and where the running day hands it its view (`SimHooks.watch`). */
export interface SimServer {
  readonly server: RunningServer;
  readonly watch: (view: () => UiClusterView) => void;
}

export async function startSimServer(
  runtime: BerthRuntime,
  listen: { readonly host: string; readonly port: number },
  onError: (error: unknown, request: HttpRequest) => void,
): Promise<SimServer> {
  let clusterView: (() => UiClusterView) | undefined;
  const server = await startServer({
    ...listen,
    handle: createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      status: () => runtime.status(),
      uiState: async () => ({
        ...(await runtime.uiState()),
        ...(clusterView ? { clusterView: clusterView() } : {}),
      }),
    }),
    onError,
  });
  return {
    server,
    watch: (view) => {
      clusterView = view;
    },
  };
}

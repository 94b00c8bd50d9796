/** Serves a runtime's HTTP surface on loopback (plain HTTP, a free port), as `berth serve --http` does. */
import type { BerthRuntime } from '../../shared/app/runtime.js';
import { createHttpApi } from '../../shared/http/api.js';
import { type RunningServer, startServer } from '../../shared/local/server.js';
import { WEB_VIEW_PAGE } from '../../shared/ui/page.js';

/** The server, and every internal fault it answered 500 (a test expects none). */
export async function serveRuntime(
  runtime: BerthRuntime,
): Promise<{ server: RunningServer; internalFaults: unknown[] }> {
  const internalFaults: unknown[] = [];
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    handle: createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      status: () => runtime.status(),
      webView: {
        page: WEB_VIEW_PAGE,
        state: () => runtime.uiState(),
        holders: (query) => runtime.holders(query),
      },
    }),
    onError: (error) => internalFaults.push(error),
  });
  return { server, internalFaults };
}

import type { HostNetwork, RoutingView } from '../../cni/host-network.js';

/** The node's routing lock for in-process runs: no lock, the view read from `host`. */
export const lockedOn =
  (host: HostNetwork) =>
  async <T>(_mode: string, work: (view: RoutingView) => Promise<T>): Promise<T> =>
    work(await host.view());

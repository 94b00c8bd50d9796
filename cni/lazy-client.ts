/**
 * berth's node API, loaded on first use. Most ADDs and DELs on a node that hands its addresses
 * out itself call no berth endpoint, so the plugin does not load the HTTP client, its SigV4
 * signer or the wire schemas until one does: they are most of the bundle, and loading is most of
 * a plugin's start (the ADD the container runtime waits for).
 */
import type { BerthIpamConfig } from './netconf.js';
import type { NodeApi } from './node-ip-client.js';

/** A `NodeApi` that loads the real client for `config` on its first call. */
export function lazyNodeApi(config: BerthIpamConfig, signal: AbortSignal): NodeApi {
  let loaded: Promise<NodeApi> | undefined;
  const api = () => {
    loaded ??= import('./node-ip-client.js').then(
      ({ NodeIpClient }) => new NodeIpClient(config, signal),
    );
    return loaded;
  };
  return {
    assign: async (pod) => (await api()).assign(pod),
    lookUp: async (pod) => (await api()).lookUp(pod),
    release: async (ip, pod) => (await api()).release(ip, pod),
    nodeSet: async () => (await api()).nodeSet(),
    report: async (report) => (await api()).report(report),
  };
}

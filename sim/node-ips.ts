/**
 * The node IP API as the CNI plugin calls it, over HTTP: a pod's sandbox asks berth for an
 * address on its node at ADD and gives it back at DEL. The simulated kubelet uses it so every
 * pod address in a simulated day comes from berth's real pools over its real surface.
 */

/** Who asks: the pod and its sandbox. */
export interface IpHolder {
  readonly namespace: string;
  readonly pod: string;
  readonly containerId: string;
}

/**
 * An ADD's outcome: the address, or why there is none yet: berth's 409 (the pool is exhausted:
 * instance at capacity, subnet dry), 429 (a request of the same pod wrote its address first) or
 * 503 (the pool cannot grow now).
 */
export type AssignOutcome =
  | { readonly ip: string; readonly eniId: string }
  | { readonly waiting: string };

/** The two calls the CNI plugin makes. */
export interface NodeIpClient {
  assign(node: string, holder: IpHolder): Promise<AssignOutcome>;
  release(node: string, ip: string, holder: IpHolder): Promise<void>;
}

/** A node IP client for the berth server at `url`. */
export function httpNodeIps(url: string): NodeIpClient {
  const nodeUrl = (node: string) => `${url}/v1/nodes/${encodeURIComponent(node)}/ips`;
  return {
    async assign(node, holder) {
      const response = await fetch(nodeUrl(node), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(holder),
      });
      const text = await response.text();
      // The plugin fails the ADD and kubelet retries the sandbox until an address comes.
      if ([409, 429, 503].includes(response.status)) return { waiting: text };
      if (response.status !== 200) {
        throw new Error(`node IP assign on ${node} answered HTTP ${response.status}: ${text}`);
      }
      const { ip, eniId } = JSON.parse(text) as { ip: string; eniId: string };
      return { ip, eniId };
    },
    async release(node, ip, holder) {
      const query = new URLSearchParams({ ...holder });
      const response = await fetch(`${nodeUrl(node)}/${encodeURIComponent(ip)}?${query}`, {
        method: 'DELETE',
      });
      // 404: the node's pool is gone with the node, and its addresses with it.
      if (response.status !== 200 && response.status !== 404) {
        throw new Error(
          `node IP release of ${ip} on ${node} answered HTTP ${response.status}: ${await response.text()}`,
        );
      }
    },
  };
}

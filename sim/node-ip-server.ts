/**
 * berth's node IP API on loopback for the CNI plugin's tests, e2e script and benchmark: the real
 * HTTP surface (`createHttpApi`, `startServer`) over the real pool service, with the EC2 fake and
 * the in-memory pool store behind it, and one node whose pool the ENI pass has filled.
 */
import { nodeIpFault } from '../shared/app/eni-pass.js';
import { handleNodeReport, handleNodeSet } from '../shared/eni/handout/node-api.js';
import { runEniPass } from '../shared/eni/pass.js';
import { handleAssignIp, handleLookUpIp, handleReleaseIp } from '../shared/eni/service.js';
import { createHttpApi } from '../shared/http/api.js';
import { startServer } from '../shared/local/server.js';
import { type EniWorld, eniWorld } from './eni-world.js';

/** The node every plugin test runs on. */
export const NODE = 'node-a';

/** A running node IP API. */
export interface NodeIpServer {
  readonly url: string;
  readonly world: EniWorld;
  /** Every request the API answered, as `METHOD /path`, in order. */
  readonly requests: readonly string[];
  /**
   * The node's ENIs as EC2 has them (MAC, primary address, device index), the primary ENI
   * (device index 0, where berth assigns first) among them.
   */
  enis(): { eniId: string; macAddress: string; primaryIp: string; deviceIndex: number }[];
  close(): Promise<void>;
}

/** berth's HTTP surface serving node IPs from `world`'s pools. */
export function nodeIpApi(world: EniWorld) {
  return createHttpApi({
    healthy: async () => true,
    nodeIps: {
      assign: (node, body) => handleAssignIp(world.deps, node, body),
      release: (node, ip, holder) => handleReleaseIp(world.deps, node, ip, holder),
      lookUp: (node, holder) => handleLookUpIp(world.deps, node, holder),
      nodeSet: (node) => handleNodeSet(world.deps, node),
      nodeReport: (node, body) => handleNodeReport(world.deps, node, body),
    },
    classify: nodeIpFault,
  });
}

/** Starts the API on 127.0.0.1 with a warm pool of `idle` addresses on `instanceType`. */
export async function startNodeIpServer(
  options: { idle?: number; instanceType?: string; host?: string } = {},
): Promise<NodeIpServer> {
  const idle = options.idle ?? 8;
  // Cooldown and sticky reservations off: tests reuse addresses at once.
  const world = eniWorld({
    eni: { minIdle: idle, maxIdle: idle * 2, cooldownSeconds: 0, stickySeconds: 0 },
  });
  const instanceId = world.addNode(NODE, options.instanceType ?? 'c5.4xlarge');
  await runEniPass(world.deps);
  const api = nodeIpApi(world);
  const requests: string[] = [];
  const server = await startServer({
    host: options.host ?? '127.0.0.1',
    port: 0,
    handle: (request) => {
      requests.push(`${request.method} ${request.path}`);
      return api(request);
    },
    onError: (error) => process.stderr.write(`node IP server: ${String(error)}\n`),
  });
  return {
    url: server.url,
    world,
    requests,
    enis: () =>
      world.ec2
        .allInterfaces()
        .filter((eni) => eni.attachment?.instanceId === instanceId)
        .sort((a, b) => (a.attachment?.deviceIndex ?? 0) - (b.attachment?.deviceIndex ?? 0))
        .map((eni) => ({
          eniId: eni.eniId,
          macAddress: eni.macAddress,
          primaryIp: eni.primaryIp,
          deviceIndex: eni.attachment?.deviceIndex ?? 0,
        })),
    close: () => server.close(),
  };
}

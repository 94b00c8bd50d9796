/**
 * berth-cni: what each CNI command does. ADD asks berth for the pod's address and routes the
 * pod's traffic out through the address's ENI; DEL releases the address keyed by its holder and
 * undoes the routing; CHECK verifies both; VERSION answers. berth holds every assignment, keyed
 * by namespace, pod and container; the node keeps only which sandboxes' DELs it has completed
 * (`released.ts`), so that kubelet's repeated teardowns do not ask berth again.
 */
import { answeredIp, checkedAssignment } from './answer.js';
import { type Invocation, type PodRef, podOf } from './environment.js';
import { CNI_ERROR, CniError } from './errors.js';
import type { LockMode } from './host-lock.js';
import type { HostNetwork } from './host-network.js';
import {
  type BerthIpamConfig,
  type NetworkConfig,
  parseNetworkConfig,
  SUPPORTED_VERSIONS,
} from './netconf.js';
import type { NodeIpClient } from './node-ip-client.js';
import type { ReleasedSandboxes } from './released.js';
import { type Assignment, ipamResult } from './result.js';
import { type PodRoute, planAdd, planDelete, routingProblems } from './source-routing.js';

/** What the commands act through. */
export interface PluginDeps {
  readonly client: (config: BerthIpamConfig) => NodeIpClient;
  readonly host: HostNetwork;
  /** Runs `work` holding the node's routing lock, shared (ADD, CHECK) or exclusive (DEL). */
  readonly locked: <T>(mode: LockMode, work: () => Promise<T>) => Promise<T>;
  /** The sandboxes whose DEL already completed on this node. */
  readonly released: ReleasedSandboxes;
}

/** What the plugin prints on stdout (nothing for a DEL or CHECK that succeeded). */
export type Output = Record<string, unknown> | undefined;

/** Runs one command. Failures are `CniError`s; anything else is a bug the caller reports. */
export async function runCommand(
  invocation: Invocation,
  stdin: string,
  deps: PluginDeps,
): Promise<Output> {
  if (invocation.command === 'VERSION') return version(stdin);
  const config = parseNetworkConfig(stdin);
  const client = deps.client(config.ipam);
  switch (invocation.command) {
    case 'ADD':
      return add(config, podOf(invocation), client, deps);
    case 'DEL': {
      // A DEL succeeds for what was never set up (CNI 1.0.0): with no pod named, nothing was.
      const pod = podOf(invocation, { optional: true });
      if (pod) await del(config, pod, client, deps);
      return undefined;
    }
    case 'CHECK':
      await check(config, podOf(invocation), client, deps);
      return undefined;
  }
}

/**
 * VERSION never fails: it is how a runtime learns what the plugin speaks, so a configuration in a
 * version it does not speak (or none) is answered in 1.0.0, with the list, as libcni's plugins do.
 */
function version(stdin: string): Output {
  let cniVersion: string = '1.0.0';
  try {
    const conf = JSON.parse(stdin) as unknown;
    const asked = (conf as { cniVersion?: unknown } | null)?.cniVersion;
    if (typeof asked === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(asked)) {
      cniVersion = asked;
    }
  } catch {
    // VERSION may come with no configuration at all.
  }
  return { cniVersion, supportedVersions: [...SUPPORTED_VERSIONS] };
}

async function add(
  config: NetworkConfig,
  pod: PodRef,
  client: NodeIpClient,
  deps: PluginDeps,
): Promise<Output> {
  // Before berth is asked: a DEL after this ADD, whatever becomes of it, must ask berth again.
  await deps.released.forget(pod);
  const answer = await client.assign(pod);
  let assignment: Assignment;
  try {
    assignment = checkedAssignment(answer, config.ipam);
  } catch (error) {
    // Nothing on the node was touched; an address berth named goes back, keyed by this holder.
    const named = (answer as { ip?: unknown } | null)?.ip;
    if (typeof named === 'string') await client.release(named, pod).catch(() => undefined);
    throw error;
  }
  if (routedThroughItsEni(config, assignment)) {
    try {
      const route = await podRoute(assignment, config.ipam, deps.host);
      await deps.locked('shared', async () =>
        deps.host.run(planAdd(await deps.host.rules(), route)),
      );
    } catch (error) {
      // Nothing half-done: the address goes back (keyed by this holder), and the runtime retries.
      await deps
        .locked('exclusive', async () => {
          await client.release(assignment.ip, pod);
          await deps.host.run(planDelete(await deps.host.rules(), assignment.ip));
        })
        .catch(() => undefined);
      throw error;
    }
  }
  return ipamResult(config.cniVersion, assignment, config.ipam.podGateway);
}

/**
 * Releases the pod's address if this container still holds it. The address is the cached
 * result's, or berth's answer for the holder when the runtime lost its cache; a DEL with no
 * cache of a sandbox whose DEL already completed here has nothing left to ask. An address that
 * has gone to another container is left alone, its routing included: the DEL is late.
 */
async function del(
  config: NetworkConfig,
  pod: PodRef,
  client: NodeIpClient,
  deps: PluginDeps,
): Promise<void> {
  const cached = config.prevResult?.ips[0]?.address.split('/')[0];
  if (cached === undefined && (await deps.released.has(pod))) return;
  const answer = cached === undefined ? await client.lookUp(pod) : undefined;
  const ip = cached ?? (answer === undefined ? undefined : answeredIp(answer));
  if (ip !== undefined) {
    await deps.locked('exclusive', async () => {
      const outcome = await client.release(ip, pod);
      if (outcome === 'held-by-another' || outcome === 'refused' || !config.ipam.sourceRouting) {
        return;
      }
      await deps.host.run(planDelete(await deps.host.rules(), ip));
    });
  }
  // Only once the DEL is done: one that failed is retried, and must ask again.
  await deps.released.record(pod);
}

async function check(
  config: NetworkConfig,
  pod: PodRef,
  client: NodeIpClient,
  deps: PluginDeps,
): Promise<void> {
  const answer = await client.lookUp(pod);
  if (answer === undefined) {
    throw new CniError(
      CNI_ERROR.mismatch,
      `berth holds no address for ${pod.namespace}/${pod.name} (container ${pod.containerId})`,
    );
  }
  const assignment = checkedAssignment(answer, config.ipam);
  const cached = config.prevResult?.ips[0]?.address.split('/')[0];
  if (cached !== undefined && cached !== assignment.ip) {
    throw new CniError(
      CNI_ERROR.mismatch,
      `the pod has ${cached}, but berth assigned ${assignment.ip} to ${pod.namespace}/${pod.name}`,
    );
  }
  if (!routedThroughItsEni(config, assignment)) return;
  const route = await podRoute(assignment, config.ipam, deps.host);
  const problems = routingProblems(
    await deps.host.rules(),
    await deps.host.routes(route.table),
    route,
  );
  if (problems.length > 0) {
    throw new CniError(CNI_ERROR.mismatch, `${assignment.ip}: ${problems.join('; ')}`);
  }
}

/**
 * Whether the pod's traffic must leave through the ENI that owns its address: an address berth
 * places on a secondary ENI (device index 1 and up), where the main table's default route would
 * send it out of the primary ENI and EC2's source/destination check would drop it. An address on
 * the primary ENI, or an answer that names no device (the API's contract shape alone), leaves by
 * the main table.
 */
function routedThroughItsEni(config: NetworkConfig, assignment: Assignment): boolean {
  return config.ipam.sourceRouting && (assignment.deviceIndex ?? 0) > 0;
}

/** The pod's route: its ENI's link (found by MAC) and table (by device index). */
async function podRoute(
  assignment: Assignment,
  config: BerthIpamConfig,
  host: HostNetwork,
): Promise<PodRoute> {
  const { macAddress, deviceIndex } = assignment;
  if (macAddress === undefined || deviceIndex === undefined) {
    throw new CniError(
      CNI_ERROR.tryAgainLater,
      `berth has not recorded the MAC address of ${assignment.eniId} yet: the ENI pass records it`,
    );
  }
  const link = await host.linkByMac(macAddress);
  if (link === undefined) {
    throw new CniError(
      CNI_ERROR.tryAgainLater,
      `${assignment.eniId} (${macAddress}) is not attached to this node yet`,
      'the ENI has no link with its MAC address on the node',
    );
  }
  return {
    ip: assignment.ip,
    table: config.routeTableBase + deviceIndex,
    link,
    gateway: assignment.gateway,
  };
}

/**
 * berth-cni: what each CNI command does. ADD asks berth for the pod's address and routes the
 * pod's traffic out through the address's ENI; DEL releases the address keyed by its holder and
 * undoes the routing; CHECK verifies both; VERSION answers. berth holds every assignment, keyed
 * by namespace, pod and container; the node keeps only which sandboxes' DELs it has completed
 * (`released.ts`), so that kubelet's repeated teardowns do not ask berth again.
 */

import type { NodeSet } from '../shared/eni/handout/wire.js';
import { answeredIp, checkedAssignment } from './answer.js';
import { type Invocation, type PodRef, podOf } from './environment.js';
import { CNI_ERROR, CniError } from './errors.js';
import { reportOf } from './handout/agent.js';
import { assignmentOf, freeAddress, type Taker, takeAddress } from './handout/handout.js';
import type { HandoutStore } from './handout/store.js';
import type { LockMode } from './host-lock.js';
import { type HostNetwork, linkWithMac, type RoutingView } from './host-network.js';
import {
  type BerthIpamConfig,
  type NetworkConfig,
  parseNetworkConfig,
  SUPPORTED_VERSIONS,
} from './netconf.js';
import type { NodeApi } from './node-ip-client.js';
import type { ReleasedSandboxes } from './released.js';
import { type Assignment, ipamResult } from './result.js';
import { type PodRoute, planAdd, planDelete, routingProblems } from './source-routing.js';

/** What the commands act through. */
export interface PluginDeps {
  readonly client: (config: BerthIpamConfig) => NodeApi;
  /**
   * The node's handout files: once the agent learned the node's set there, the node hands its
   * addresses out itself; before, every ADD asks berth (the earlier way).
   */
  readonly handout: (config: BerthIpamConfig) => HandoutStore;
  /** This boot of the node (`/proc/sys/kernel/random/boot_id`), which a lease records. */
  readonly boot: string;
  readonly now: () => number;
  readonly host: HostNetwork;
  /**
   * Runs `work` holding the node's routing lock, shared (ADD) or exclusive (DEL), with the
   * node's links and rules as they were read once the lock was held.
   */
  readonly locked: <T>(mode: LockMode, work: (view: RoutingView) => Promise<T>) => Promise<T>;
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
    case 'ADD': {
      const pod = podOf(invocation);
      const local = await onNode(config, invocation, pod, deps);
      return local ? addOnNode(config, local, client, deps) : add(config, pod, client, deps);
    }
    case 'DEL': {
      // A DEL succeeds for what was never set up (CNI 1.0.0): with no pod named, nothing was.
      const pod = podOf(invocation, { optional: true });
      if (!pod) return undefined;
      const local = await onNode(config, invocation, pod, deps);
      if (!local || !(await delOnNode(config, local, deps))) await del(config, pod, client, deps);
      return undefined;
    }
    case 'CHECK': {
      const pod = podOf(invocation);
      const local = await onNode(config, invocation, pod, deps);
      if (!local || !(await checkOnNode(config, local, deps)))
        await check(config, pod, client, deps);
      return undefined;
    }
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

/** A command on a node that hands its addresses out itself: its files, set and taker. */
interface OnNode {
  readonly store: HandoutStore;
  readonly set: NodeSet;
  readonly taker: Taker;
  readonly pod: PodRef;
}

/** The node's handout, once its agent learned the node's set; undefined before (the earlier way). */
async function onNode(
  config: NetworkConfig,
  invocation: Invocation,
  pod: PodRef,
  deps: PluginDeps,
): Promise<OnNode | undefined> {
  const store = deps.handout(config.ipam);
  const set = await store.readSet().catch((error: unknown) => {
    throw new CniError(
      CNI_ERROR.ioFailure,
      `cannot read the node's address set under ${store.root}`,
      error instanceof Error ? error.message : String(error),
    );
  });
  if (set === undefined) return undefined;
  const taker = {
    pod: `${pod.namespace}/${pod.name}`,
    containerId: pod.containerId,
    ifName: invocation.ifname,
  };
  return { store, set, taker, pod };
}

/**
 * ADD from the node's own set: no berth call while an address is free. With none free, one
 * report asks berth for a refill, and the ADD takes from the set it answers, or is told to try
 * again later (error 11).
 */
async function addOnNode(
  config: NetworkConfig,
  local: OnNode,
  client: NodeApi,
  deps: PluginDeps,
): Promise<Output> {
  const { store, taker } = local;
  // No lock: the lease file is created exclusively, and DELs, which remove leases, take the
  // node's lock exclusive among themselves, so an ADD never waits for (or spawns) a lock holder.
  const take = (set: NodeSet) => takeAddress(store, set, taker, deps.boot, deps.now());
  let set = local.set;
  let address = await take(set);
  if (address === undefined) {
    set = await store.writeSet(await client.report(await reportOf(store, true)));
    address = await take(set);
  }
  if (address === undefined) {
    throw new CniError(
      CNI_ERROR.tryAgainLater,
      `no free address on node ${config.ipam.node}: berth was asked for more; the runtime retries`,
    );
  }
  const taken = address;
  const giveUp = () =>
    deps.locked('exclusive', () => store.dropLease(taken.ip, taker.containerId, taker.ifName));
  let assignment: Assignment;
  try {
    assignment = checkedAssignment(assignmentOf(set, taken), config.ipam);
    if (routedThroughItsEni(config, assignment)) await routePod(assignment, config, deps);
  } catch (error) {
    // Nothing half-done: the lease goes, and the runtime retries.
    await giveUp().catch(() => undefined);
    throw error;
  }
  return ipamResult(config.cniVersion, assignment, config.ipam.podGateway);
}

/**
 * DEL on the node: frees the container's lease (never another container's) and its routing.
 * False when the container holds no lease here but may be a pod served the earlier way (the
 * cached address, or with none cached any address, `held` in the set), which berth releases.
 */
async function delOnNode(config: NetworkConfig, local: OnNode, deps: PluginDeps): Promise<boolean> {
  const { store, taker, set } = local;
  const cached = config.prevResult?.ips[0]?.address.split('/')[0];
  const freed = await deps.locked('exclusive', async (view) => {
    const ip = await freeAddress(store, taker, cached, deps.now());
    const onSecondary = set.addresses.find((a) => a.ip === ip)?.deviceIndex ?? 0;
    if (ip !== undefined && config.ipam.sourceRouting && onSecondary > 0) {
      await deps.host.run(planDelete(view.rules, ip));
    }
    return ip;
  });
  if (freed !== undefined) {
    await deps.released.record(local.pod);
    return true;
  }
  // Only a pod served the earlier way (its address `held` in the set) is berth's to release; with
  // no result cached, any such pod on the node might be this one.
  const held = set.addresses.filter((a) => a.state === 'held');
  const earlier = cached === undefined ? held.length > 0 : held.some((a) => a.ip === cached);
  return !earlier;
}

/** CHECK on the node: the container's lease is the cached address, and its routing is in place. */
async function checkOnNode(
  config: NetworkConfig,
  local: OnNode,
  deps: PluginDeps,
): Promise<boolean> {
  const { store, taker, set } = local;
  const lease = await store.leaseOf(taker.containerId, taker.ifName);
  if (lease === undefined) return false;
  const cached = config.prevResult?.ips[0]?.address.split('/')[0];
  if (cached !== undefined && cached !== lease.ip) {
    throw new CniError(
      CNI_ERROR.mismatch,
      `the pod has ${cached}, but the node leased ${lease.ip} to ${taker.pod} (container ${taker.containerId})`,
    );
  }
  const address = set.addresses.find((a) => a.ip === lease.ip);
  if (address === undefined) return true;
  await checkRouting(config, checkedAssignment(assignmentOf(set, address), config.ipam), deps);
  return true;
}

async function add(
  config: NetworkConfig,
  pod: PodRef,
  client: NodeApi,
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
      await routePod(assignment, config, deps);
    } catch (error) {
      // Nothing half-done: the address goes back (keyed by this holder), and the runtime retries.
      await deps
        .locked('exclusive', async (view) => {
          await client.release(assignment.ip, pod);
          await deps.host.run(planDelete(view.rules, assignment.ip));
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
  client: NodeApi,
  deps: PluginDeps,
): Promise<void> {
  const cached = config.prevResult?.ips[0]?.address.split('/')[0];
  if (cached === undefined && (await deps.released.has(pod))) return;
  const answer = cached === undefined ? await client.lookUp(pod) : undefined;
  const ip = cached ?? (answer === undefined ? undefined : answeredIp(answer));
  if (ip !== undefined) {
    await deps.locked('exclusive', async (view) => {
      const outcome = await client.release(ip, pod);
      if (outcome === 'held-by-another' || outcome === 'refused' || !config.ipam.sourceRouting) {
        return;
      }
      await deps.host.run(planDelete(view.rules, ip));
    });
  }
  // Only once the DEL is done: one that failed is retried, and must ask again.
  await deps.released.record(pod);
}

async function check(
  config: NetworkConfig,
  pod: PodRef,
  client: NodeApi,
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
  await checkRouting(config, assignment, deps);
}

/** The pod's routing through its address's ENI, when it needs one, is in place. */
async function checkRouting(
  config: NetworkConfig,
  assignment: Assignment,
  deps: PluginDeps,
): Promise<void> {
  if (!routedThroughItsEni(config, assignment)) return;
  const view = await deps.host.view();
  const route = podRoute(assignment, config.ipam, view);
  const problems = routingProblems(view.rules, await deps.host.routes(route.table), route);
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

/**
 * Points the pod's rules and its ENI's table at the ENI, from the links and rules read under
 * the node's shared lock (a DEL holding it exclusive may be removing rules).
 */
async function routePod(
  assignment: Assignment,
  config: NetworkConfig,
  deps: PluginDeps,
): Promise<void> {
  await deps.locked('shared', async (view) =>
    deps.host.run(planAdd(view.rules, podRoute(assignment, config.ipam, view))),
  );
}

/** The pod's route: its ENI's link (found by MAC) and table (by device index). */
function podRoute(assignment: Assignment, config: BerthIpamConfig, view: RoutingView): PodRoute {
  const { macAddress, deviceIndex } = assignment;
  if (macAddress === undefined || deviceIndex === undefined) {
    throw new CniError(
      CNI_ERROR.tryAgainLater,
      `berth has not recorded the MAC address of ${assignment.eniId} yet: the ENI pass records it`,
    );
  }
  const link = linkWithMac(view, macAddress);
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

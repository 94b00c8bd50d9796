/**
 * What must hold at every moment of a simulated day, checked from the cluster's objects and from
 * what berth reports over its HTTP surface (`/ui/state`). Pure: each check answers the
 * violations it finds, as sentences that carry their evidence.
 */
import type { Ec2NetworkInterface } from '../shared/ec2/network.js';
import { type CidrBlock, cidrContains, parseCidr, parseIp } from '../shared/net/ip.js';
import { instanceIdOf } from '../shared/node-pool/provider-id.js';
import type { UiState } from '../shared/ui/state.js';
import type { SimNode, SimPod } from './cluster.js';
import { portKey } from './scheduler.js';

type Json = Record<string, unknown>;

/** No cluster IP and no node port carried by two live Services. */
export function sharedServiceValues(services: ReadonlyMap<string, Json>): string[] {
  const carriers = new Map<string, string>();
  const violations: string[] = [];
  for (const [name, service] of services) {
    const spec = (service.spec ?? {}) as Json;
    const values = [
      ...((spec.clusterIPs as string[] | undefined) ?? []).map((ip) => `cluster IP ${ip}`),
      ...((spec.ports as Json[] | undefined) ?? []).flatMap((port) =>
        typeof port.nodePort === 'number' ? [`node port ${port.nodePort}`] : [],
      ),
    ];
    for (const value of new Set(values)) {
      const other = carriers.get(value);
      if (other !== undefined)
        violations.push(`${value} is carried by Services ${other} and ${name}`);
      else carriers.set(value, name);
    }
  }
  return violations;
}

/** No two pods of one node binding one host port and protocol. */
export function hostPortClashes(pods: Iterable<SimPod>): string[] {
  const bound = new Map<string, string>();
  const violations: string[] = [];
  for (const pod of pods) {
    if (!pod.node) continue;
    for (const port of pod.hostPorts) {
      const key = `${pod.node} ${portKey(port)}`;
      const other = bound.get(key);
      if (other !== undefined)
        violations.push(`host port ${key} is bound by pods ${other} and ${pod.name}`);
      else bound.set(key, pod.name);
    }
  }
  return violations;
}

/** berth's use count of every host port equals the live pods holding it. */
export function hostPortCountMismatches(state: UiState, pods: Iterable<SimPod>): string[] {
  const held = new Map<number, number>();
  for (const pod of pods) {
    for (const { port } of pod.hostPorts) held.set(port, (held.get(port) ?? 0) + 1);
  }
  const violations: string[] = [];
  for (const range of state.hostPorts) {
    range.counts.forEach((count, offset) => {
      const port = range.first + offset;
      const live = held.get(port) ?? 0;
      if (count !== live) {
        violations.push(`host port ${port}: berth counts ${count} uses, ${live} live pods hold it`);
      }
    });
  }
  return violations;
}

/** berth's used cluster IPs and node ports equal the values live Services carry. */
export function exclusiveUsageMismatches(
  state: UiState,
  services: ReadonlyMap<string, Json>,
): string[] {
  const carried = { clusterIP: new Set<string>(), nodePort: new Set<string>() };
  for (const service of services.values()) {
    const spec = (service.spec ?? {}) as Json;
    for (const ip of (spec.clusterIPs as string[] | undefined) ?? []) carried.clusterIP.add(ip);
    for (const port of (spec.ports as Json[] | undefined) ?? []) {
      if (typeof port.nodePort === 'number') carried.nodePort.add(String(port.nodePort));
    }
  }
  const used = { clusterIP: 0, nodePort: 0 };
  for (const range of state.ranges) {
    if (range.kind === 'clusterIP' || range.kind === 'nodePort') used[range.kind] += range.used;
  }
  return (['clusterIP', 'nodePort'] as const).flatMap((kind) =>
    used[kind] === carried[kind].size
      ? []
      : [`berth holds ${used[kind]} ${kind} values, live Services carry ${carried[kind].size}`],
  );
}

/** No pod address held by two live pods. */
export function sharedPodIps(pods: Iterable<SimPod>): string[] {
  const holders = new Map<string, string>();
  const violations: string[] = [];
  for (const pod of pods) {
    if (pod.ip === undefined) continue;
    const other = holders.get(pod.ip);
    if (other !== undefined)
      violations.push(`pod IP ${pod.ip} is held by pods ${other} and ${pod.name}`);
    else holders.set(pod.ip, pod.name);
  }
  return violations;
}

/**
 * Every pod address is EC2's on the pod's node: a secondary address, or inside a delegated
 * prefix, of an ENI attached to the node's instance (the account's view, not berth's).
 */
export function podIpsOffTheirNode(
  pods: Iterable<SimPod>,
  nodes: ReadonlyMap<string, SimNode>,
  interfaces: readonly Ec2NetworkInterface[],
): string[] {
  const onInstance = new Map<string, { ips: Set<string>; prefixes: CidrBlock[] }>();
  for (const eni of interfaces) {
    const instance = eni.attachment?.instanceId;
    if (!instance) continue;
    const held = onInstance.get(instance) ?? { ips: new Set<string>(), prefixes: [] };
    for (const ip of eni.secondaryIps) held.ips.add(ip);
    for (const prefix of eni.ipv4Prefixes) {
      const block = parseCidr(prefix);
      if (block) held.prefixes.push(block);
    }
    onInstance.set(instance, held);
  }
  const violations: string[] = [];
  for (const pod of pods) {
    if (pod.ip === undefined || pod.node === undefined) continue;
    const instance = instanceIdOf(nodes.get(pod.node)?.providerId);
    const held = instance ? onInstance.get(instance) : undefined;
    const address = parseIp(pod.ip);
    const inPrefix =
      address !== undefined && held?.prefixes.some((block) => cidrContains(block, address));
    if (!held?.ips.has(pod.ip) && !inPrefix) {
      violations.push(
        `pod ${pod.name} has ${pod.ip}, which no ENI of node ${pod.node}'s instance ${instance ?? '(none)'} holds`,
      );
    }
  }
  return violations;
}

/** Every check of one moment. */
export function checkMoment(
  state: UiState,
  cluster: {
    readonly pods: ReadonlyMap<string, SimPod>;
    readonly services: ReadonlyMap<string, Json>;
    readonly nodes: ReadonlyMap<string, SimNode>;
  },
  interfaces: readonly Ec2NetworkInterface[],
): string[] {
  return [
    ...sharedPodIps(cluster.pods.values()),
    ...podIpsOffTheirNode(cluster.pods.values(), cluster.nodes, interfaces),
    ...sharedServiceValues(cluster.services),
    ...hostPortClashes(cluster.pods.values()),
    ...hostPortCountMismatches(state, cluster.pods.values()),
    ...exclusiveUsageMismatches(state, cluster.services),
  ];
}

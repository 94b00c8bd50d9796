/**
 * Where a pod goes, as kube-scheduler's filters would have it for a game server: a node with the
 * CPU the pod requests free and none of its host ports (number and protocol) taken, not
 * cordoned; among those, the fullest (berth asks for packing with a preferred podAffinity). Pure.
 */

/** A host port a pod binds on its node. */
export interface BoundPort {
  readonly port: number;
  readonly protocol: string;
}

/** A node as the scheduler sees it. */
export interface SchedulableNode {
  readonly name: string;
  readonly cpuMillis: number;
  readonly usedCpuMillis: number;
  readonly cordoned: boolean;
  /** `port/protocol` of every host port its pods bind. */
  readonly boundPorts: ReadonlySet<string>;
}

/** What a pod asks of a node. */
export interface PodDemand {
  readonly cpuMillis: number;
  readonly hostPorts: readonly BoundPort[];
}

/** The key a host port is bound under on a node. */
export function portKey(port: BoundPort): string {
  return `${port.port}/${port.protocol}`;
}

/** The node the pod goes to, or undefined when none fits (the pod stays Pending). */
export function scheduleOnto(
  pod: PodDemand,
  nodes: readonly SchedulableNode[],
): string | undefined {
  let best: SchedulableNode | undefined;
  for (const node of nodes) {
    if (node.cordoned) continue;
    if (node.cpuMillis - node.usedCpuMillis < pod.cpuMillis) continue;
    if (pod.hostPorts.some((port) => node.boundPorts.has(portKey(port)))) continue;
    if (!best || node.usedCpuMillis > best.usedCpuMillis) best = node;
  }
  return best?.name;
}

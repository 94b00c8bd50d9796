/**
 * The simulated cluster: a small stand-in for the apiserver, kube-scheduler and kubelet that
 * sends every pod CREATE, binding and DELETE and every Service CREATE and DELETE to berth's
 * admission endpoint over HTTP, as a real apiserver does, stores only what admission allowed
 * (with its patch applied), schedules pods onto nodes by CPU and host port (`scheduler.ts`), and
 * gives each running pod an address from berth's node IP API, as the CNI plugin does. What
 * berth's passes write through the Kubernetes API (cordons, Node deletions) is read back from
 * it, so the scheduler honours a cordon and a removed node takes its machine with it.
 */

import type { V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import { PORTS_ANNOTATION, REMOVAL_STARTED_AT } from '../shared/vocabulary/labels.js';
import { applyPatch, decodePatch } from './fakes/json-patch.js';
import type { KubeApiServer } from './fakes/kube-api-server.js';
import type { SimMachines } from './machines.js';
import type { IpHolder, NodeIpClient } from './node-ips.js';
import { type ReviewInput, review } from './reviews.js';
import { type BoundPort, portKey, scheduleOnto } from './scheduler.js';

/** An admission answer, as the webhook returns it. */
export interface AdmissionAnswer {
  readonly allowed: boolean;
  readonly patch?: string;
  readonly status?: { readonly code?: number; readonly message?: string };
}

/** Where reviews go: berth's `/admission`. */
export type Webhook = (review: unknown) => Promise<AdmissionAnswer>;

/** POSTs AdmissionReviews to `url` (berth's `/admission`). */
export function httpWebhook(url: string): Webhook {
  return async (review) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(review),
    });
    if (response.status !== 200) {
      throw new Error(`admission answered HTTP ${response.status}: ${await response.text()}`);
    }
    return ((await response.json()) as { response: AdmissionAnswer }).response;
  };
}

type Json = Record<string, unknown>;

/** A stored pod: where it runs (none while Pending), the host ports it binds, its address. */
export interface SimPod {
  readonly name: string;
  object: Json;
  readonly cpuMillis: number;
  readonly hostPorts: readonly BoundPort[];
  node?: string;
  /** The address berth's node IP API gave its sandbox; absent until one was given. */
  ip?: string;
  /** Day ms the sandbox first asked for an address and was told to wait, while it waits. */
  waitingForIpSince?: number;
}

/** A node: its CPU, the pods on it, and the machine behind it. */
export interface SimNode {
  readonly name: string;
  readonly cpuMillis: number;
  usedCpuMillis: number;
  readonly boundPorts: Set<string>;
  /** `spec.unschedulable` as the API last showed it (berth's scale pass cordons through it). */
  cordoned: boolean;
  /** berth has started removing it (`berth.dev/removal-started-at`), as the API last showed. */
  draining: boolean;
  /** `spec.providerID`: the node's EC2 instance in the fake, when the day has machines. */
  readonly providerId?: string;
}

/** A node that left the cluster while game servers ran on it, and who removed it. */
export interface NodeLoss {
  readonly node: string;
  readonly gameServers: readonly string[];
}

/** What the run counts. */
export interface ClusterCounts {
  podsCreated: number;
  podsDeleted: number;
  podsDenied: number;
  servicesCreated: number;
  servicesDeleted: number;
  servicesUpdated: number;
  servicesDenied: number;
  bindings: number;
  /** Bindings berth refused (a node it is removing): the pod waits for another node. */
  bindingsRefused: number;
  /** Pods that found no node at their CREATE (they wait for one). */
  podsPending: number;
  /** Sandboxes told to wait for an address (pool empty, subnet dry), and the longest wait. */
  podsWaitedForIp: number;
  longestIpWaitMs: number;
  /** Addresses given and given back through the node IP API. */
  ipsAssigned: number;
  ipsReleased: number;
}

/** What the simulated cluster is made of. */
export interface SimClusterOptions {
  readonly nodeCpuMillis: number;
  /** Labels every node carries (berth's `scale.nodeSelector` picks them). */
  readonly nodeLabels: Readonly<Record<string, string>>;
  /** Where the stored objects are readable as a Kubernetes API (for the passes), if anywhere. */
  readonly api?: KubeApiServer;
  /** The EC2 instances behind the nodes, when the day has an account. */
  readonly machines?: SimMachines;
  /** berth's node IP API, which the simulated CNI calls for each sandbox's address. */
  readonly nodeIps?: NodeIpClient;
  /** Day time, in ms since the day began. */
  readonly dayMs: () => number;
}

const NAMESPACE = 'games';

/** The host ports a patched pod binds (`spec.containers[].ports[].hostPort`). */
export function boundPortsOf(pod: Json): BoundPort[] {
  const containers = ((pod.spec as Json | undefined)?.containers ?? []) as Json[];
  return containers.flatMap((container) =>
    ((container.ports ?? []) as Json[]).flatMap((port) =>
      typeof port.hostPort === 'number'
        ? [{ port: port.hostPort, protocol: String(port.protocol ?? 'TCP') }]
        : [],
    ),
  );
}

/** The simulated apiserver and scheduler. */
export class SimCluster {
  readonly nodes = new Map<string, SimNode>();
  readonly pods = new Map<string, SimPod>();
  readonly services = new Map<string, Json>();
  readonly counts: ClusterCounts = {
    podsCreated: 0,
    podsDeleted: 0,
    podsDenied: 0,
    servicesCreated: 0,
    servicesDeleted: 0,
    servicesUpdated: 0,
    servicesDenied: 0,
    bindings: 0,
    bindingsRefused: 0,
    podsPending: 0,
    podsWaitedForIp: 0,
    longestIpWaitMs: 0,
    ipsAssigned: 0,
    ipsReleased: 0,
  };
  /** Milliseconds each admission request took, in order (what the apiserver waited). */
  readonly admissionMs: number[] = [];
  readonly #webhook: Webhook;
  readonly #options: SimClusterOptions;
  #nodeSerial = 0;

  constructor(webhook: Webhook, options: SimClusterOptions) {
    this.#options = options;
    this.#webhook = async (body) => {
      const started = performance.now();
      try {
        return await webhook(body);
      } finally {
        this.admissionMs.push(performance.now() - started);
      }
    };
  }

  /** Sends one AdmissionReview about an object of the simulated namespace. */
  #admit(input: Omit<ReviewInput, 'namespace'>): Promise<AdmissionAnswer> {
    return this.#webhook(review({ ...input, namespace: NAMESPACE }));
  }

  /** A node joins: its machine launched (when the day has an account) and its Node stored. */
  addNode(): string {
    const { api, machines, nodeCpuMillis, nodeLabels } = this.#options;
    const name = `game-node-${String(this.#nodeSerial++).padStart(3, '0')}`;
    const providerId = machines?.launch();
    this.nodes.set(name, {
      name,
      cpuMillis: nodeCpuMillis,
      usedCpuMillis: 0,
      boundPorts: new Set(),
      cordoned: false,
      draining: false,
      ...(providerId ? { providerId } : {}),
    });
    api?.addNode({
      metadata: { name, labels: { ...nodeLabels, 'kubernetes.io/hostname': name } },
      spec: providerId ? { providerID: providerId } : {},
      status: {
        allocatable: { cpu: `${nodeCpuMillis}m`, pods: '110' },
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    } satisfies V1Node);
    return name;
  }

  /**
   * Reads back what berth's passes changed through the API: cordons, and Nodes deleted (whose
   * machines go with them). Answers the nodes that left with game servers still on them: a
   * scale pass that did that interrupted live games.
   */
  async syncNodes(): Promise<NodeLoss[]> {
    const { api, machines } = this.#options;
    if (!api) return [];
    const losses: NodeLoss[] = [];
    for (const node of [...this.nodes.values()]) {
      const stored = api.nodes.get(node.name);
      const machineGone =
        node.providerId !== undefined && machines?.isRunning(node.providerId) === false;
      if (stored && !machineGone) {
        node.cordoned = stored.spec?.unschedulable === true;
        node.draining = stored.metadata?.annotations?.[REMOVAL_STARTED_AT] !== undefined;
        continue;
      }
      const lost = await this.#removeNode(node.name);
      if (lost.length > 0) losses.push({ node: node.name, gameServers: lost });
    }
    return losses;
  }

  /**
   * A game server: admitted, stored, scheduled and bound; false when admission denied it. `owner`
   * is the controller that made it (an Agones GameServer), when one did.
   */
  async createGameServer(
    name: string,
    cpuMillis: number,
    owner?: { readonly apiVersion: string; readonly kind: string; readonly uid: string },
  ): Promise<boolean> {
    const pod: Json = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: NAMESPACE,
        labels: { app: 'game' },
        ...(owner ? { ownerReferences: [{ ...owner, name, controller: true }] } : {}),
        annotations: {
          [PORTS_ANNOTATION]: JSON.stringify([
            { name: 'game', containerPort: 7777, protocol: 'UDP' },
          ]),
        },
      },
      spec: {
        containers: [
          {
            name: 'game',
            image: 'example/game:1',
            resources: { requests: { cpu: `${cpuMillis}m` } },
          },
        ],
      },
    };
    const answer = await this.#admit({ resource: 'pods', operation: 'CREATE', name, object: pod });
    if (!answer.allowed) {
      this.counts.podsDenied++;
      return false;
    }
    const patched = applyPatch(pod, decodePatch(answer.patch));
    const stored = (this.#options.api?.addPod({ ...patched, status: { phase: 'Pending' } }) ??
      patched) as Json;
    const created: SimPod = { name, object: stored, cpuMillis, hostPorts: boundPortsOf(stored) };
    this.pods.set(name, created);
    this.counts.podsCreated++;
    if (!(await this.#schedule(created))) this.counts.podsPending++;
    return true;
  }

  /** Deletes a game server: its DELETE goes to admission first, as the apiserver sends it. */
  async deleteGameServer(name: string): Promise<void> {
    const pod = this.pods.get(name);
    if (!pod) return;
    await this.#admit({
      resource: 'pods',
      operation: 'DELETE',
      name,
      oldObject: pod.object,
    });
    // The kubelet tears the sandbox down (CNI DEL) before the pod object goes.
    if (pod.node && pod.ip) {
      await this.#options.nodeIps?.release(pod.node, pod.ip, holderOf(pod));
      this.counts.ipsReleased++;
    }
    this.pods.delete(name);
    this.#options.api?.pods.delete(`${NAMESPACE}/${name}`);
    this.counts.podsDeleted++;
    const node = pod.node ? this.nodes.get(pod.node) : undefined;
    if (node) {
      node.usedCpuMillis -= pod.cpuMillis;
      for (const port of pod.hostPorts) node.boundPorts.delete(portKey(port));
    }
    await this.schedulePending();
  }

  /**
   * Reads back the game servers berth's passes took away through the API (an eviction, or the
   * garbage collection of a deleted Agones GameServer): each goes as a deleted pod does, its
   * DELETE to admission and its sandbox torn down. Answers their names.
   */
  async syncPods(): Promise<string[]> {
    const { api } = this.#options;
    if (!api) return [];
    const gone = [...this.pods.keys()].filter((name) => !api.pods.has(`${NAMESPACE}/${name}`));
    for (const name of gone) await this.deleteGameServer(name);
    return gone;
  }

  /** Room was made (a pod left, a node joined): pods waiting for a node try again, oldest first. */
  async schedulePending(): Promise<void> {
    for (const waiting of this.pods.values()) if (!waiting.node) await this.#schedule(waiting);
  }

  /**
   * A node fails: the node lifecycle controller deletes its pods (each DELETE goes to admission)
   * and the node leaves the cluster. Answers the game servers lost.
   */
  async failNode(name: string): Promise<number> {
    return (await this.#removeNode(name)).length;
  }

  /**
   * A node leaves with its machine; the pod garbage collector deletes its pods (each DELETE goes
   * to admission). Their sandboxes went with the machine: no CNI DEL reaches berth for them.
   * Answers the pods that were on it.
   */
  async #removeNode(name: string): Promise<string[]> {
    const lost = [...this.pods.values()].filter((pod) => pod.node === name);
    const node = this.nodes.get(name);
    this.nodes.delete(name);
    this.#options.api?.nodes.delete(name);
    this.#options.machines?.terminate(node?.providerId);
    for (const pod of lost) {
      pod.ip = undefined;
      await this.deleteGameServer(pod.name);
    }
    return lost.map((pod) => pod.name);
  }

  /** The node running the most game servers, if any runs one. */
  fullestNode(): string | undefined {
    let fullest: SimNode | undefined;
    for (const node of this.nodes.values()) {
      if (!fullest || node.usedCpuMillis > fullest.usedCpuMillis) fullest = node;
    }
    return fullest && fullest.usedCpuMillis > 0 ? fullest.name : undefined;
  }

  /** A Service: admitted and stored; false when admission denied it. */
  async createService(name: string, type: 'ClusterIP' | 'NodePort'): Promise<boolean> {
    const service: Json = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: NAMESPACE },
      spec: { type, selector: { app: name }, ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
    };
    const answer = await this.#admit({
      resource: 'services',
      operation: 'CREATE',
      name,
      object: service,
    });
    if (!answer.allowed) {
      this.counts.servicesDenied++;
      return false;
    }
    const patched = applyPatch(service, decodePatch(answer.patch));
    this.services.set(name, (this.#options.api?.addService(patched) ?? patched) as Json);
    this.counts.servicesCreated++;
    return true;
  }

  /**
   * A Service changes type, ClusterIP to NodePort or back, as an operator exposing or hiding a
   * game's lobby does: the UPDATE goes to admission with the stored object as `oldObject`, and
   * the stored Service becomes what admission allowed (a node port given, or taken back).
   * Answers false when admission denied it (the stored Service is unchanged).
   */
  async updateService(name: string): Promise<boolean> {
    const stored = this.services.get(name);
    if (!stored) return false;
    const spec = (stored.spec ?? {}) as Json;
    const type = spec.type === 'NodePort' ? 'ClusterIP' : 'NodePort';
    const ports = ((spec.ports ?? []) as Json[]).map(({ nodePort: _, ...port }) => port);
    const changed: Json = { ...stored, spec: { ...spec, type, ports } };
    const answer = await this.#admit({
      resource: 'services',
      operation: 'UPDATE',
      name,
      object: changed,
      oldObject: stored,
    });
    if (!answer.allowed) {
      this.counts.servicesDenied++;
      return false;
    }
    const patched = applyPatch(changed, decodePatch(answer.patch));
    this.services.set(name, patched);
    this.#options.api?.services.set(`${NAMESPACE}/${name}`, patched as V1Service);
    this.counts.servicesUpdated++;
    return true;
  }

  async deleteService(name: string): Promise<void> {
    const service = this.services.get(name);
    if (!service) return;
    await this.#admit({
      resource: 'services',
      operation: 'DELETE',
      name,
      oldObject: service,
    });
    this.services.delete(name);
    this.#options.api?.services.delete(`${NAMESPACE}/${name}`);
    this.counts.servicesDeleted++;
  }

  /** Binds the pod to a node that fits; false when none does (it stays Pending). */
  async #schedule(pod: SimPod): Promise<boolean> {
    if (pod.node) return true;
    const target = scheduleOnto(pod, [...this.nodes.values()]);
    const node = target ? this.nodes.get(target) : undefined;
    if (!target || !node) return false;
    // Assumed on the node before the binding is sent, as kube-scheduler does: scheduling that
    // runs meanwhile sees the node's CPU and ports taken.
    pod.node = target;
    node.usedCpuMillis += pod.cpuMillis;
    for (const port of pod.hostPorts) node.boundPorts.add(portKey(port));
    pod.object = {
      ...pod.object,
      spec: { ...(pod.object.spec as Json), nodeName: target },
      status: { phase: 'Running' },
    };
    this.#options.api?.pods.set(`${NAMESPACE}/${pod.name}`, pod.object as V1Pod);
    const binding = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: pod.name, namespace: NAMESPACE },
      target: { apiVersion: 'v1', kind: 'Node', name: target },
    };
    const answer = await this.#admit({
      resource: 'pods',
      subResource: 'binding',
      operation: 'CREATE',
      name: pod.name,
      object: binding,
    });
    if (!answer.allowed) {
      // Refused (berth is removing the node): the apiserver binds nothing, and the scheduler
      // forgets its assumption and tries the pod again later.
      this.counts.bindingsRefused++;
      pod.node = undefined;
      node.usedCpuMillis -= pod.cpuMillis;
      for (const port of pod.hostPorts) node.boundPorts.delete(portKey(port));
      const { nodeName: _, ...spec } = pod.object.spec as Json;
      pod.object = { ...pod.object, spec, status: { phase: 'Pending' } };
      this.#options.api?.pods.set(`${NAMESPACE}/${pod.name}`, pod.object as V1Pod);
      return false;
    }
    this.counts.bindings++;
    await this.#startSandbox(pod);
    return true;
  }

  /** Pods whose sandbox waits for an address ask again (kubelet retries a failed CNI ADD). */
  async retrySandboxes(): Promise<void> {
    for (const pod of [...this.pods.values()]) {
      if (pod.node && pod.waitingForIpSince !== undefined) await this.#startSandbox(pod);
    }
  }

  /** Pods running without an address yet. */
  waitingForIp(): number {
    let waiting = 0;
    for (const pod of this.pods.values()) if (pod.waitingForIpSince !== undefined) waiting++;
    return waiting;
  }

  /** The CNI ADD of the pod's sandbox: an address from berth, or a wait (berth said 503). */
  async #startSandbox(pod: SimPod): Promise<void> {
    const { nodeIps, dayMs } = this.#options;
    if (!nodeIps || !pod.node) return;
    const outcome = await nodeIps.assign(pod.node, holderOf(pod));
    // The pod may have been deleted, or its node lost, while berth answered.
    if (this.pods.get(pod.name) !== pod || !pod.node) {
      if ('ip' in outcome && pod.node) await nodeIps.release(pod.node, outcome.ip, holderOf(pod));
      return;
    }
    if ('waiting' in outcome) {
      if (pod.waitingForIpSince === undefined) {
        pod.waitingForIpSince = dayMs();
        this.counts.podsWaitedForIp++;
      }
      return;
    }
    if (pod.waitingForIpSince !== undefined) {
      const waited = dayMs() - pod.waitingForIpSince;
      this.counts.longestIpWaitMs = Math.max(this.counts.longestIpWaitMs, waited);
      pod.waitingForIpSince = undefined;
    }
    pod.ip = outcome.ip;
    this.counts.ipsAssigned++;
    pod.object = { ...pod.object, status: { ...(pod.object.status as Json), podIP: outcome.ip } };
    this.#options.api?.pods.set(`${NAMESPACE}/${pod.name}`, pod.object as V1Pod);
  }
}

/** The holder the CNI plugin names: the pod and its one sandbox. */
function holderOf(pod: SimPod): IpHolder {
  return { namespace: NAMESPACE, pod: pod.name, containerId: `sandbox-${pod.name}` };
}

/**
 * The simulated cluster: a small stand-in for the apiserver and kube-scheduler that sends every
 * pod CREATE, binding and DELETE and every Service CREATE and DELETE to berth's admission
 * endpoint over HTTP, as a real apiserver does, stores only what admission allowed (with its
 * patch applied), and schedules pods onto nodes by CPU and host port (`scheduler.ts`).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { PORTS_ANNOTATION } from '../shared/hostports/spec.js';
import { applyPatch, decodePatch } from './json-patch.js';
import type { KubeApiServer } from './kube-api-server.js';
import { review } from './reviews.js';
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

/** A stored pod: where it runs (none while Pending) and the host ports it binds. */
export interface SimPod {
  readonly name: string;
  object: Json;
  readonly cpuMillis: number;
  readonly hostPorts: readonly BoundPort[];
  node?: string;
}

/** A node: its CPU and the pods on it. */
export interface SimNode {
  readonly name: string;
  readonly cpuMillis: number;
  usedCpuMillis: number;
  readonly boundPorts: Set<string>;
  /** Nothing cordons a node of the stand-in yet (the scale pass does not run in it). */
  readonly cordoned: boolean;
}

/** What the run counts. */
export interface ClusterCounts {
  podsCreated: number;
  podsDeleted: number;
  podsDenied: number;
  servicesCreated: number;
  servicesDeleted: number;
  servicesDenied: number;
  bindings: number;
  /** Pods that found no node at their CREATE (they wait for one). */
  podsPending: number;
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
    servicesDenied: 0,
    bindings: 0,
    podsPending: 0,
  };
  /** Milliseconds each admission request took, in order (what the apiserver waited). */
  readonly admissionMs: number[] = [];
  readonly #webhook: Webhook;

  /** Where the stored objects are readable as a Kubernetes API (for the passes), if anywhere. */
  readonly #api: KubeApiServer | undefined;

  constructor(webhook: Webhook, nodes: number, nodeCpuMillis: number, api?: KubeApiServer) {
    this.#api = api;
    this.#webhook = async (body) => {
      const started = performance.now();
      try {
        return await webhook(body);
      } finally {
        this.admissionMs.push(performance.now() - started);
      }
    };
    for (let i = 0; i < nodes; i++) {
      const name = `game-node-${String(i).padStart(3, '0')}`;
      this.nodes.set(name, {
        name,
        cpuMillis: nodeCpuMillis,
        usedCpuMillis: 0,
        boundPorts: new Set(),
        cordoned: false,
      });
      api?.addNode({
        metadata: { name, labels: { 'kubernetes.io/hostname': name } },
        spec: {},
        status: { allocatable: { cpu: `${nodeCpuMillis}m`, pods: '110' } },
      });
    }
  }

  /** A game server: admitted, stored, scheduled and bound; false when admission denied it. */
  async createGameServer(name: string, cpuMillis: number): Promise<boolean> {
    const pod: Json = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: NAMESPACE,
        labels: { app: 'game' },
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
    const answer = await this.#webhook(
      review({ resource: 'pods', operation: 'CREATE', namespace: NAMESPACE, name, object: pod }),
    );
    if (!answer.allowed) {
      this.counts.podsDenied++;
      return false;
    }
    const patched = applyPatch(pod, decodePatch(answer.patch));
    const stored = (this.#api?.addPod({ ...patched, status: { phase: 'Pending' } }) ??
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
    await this.#webhook(
      review({
        resource: 'pods',
        operation: 'DELETE',
        namespace: NAMESPACE,
        name,
        oldObject: pod.object,
      }),
    );
    this.pods.delete(name);
    this.#api?.pods.delete(`${NAMESPACE}/${name}`);
    this.counts.podsDeleted++;
    const node = pod.node ? this.nodes.get(pod.node) : undefined;
    if (node) {
      node.usedCpuMillis -= pod.cpuMillis;
      for (const port of pod.hostPorts) node.boundPorts.delete(portKey(port));
    }
    // Room was made: pods waiting for a node try again, oldest first.
    for (const waiting of this.pods.values()) if (!waiting.node) await this.#schedule(waiting);
  }

  /**
   * A node fails: the node lifecycle controller deletes its pods (each DELETE goes to admission)
   * and the node leaves the cluster. Answers the game servers lost.
   */
  async failNode(name: string): Promise<number> {
    const lost = [...this.pods.values()].filter((pod) => pod.node === name);
    this.nodes.delete(name);
    this.#api?.nodes.delete(name);
    for (const pod of lost) await this.deleteGameServer(pod.name);
    return lost.length;
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
    const answer = await this.#webhook(
      review({
        resource: 'services',
        operation: 'CREATE',
        namespace: NAMESPACE,
        name,
        object: service,
      }),
    );
    if (!answer.allowed) {
      this.counts.servicesDenied++;
      return false;
    }
    const patched = applyPatch(service, decodePatch(answer.patch));
    this.services.set(name, (this.#api?.addService(patched) ?? patched) as Json);
    this.counts.servicesCreated++;
    return true;
  }

  async deleteService(name: string): Promise<void> {
    const service = this.services.get(name);
    if (!service) return;
    await this.#webhook(
      review({
        resource: 'services',
        operation: 'DELETE',
        namespace: NAMESPACE,
        name,
        oldObject: service,
      }),
    );
    this.services.delete(name);
    this.#api?.services.delete(`${NAMESPACE}/${name}`);
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
    this.#api?.pods.set(`${NAMESPACE}/${pod.name}`, pod.object as V1Pod);
    const binding = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: pod.name, namespace: NAMESPACE },
      target: { apiVersion: 'v1', kind: 'Node', name: target },
    };
    await this.#webhook(
      review({
        resource: 'pods',
        subResource: 'binding',
        operation: 'CREATE',
        namespace: NAMESPACE,
        name: pod.name,
        object: binding,
      }),
    );
    this.counts.bindings++;
    return true;
  }
}

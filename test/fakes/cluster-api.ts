/**
 * A hand-written in-memory `ClusterApi` for domain tests (Karpenter's `pkg/fake` shape): objects
 * in maps, every call recorded, errors queued per method. It keeps the adapter's contract:
 * absent reads are undefined, lists honour selectors and come in key order, a JSON patch whose
 * `test` fails throws `KubernetesConflictError`, deleting a missing node succeeds.
 */
import type { V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type {
  AgonesGameServer,
  ClusterApi,
  ClusterEvent,
  DeletePreconditions,
  EvictionOutcome,
  KarpenterNodePool,
  ListOptions,
} from '../../shared/k8s/cluster-api.js';
import { KubernetesConflictError, KubernetesNotFoundError } from '../../shared/k8s/errors.js';
import type { JsonPatchOperation } from '../../shared/vocabulary/patch.js';
import { applyJsonPatch, meetsPreconditions, selectorMatches } from './kube-api-server.js';

/** One recorded call. */
export interface ClusterApiCall {
  readonly method: keyof ClusterApi;
  readonly args: readonly unknown[];
}

/** In-memory `ClusterApi`; maps are keyed `name` (nodes) or `namespace/name`. */
export class FakeClusterApi implements ClusterApi {
  readonly nodes = new Map<string, V1Node>();
  readonly pods = new Map<string, V1Pod>();
  readonly services = new Map<string, V1Service>();
  /** Agones GameServers by namespace/name. */
  readonly gameServers = new Map<string, AgonesGameServer>();
  /** Karpenter NodePools by name. */
  readonly nodePools = new Map<string, KarpenterNodePool>();
  /** Pods (namespace/name) a PodDisruptionBudget protects: their eviction answers 429. */
  readonly disruptionBudgetRefuses = new Set<string>();
  readonly events: ClusterEvent[] = [];
  /** Deployment replicas set through `scaleDeployment`, by namespace/name. */
  readonly replicas = new Map<string, number>();
  readonly calls: ClusterApiCall[] = [];
  readonly #errors = new Map<keyof ClusterApi, unknown[]>();

  /** Stores nodes by name; returns this for chaining. */
  withNodes(...nodes: V1Node[]): this {
    for (const node of nodes) this.nodes.set(node.metadata?.name ?? '', structuredClone(node));
    return this;
  }

  withPods(...pods: V1Pod[]): this {
    for (const pod of pods) {
      this.pods.set(
        `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name}`,
        structuredClone(pod),
      );
    }
    return this;
  }

  withServices(...services: V1Service[]): this {
    for (const service of services) {
      this.services.set(
        `${service.metadata?.namespace ?? 'default'}/${service.metadata?.name}`,
        structuredClone(service),
      );
    }
    return this;
  }

  withGameServers(...gameServers: AgonesGameServer[]): this {
    for (const gs of gameServers) {
      this.gameServers.set(
        `${gs.metadata?.namespace ?? 'default'}/${gs.metadata?.name}`,
        structuredClone(gs),
      );
    }
    return this;
  }

  /** The next call of `method` throws `error` (queued: one error per call). */
  failNext(method: keyof ClusterApi, error: unknown): void {
    const queue = this.#errors.get(method) ?? [];
    queue.push(error);
    this.#errors.set(method, queue);
  }

  /** Calls of one method, in order. */
  callsOf(method: keyof ClusterApi): ClusterApiCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    this.#enter('getNode', [name]);
    const node = this.nodes.get(name);
    return node && structuredClone(node);
  }

  async getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    this.#enter('getPod', [namespace, name]);
    const pod = this.pods.get(`${namespace}/${name}`);
    return pod && structuredClone(pod);
  }

  async getService(namespace: string, name: string): Promise<V1Service | undefined> {
    this.#enter('getService', [namespace, name]);
    const service = this.services.get(`${namespace}/${name}`);
    return service && structuredClone(service);
  }

  async *listNodes(options: ListOptions = {}): AsyncIterable<V1Node> {
    this.#enter('listNodes', [options]);
    yield* listed('nodes', this.nodes, options);
  }

  async *listPods(options: ListOptions = {}): AsyncIterable<V1Pod> {
    this.#enter('listPods', [options]);
    yield* listed('pods', this.pods, options);
  }

  async *listServices(options: ListOptions = {}): AsyncIterable<V1Service> {
    this.#enter('listServices', [options]);
    yield* listed('services', this.services, options);
  }

  async patchNode(name: string, patch: readonly JsonPatchOperation[]): Promise<V1Node> {
    this.#enter('patchNode', [name, patch]);
    const target = { verb: 'patch', resource: `nodes/${name}` };
    const node = this.nodes.get(name);
    if (!node) throw new KubernetesNotFoundError(target, undefined);
    let patched: V1Node;
    try {
      patched = applyJsonPatch(node, patch) as V1Node;
      reviveDates(patched);
    } catch (error) {
      throw new KubernetesConflictError(
        target,
        422,
        { code: 422, reason: 'Invalid' },
        { cause: error },
      );
    }
    this.nodes.set(name, patched);
    return structuredClone(patched);
  }

  async deleteNode(name: string): Promise<void> {
    this.#enter('deleteNode', [name]);
    this.nodes.delete(name);
  }

  async createEvent(event: ClusterEvent): Promise<void> {
    this.#enter('createEvent', [event]);
    this.events.push(event);
  }

  async scaleDeployment(namespace: string, name: string, replicas: number): Promise<void> {
    this.#enter('scaleDeployment', [namespace, name, replicas]);
    this.replicas.set(`${namespace}/${name}`, replicas);
  }

  async patchPod(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<V1Pod> {
    this.#enter('patchPod', [namespace, name, patch]);
    const target = { verb: 'patch', resource: `namespaces/${namespace}/pods/${name}` };
    const pod = this.pods.get(`${namespace}/${name}`);
    if (!pod) throw new KubernetesNotFoundError(target, undefined);
    let patched: V1Pod;
    try {
      patched = applyJsonPatch(pod, patch) as V1Pod;
    } catch (error) {
      throw new KubernetesConflictError(
        target,
        422,
        { code: 422, reason: 'Invalid' },
        { cause: error },
      );
    }
    this.pods.set(`${namespace}/${name}`, patched);
    return structuredClone(patched);
  }

  async evictPod(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<EvictionOutcome> {
    this.#enter('evictPod', [namespace, name, preconditions]);
    const key = `${namespace}/${name}`;
    const pod = this.pods.get(key);
    if (!pod) return 'gone';
    if (!meetsPreconditions(pod.metadata, preconditions)) return 'changed';
    if (this.disruptionBudgetRefuses.has(key)) return 'refused';
    this.pods.delete(key);
    return 'evicted';
  }

  async *listGameServers(options: ListOptions = {}): AsyncIterable<AgonesGameServer> {
    this.#enter('listGameServers', [options]);
    for (const key of [...this.gameServers.keys()].sort()) {
      const gs = this.gameServers.get(key);
      if (gs) yield structuredClone(gs);
    }
  }

  async deleteGameServer(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<'deleted' | 'changed' | 'gone'> {
    this.#enter('deleteGameServer', [namespace, name, preconditions]);
    const key = `${namespace}/${name}`;
    const gs = this.gameServers.get(key);
    if (!gs) return 'gone';
    if (!meetsPreconditions(gs.metadata, preconditions)) return 'changed';
    this.gameServers.delete(key);
    return 'deleted';
  }

  async getKarpenterNodePool(name: string): Promise<KarpenterNodePool | undefined> {
    this.#enter('getKarpenterNodePool', [name]);
    const pool = this.nodePools.get(name);
    return pool && structuredClone(pool);
  }

  /** Records the call, then throws the queued error if there is one. */
  #enter(method: keyof ClusterApi, args: readonly unknown[]): void {
    this.calls.push({ method, args });
    const queue = this.#errors.get(method);
    if (queue && queue.length > 0) throw queue.shift();
  }
}

function* listed<T extends object>(
  resource: 'nodes' | 'pods' | 'services',
  objects: Map<string, T>,
  options: ListOptions,
): Generator<T> {
  const keys = [...objects.keys()].sort();
  for (const key of keys) {
    const object = objects.get(key);
    if (object && selectorMatches(resource, object, options)) yield structuredClone(object);
  }
}

/** client-node hands out metadata timestamps as Dates; keep them so after a JSON round trip. */
function reviveDates(node: V1Node): void {
  const metadata = node.metadata;
  if (!metadata) return;
  for (const key of ['creationTimestamp', 'deletionTimestamp'] as const) {
    const value: unknown = metadata[key];
    if (typeof value === 'string') metadata[key] = new Date(value);
  }
}

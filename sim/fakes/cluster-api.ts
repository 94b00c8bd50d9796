/**
 * The one in-memory `ClusterApi` (Karpenter's `pkg/fake` shape) for the domain tests and the
 * benches: objects in maps, every call recorded, errors queued per call. It keeps the contract
 * `test/contracts/cluster-api.contract.ts` holds it and the client-node adapter to: absent
 * reads are undefined, lists honour the apiserver's selectors and come in key order and in
 * pages, a patch that cannot apply throws `KubernetesConflictError` and bumps nothing, a patch
 * that applies bumps `resourceVersion`, deleting a missing node succeeds, and a deleted GameServer
 * takes the pods it owns. Beyond the contract, a deleted node takes the pods bound to it (the pod
 * garbage collector), which the scale tests rely on.
 */

import { setImmediate } from 'node:timers/promises';
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
import { VPC_CNI_DAEMONSET } from '../../shared/node-pool/vpc-cni.js';
import { K8S_APP_LABEL } from '../../shared/vocabulary/labels.js';
import type { JsonPatchOperation } from '../../shared/vocabulary/patch.js';
import { applyPatch } from './json-patch.js';
import { meetsPreconditions, selectorMatches } from './kube-api-server.js';

/** One recorded call. */
export interface ClusterApiCall {
  readonly method: keyof ClusterApi;
  readonly args: readonly unknown[];
}

/** The calls that change the cluster, which `mutations` keeps. */
const MUTATING: ReadonlySet<keyof ClusterApi> = new Set<keyof ClusterApi>([
  'patchNode',
  'deleteNode',
  'createEvent',
  'scaleDeployment',
  'patchPod',
  'evictPod',
  'deleteGameServer',
  'patchGameServer',
]);

/** The apiserver's default page when a list names none; client-node asks for 500 too. */
const DEFAULT_PAGE_SIZE = 500;

const keyOf = (metadata: { namespace?: string; name?: string } | undefined) =>
  `${metadata?.namespace ?? 'default'}/${metadata?.name ?? ''}`;

/** In-memory `ClusterApi`; maps are keyed `name` (nodes, NodePools) or `namespace/name`. */
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
  /** Pages handed out by every list so far, as the apiserver would count them. */
  pages = 0;
  /** Runs after every list is read, so a test can change the cluster behind a pass's back. */
  afterList: () => void = () => {};
  readonly #errors = new Map<string, unknown[]>();
  #version = 100;

  /** Stores nodes by name; returns this for chaining. */
  withNodes(...nodes: V1Node[]): this {
    for (const node of nodes) this.nodes.set(node.metadata?.name ?? '', structuredClone(node));
    return this;
  }

  /** Stores (or replaces) pods by namespace/name. */
  withPods(...pods: V1Pod[]): this {
    for (const pod of pods) this.pods.set(keyOf(pod.metadata), structuredClone(pod));
    return this;
  }

  /** Stores Services by namespace/name. */
  withServices(...services: V1Service[]): this {
    for (const service of services) {
      this.services.set(keyOf(service.metadata), structuredClone(service));
    }
    return this;
  }

  /** Stores Agones GameServers by namespace/name. */
  withGameServers(...gameServers: AgonesGameServer[]): this {
    for (const gs of gameServers) this.gameServers.set(keyOf(gs.metadata), structuredClone(gs));
    return this;
  }

  /**
   * The next call matching `key` throws `error` (queued: one error per call). `key` is a method
   * (`getNode`), or a method and its object (`patchNode:b`, `evictPod:games/r1`).
   */
  failNext(key: keyof ClusterApi | `${keyof ClusterApi}:${string}`, error: unknown): void {
    this.#errors.set(key, [...(this.#errors.get(key) ?? []), error]);
  }

  /** Calls of one method, in order. */
  callsOf(method: keyof ClusterApi): ClusterApiCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  /** The recorded calls that change the cluster. */
  mutations(): ClusterApiCall[] {
    return this.calls.filter((call) => MUTATING.has(call.method));
  }

  /** Bumps a node's resourceVersion, as a kubelet or a user changing it would. */
  touch(name: string): void {
    const metadata = this.nodes.get(name)?.metadata;
    if (metadata) metadata.resourceVersion = this.#nextVersion();
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    this.#enter('getNode', [name], name);
    const node = this.nodes.get(name);
    return node && structuredClone(node);
  }

  async getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    this.#enter('getPod', [namespace, name], `${namespace}/${name}`);
    const pod = this.pods.get(`${namespace}/${name}`);
    return pod && structuredClone(pod);
  }

  async getService(namespace: string, name: string): Promise<V1Service | undefined> {
    this.#enter('getService', [namespace, name], `${namespace}/${name}`);
    const service = this.services.get(`${namespace}/${name}`);
    return service && structuredClone(service);
  }

  async *listNodes(options: ListOptions = {}): AsyncIterable<V1Node> {
    this.#enter('listNodes', [options]);
    yield* this.#listed('nodes', this.nodes, options);
  }

  async *listPods(options: ListOptions = {}): AsyncIterable<V1Pod> {
    this.#enter('listPods', [options]);
    yield* this.#listed('pods', this.pods, options);
  }

  async *listServices(options: ListOptions = {}): AsyncIterable<V1Service> {
    this.#enter('listServices', [options]);
    yield* this.#listed('services', this.services, options);
  }

  async patchNode(name: string, patch: readonly JsonPatchOperation[]): Promise<V1Node> {
    this.#enter('patchNode', [name, patch], name);
    const patched = this.#patched(this.nodes, name, `nodes/${name}`, patch);
    reviveDates(patched);
    return patched;
  }

  async deleteNode(name: string): Promise<void> {
    this.#enter('deleteNode', [name], name);
    this.nodes.delete(name);
    for (const [key, pod] of this.pods) if (pod.spec?.nodeName === name) this.pods.delete(key);
  }

  async createEvent(event: ClusterEvent): Promise<void> {
    this.#enter('createEvent', [event]);
    this.events.push(event);
  }

  async scaleDeployment(namespace: string, name: string, replicas: number): Promise<void> {
    this.#enter('scaleDeployment', [namespace, name, replicas], `${namespace}/${name}`);
    this.replicas.set(`${namespace}/${name}`, replicas);
  }

  async patchPod(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<V1Pod> {
    const key = `${namespace}/${name}`;
    this.#enter('patchPod', [namespace, name, patch], key);
    return this.#patched(this.pods, key, `namespaces/${namespace}/pods/${name}`, patch);
  }

  async evictPod(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<EvictionOutcome> {
    const key = `${namespace}/${name}`;
    this.#enter('evictPod', [namespace, name, preconditions], key);
    const pod = this.pods.get(key);
    if (!pod) return 'gone';
    if (!meetsPreconditions(pod.metadata, preconditions)) return 'changed';
    if (this.disruptionBudgetRefuses.has(key)) return 'refused';
    this.pods.delete(key);
    return 'evicted';
  }

  async *listGameServers(options: ListOptions = {}): AsyncIterable<AgonesGameServer> {
    this.#enter('listGameServers', [options]);
    yield* this.#listed(undefined, this.gameServers, options);
  }

  async deleteGameServer(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<'deleted' | 'changed' | 'gone'> {
    const key = `${namespace}/${name}`;
    this.#enter('deleteGameServer', [namespace, name, preconditions], key);
    const gs = this.gameServers.get(key);
    if (!gs) return 'gone';
    if (!meetsPreconditions(gs.metadata, preconditions)) return 'changed';
    this.gameServers.delete(key);
    // The garbage collector deletes the pods the GameServer owns, as on the loopback apiserver.
    const uid = gs.metadata?.uid;
    for (const [podKey, pod] of this.pods) {
      if (uid && pod.metadata?.ownerReferences?.some((owner) => owner.uid === uid)) {
        this.pods.delete(podKey);
      }
    }
    return 'deleted';
  }

  async patchGameServer(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<AgonesGameServer> {
    const key = `${namespace}/${name}`;
    this.#enter('patchGameServer', [namespace, name, patch], key);
    return this.#patched(
      this.gameServers,
      key,
      `namespaces/${namespace}/gameservers.agones.dev/${name}`,
      patch,
    );
  }

  async getKarpenterNodePool(name: string): Promise<KarpenterNodePool | undefined> {
    this.#enter('getKarpenterNodePool', [name], name);
    const pool = this.nodePools.get(name);
    return pool && structuredClone(pool);
  }

  /** Records the call, then throws the error queued for its object or for its method. */
  #enter(method: keyof ClusterApi, args: readonly unknown[], object?: string): void {
    this.calls.push({ method, args });
    for (const key of object === undefined ? [method] : [`${method}:${object}`, method]) {
      const queue = this.#errors.get(key);
      if (queue && queue.length > 0) throw queue.shift();
    }
  }

  #nextVersion(): string {
    return String(++this.#version);
  }

  /**
   * The stored object after `patch`, stored under a new resourceVersion: 404 when absent, and 422
   * (a `KubernetesConflictError`, as the adapter reports it) when an operation cannot apply.
   */
  #patched<T extends V1Node | V1Pod | AgonesGameServer>(
    objects: Map<string, T>,
    key: string,
    resource: string,
    patch: readonly JsonPatchOperation[],
  ): T {
    const target = { verb: 'patch', resource };
    const current = objects.get(key);
    if (!current) throw new KubernetesNotFoundError(target, undefined);
    let patched: T;
    try {
      patched = applyPatch(current, patch);
    } catch (error) {
      throw new KubernetesConflictError(
        target,
        422,
        { code: 422, reason: 'Invalid' },
        { cause: error },
      );
    }
    const versioned = {
      ...patched,
      metadata: { ...patched.metadata, resourceVersion: this.#nextVersion() },
    };
    objects.set(key, versioned);
    return structuredClone(versioned);
  }

  /**
   * The objects matching `options`, read when the list is called, in key order and in pages of
   * `pageSize`: the event loop runs between pages, as it does between client-node's requests.
   */
  async *#listed<T extends object>(
    resource: 'nodes' | 'pods' | 'services' | undefined,
    objects: Map<string, T>,
    options: ListOptions,
  ): AsyncIterable<T> {
    const matching = [...objects.keys()].sort().flatMap((key) => {
      const object = objects.get(key);
      return object && (!resource || selectorMatches(resource, object, options))
        ? [structuredClone(object)]
        : [];
    });
    this.afterList();
    const size = options.pageSize ?? DEFAULT_PAGE_SIZE;
    for (let start = 0; start < matching.length; start += size) {
      if (start > 0) await setImmediate();
      this.pages++;
      yield* matching.slice(start, start + size);
    }
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

/** A node backed by EC2 instance `instanceId` (its `providerID`), as the ENI pools read one. */
export function ec2Node(
  name: string,
  instanceId: string,
  zone = 'us-east-1a',
  maxPods?: number,
): V1Node {
  return {
    metadata: { name },
    spec: { providerID: `aws:///${zone}/${instanceId}` },
    ...(maxPods === undefined ? {} : { status: { allocatable: { pods: String(maxPods) } } }),
  };
}

/** A pod bound to `nodeName`, Running unless told; a StatefulSet's or sticky when asked. */
export function boundPod(
  namespace: string,
  name: string,
  nodeName: string,
  extra: { statefulSet?: boolean; stickyAnnotation?: boolean; phase?: string } = {},
): V1Pod {
  return {
    metadata: {
      namespace,
      name,
      ...(extra.stickyAnnotation ? { annotations: { 'berth.dev/sticky-ip': 'true' } } : {}),
      ...(extra.statefulSet
        ? {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'u-1' },
            ],
          }
        : {}),
    },
    spec: { nodeName, containers: [] },
    status: { phase: extra.phase ?? 'Running' },
  };
}

/** The VPC CNI's aws-node pod on `nodeName`, as its DaemonSet in `kube-system` makes it. */
export function vpcCniPod(nodeName: string, phase = 'Running'): V1Pod {
  return {
    metadata: {
      namespace: VPC_CNI_DAEMONSET.namespace,
      name: `${VPC_CNI_DAEMONSET.name}-${nodeName}`,
      labels: { [K8S_APP_LABEL]: VPC_CNI_DAEMONSET.name },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'DaemonSet', name: VPC_CNI_DAEMONSET.name, uid: 'u-cni' },
      ],
    },
    spec: { nodeName, containers: [] },
    status: { phase },
  };
}

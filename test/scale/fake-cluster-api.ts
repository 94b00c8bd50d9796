/**
 * A hand-written `ClusterApi` for scale tests: nodes and pods in memory, JSON patches applied
 * with RFC 6902 `test` semantics, every call recorded, failures injectable per call.
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
import type { JsonPatchOperation } from '../../shared/vocabulary/patch.js';
import { meetsPreconditions } from '../fakes/kube-api-server.js';

/** One recorded call. */
export type ClusterCall =
  | { readonly method: 'listNodes' | 'listPods'; readonly options?: ListOptions }
  | {
      readonly method: 'patchNode';
      readonly name: string;
      readonly patch: readonly JsonPatchOperation[];
    }
  | { readonly method: 'deleteNode'; readonly name: string }
  | { readonly method: 'createEvent'; readonly event: ClusterEvent }
  | {
      readonly method: 'patchPod';
      readonly namespace: string;
      readonly name: string;
      readonly patch: readonly JsonPatchOperation[];
    }
  | {
      readonly method: 'evictPod' | 'deleteGameServer';
      readonly namespace: string;
      readonly name: string;
      readonly preconditions?: DeletePreconditions;
    }
  | {
      readonly method: 'scaleDeployment';
      readonly namespace: string;
      readonly name: string;
      readonly replicas: number;
    };

const MUTATING: ReadonlySet<string> = new Set([
  'patchNode',
  'deleteNode',
  'createEvent',
  'scaleDeployment',
  'patchPod',
  'evictPod',
  'deleteGameServer',
]);

/** In-memory cluster. */
export class FakeClusterApi implements ClusterApi {
  readonly nodes = new Map<string, V1Node>();
  pods: V1Pod[] = [];
  /** Agones GameServers. */
  gameServers: AgonesGameServer[] = [];
  /** Karpenter NodePools by name. */
  readonly nodePools = new Map<string, KarpenterNodePool>();
  /** Pods (namespace/name) whose PodDisruptionBudget allows no eviction now (429). */
  readonly disruptionBudgetRefuses = new Set<string>();
  readonly calls: ClusterCall[] = [];
  /** Deployment replicas set through `scaleDeployment`, by namespace/name. */
  readonly replicas = new Map<string, number>();
  /** Errors to throw, keyed `patchNode:<node>` / `deleteNode:<node>` / `createEvent`; each used once. */
  readonly failures = new Map<string, Error[]>();
  /** Runs after every list, so a test can change the cluster behind the pass's back. */
  afterList: () => void = () => {};
  #version = 100;

  constructor(nodes: readonly V1Node[] = [], pods: readonly V1Pod[] = []) {
    for (const n of nodes) this.nodes.set(n.metadata?.name ?? '', structuredClone(n));
    this.pods = pods.map((p) => structuredClone(p));
  }

  /** Queues `error` for the next call matching `key`. */
  failNext(key: string, error: Error): void {
    this.failures.set(key, [...(this.failures.get(key) ?? []), error]);
  }

  /** The recorded calls that change the cluster. */
  mutations(): ClusterCall[] {
    return this.calls.filter((c) => MUTATING.has(c.method));
  }

  /** Bumps a node's resourceVersion, as a kubelet or a user changing it would. */
  touch(name: string): void {
    const n = this.nodes.get(name);
    if (n?.metadata) n.metadata.resourceVersion = String(++this.#version);
  }

  #fail(key: string): void {
    const queued = this.failures.get(key);
    const error = queued?.shift();
    if (error) throw error;
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    const n = this.nodes.get(name);
    return n && structuredClone(n);
  }

  async getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    const p = this.pods.find(
      (x) => x.metadata?.namespace === namespace && x.metadata?.name === name,
    );
    return p && structuredClone(p);
  }

  async *listNodes(options?: ListOptions): AsyncIterable<V1Node> {
    this.calls.push({ method: 'listNodes', options });
    const wanted = parseEqualities(options?.labelSelector);
    const out = [...this.nodes.values()]
      .filter((n) => wanted.every(([k, v]) => n.metadata?.labels?.[k] === v))
      .map((n) => structuredClone(n));
    this.afterList();
    yield* out;
  }

  async *listPods(options?: ListOptions): AsyncIterable<V1Pod> {
    this.calls.push({ method: 'listPods', options });
    const terms = (options?.fieldSelector ?? '').split(',');
    const excluded = terms.flatMap((term) =>
      term.startsWith('status.phase!=') ? [term.slice(14)] : [],
    );
    const onNode = terms.find((term) => term.startsWith('spec.nodeName='))?.slice(14);
    const out = this.pods
      .filter((p) => !excluded.includes(p.status?.phase ?? ''))
      .filter((p) => onNode === undefined || p.spec?.nodeName === onNode)
      .map((p) => structuredClone(p));
    this.afterList();
    yield* out;
  }

  async getService(): Promise<V1Service | undefined> {
    return undefined;
  }

  async *listServices(): AsyncIterable<V1Service> {}

  async patchNode(name: string, patch: readonly JsonPatchOperation[]): Promise<V1Node> {
    this.calls.push({ method: 'patchNode', name, patch });
    this.#fail(`patchNode:${name}`);
    const current = this.nodes.get(name);
    if (!current) throw Object.assign(new Error(`nodes "${name}" not found`), { code: 404 });
    const next = applyJsonPatch(current, patch);
    if (next.metadata) next.metadata.resourceVersion = String(++this.#version);
    this.nodes.set(name, next);
    return structuredClone(next);
  }

  async deleteNode(name: string): Promise<void> {
    this.calls.push({ method: 'deleteNode', name });
    this.#fail(`deleteNode:${name}`);
    this.nodes.delete(name);
    this.pods = this.pods.filter((p) => p.spec?.nodeName !== name);
  }

  async createEvent(event: ClusterEvent): Promise<void> {
    this.calls.push({ method: 'createEvent', event });
    this.#fail('createEvent');
  }

  async scaleDeployment(namespace: string, name: string, replicas: number): Promise<void> {
    this.calls.push({ method: 'scaleDeployment', namespace, name, replicas });
    this.replicas.set(`${namespace}/${name}`, replicas);
  }

  async patchPod(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<V1Pod> {
    this.calls.push({ method: 'patchPod', namespace, name, patch });
    this.#fail(`patchPod:${namespace}/${name}`);
    const index = this.pods.findIndex(
      (p) => p.metadata?.namespace === namespace && p.metadata?.name === name,
    );
    const current = this.pods[index];
    if (!current) throw Object.assign(new Error(`pods "${name}" not found`), { code: 404 });
    const next = applyJsonPatch(current, patch);
    if (next.metadata) next.metadata.resourceVersion = String(++this.#version);
    this.pods[index] = next;
    return structuredClone(next);
  }

  async evictPod(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<EvictionOutcome> {
    this.calls.push({ method: 'evictPod', namespace, name, preconditions });
    this.#fail(`evictPod:${namespace}/${name}`);
    const pod = this.pods.find(
      (p) => p.metadata?.namespace === namespace && p.metadata?.name === name,
    );
    if (!pod) return 'gone';
    if (!meetsPreconditions(pod.metadata, preconditions)) return 'changed';
    if (this.disruptionBudgetRefuses.has(`${namespace}/${name}`)) return 'refused';
    this.pods = this.pods.filter((p) => p !== pod);
    return 'evicted';
  }

  async *listGameServers(): AsyncIterable<AgonesGameServer> {
    const out = this.gameServers.map((gs) => structuredClone(gs));
    this.afterList();
    yield* out;
  }

  async deleteGameServer(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<'deleted' | 'changed' | 'gone'> {
    this.calls.push({ method: 'deleteGameServer', namespace, name, preconditions });
    this.#fail(`deleteGameServer:${namespace}/${name}`);
    const gs = this.gameServers.find(
      (g) => g.metadata?.namespace === namespace && g.metadata?.name === name,
    );
    if (!gs) return 'gone';
    if (!meetsPreconditions(gs.metadata, preconditions)) return 'changed';
    this.gameServers = this.gameServers.filter((g) => g !== gs);
    // Agones deletes the pod with its GameServer.
    this.pods = this.pods.filter(
      (p) => !(p.metadata?.namespace === namespace && p.metadata?.name === name),
    );
    return 'deleted';
  }

  async getKarpenterNodePool(name: string): Promise<KarpenterNodePool | undefined> {
    const pool = this.nodePools.get(name);
    return pool && structuredClone(pool);
  }

  /** Events recorded so far. */
  events(): ClusterEvent[] {
    return this.calls.flatMap((c) => (c.method === 'createEvent' ? [c.event] : []));
  }
}

function parseEqualities(selector: string | undefined): Array<[string, string]> {
  if (!selector) return [];
  return selector.split(',').map((term) => {
    const [k = '', v = ''] = term.split('=');
    return [k, v];
  });
}

/** RFC 6902 over plain JSON objects; a failed `test` rejects the whole patch, as the apiserver does. */
export function applyJsonPatch<T>(document: T, patch: readonly JsonPatchOperation[]): T {
  const root = structuredClone(document) as unknown as Record<string, unknown>;
  for (const op of patch) {
    const segments = op.path
      .split('/')
      .slice(1)
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = segments.pop();
    if (last === undefined) throw new Error(`bad path ${op.path}`);
    let parent: Record<string, unknown> = root;
    for (const segment of segments) {
      const child = parent[segment];
      if (typeof child !== 'object' || child === null) {
        throw new Error(`the server rejected our request: path ${op.path} does not exist`);
      }
      parent = child as Record<string, unknown>;
    }
    const exists = Object.hasOwn(parent, last);
    switch (op.op) {
      case 'test':
        if (!exists || JSON.stringify(parent[last]) !== JSON.stringify(op.value)) {
          throw new Error(`the server rejected our request: test of ${op.path} failed`);
        }
        break;
      case 'add':
        parent[last] = structuredClone(op.value);
        break;
      case 'replace':
        if (!exists) throw new Error(`the server rejected our request: ${op.path} missing`);
        parent[last] = structuredClone(op.value);
        break;
      case 'remove':
        if (!exists) throw new Error(`the server rejected our request: ${op.path} missing`);
        delete parent[last];
        break;
    }
  }
  return root as unknown as T;
}

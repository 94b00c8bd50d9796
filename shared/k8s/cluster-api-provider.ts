/**
 * A `ClusterApi` whose underlying client may be replaced between calls (EKS tokens expire). The
 * composition root wires one `ProvidedClusterApi` at module scope; each call asks the provider
 * for the current client, so domain code never sees a token.
 */
import type { V1IPAddress, V1Node, V1Pod, V1Service, V1ServiceCIDR } from '@kubernetes/client-node';
import type { JsonPatchOperation } from '../vocabulary/patch.js';
import type {
  AgonesGameServer,
  ClusterApi,
  ClusterEvent,
  DeletePreconditions,
  EvictionOutcome,
  KarpenterNodePool,
  ListOptions,
} from './cluster-api.js';
import { isUnauthorized } from './errors.js';

/** Hands out the `ClusterApi` to use now. */
export interface ClusterApiProvider {
  get(): Promise<ClusterApi>;
  /** Drops the cached client after the apiserver refused its token (401). */
  invalidate?(): void;
}

/** `ClusterApi` that resolves its client from a provider on every call. */
export class ProvidedClusterApi implements ClusterApi {
  readonly #provider: ClusterApiProvider;

  constructor(provider: ClusterApiProvider) {
    this.#provider = provider;
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    return this.#call((api) => api.getNode(name));
  }

  async getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    return this.#call((api) => api.getPod(namespace, name));
  }

  async getService(namespace: string, name: string): Promise<V1Service | undefined> {
    return this.#call((api) => api.getService(namespace, name));
  }

  async *listNodes(options?: ListOptions): AsyncIterable<V1Node> {
    // One client serves the whole list: continue tokens are tied to the server, not the token,
    // but a list should not straddle a rebuild anyway.
    yield* (await this.#provider.get()).listNodes(options);
  }

  async *listPods(options?: ListOptions): AsyncIterable<V1Pod> {
    yield* (await this.#provider.get()).listPods(options);
  }

  async *listServices(options?: ListOptions): AsyncIterable<V1Service> {
    yield* (await this.#provider.get()).listServices(options);
  }

  async patchNode(name: string, patch: readonly JsonPatchOperation[]): Promise<V1Node> {
    return this.#call((api) => api.patchNode(name, patch));
  }

  async deleteNode(name: string): Promise<void> {
    return this.#call((api) => api.deleteNode(name));
  }

  async createEvent(event: ClusterEvent): Promise<void> {
    return this.#call((api) => api.createEvent(event));
  }

  async scaleDeployment(namespace: string, name: string, replicas: number): Promise<void> {
    return this.#call((api) => api.scaleDeployment(namespace, name, replicas));
  }

  async patchPod(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<V1Pod> {
    return this.#call((api) => api.patchPod(namespace, name, patch));
  }

  async evictPod(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<EvictionOutcome> {
    return this.#call((api) => api.evictPod(namespace, name, preconditions));
  }

  async *listGameServers(options?: ListOptions): AsyncIterable<AgonesGameServer> {
    yield* (await this.#provider.get()).listGameServers(options);
  }

  async deleteGameServer(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<'deleted' | 'changed' | 'gone'> {
    return this.#call((api) => api.deleteGameServer(namespace, name, preconditions));
  }

  async patchGameServer(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<AgonesGameServer> {
    return this.#call((api) => api.patchGameServer(namespace, name, patch));
  }

  async getKarpenterNodePool(name: string): Promise<KarpenterNodePool | undefined> {
    return this.#call((api) => api.getKarpenterNodePool(name));
  }

  async listServiceCidrs(): Promise<readonly V1ServiceCIDR[] | undefined> {
    return this.#call(async (api) => (api.listServiceCidrs ? api.listServiceCidrs() : undefined));
  }

  async *listIpAddresses(options?: ListOptions): AsyncIterable<V1IPAddress> {
    const api = await this.#provider.get();
    if (api.listIpAddresses) yield* api.listIpAddresses(options);
  }

  /**
   * One call; a refused token (401) drops the client and the call is made once more with a new
   * one. A 401 means the apiserver did nothing, so a write is safe to repeat. Lists are not
   * retried: a page may already have been handed out.
   */
  async #call<T>(call: (api: ClusterApi) => Promise<T>): Promise<T> {
    try {
      return await call(await this.#provider.get());
    } catch (error) {
      if (!isUnauthorized(error) || !this.#provider.invalidate) throw error;
      this.#provider.invalidate();
      return call(await this.#provider.get());
    }
  }
}

/**
 * `ClusterApi` over `@kubernetes/client-node` 2.0.1 (CoreV1Api, object parameters). Every
 * `ApiException` leaves this file as one of berth's typed errors (./errors.ts); lists are paged
 * with limit/continue and handed out item by item, so a pass never holds a whole cluster's pods
 * in one response.
 */
import { createHash } from 'node:crypto';
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  type CoreV1Event,
  CustomObjectsApi,
  type KubeConfig,
  NetworkingV1Api,
  type V1IPAddress,
  type V1ListMeta,
  type V1Node,
  type V1Pod,
  type V1Service,
  type V1ServiceCIDR,
} from '@kubernetes/client-node';
import type { JsonPatchOperation } from '../vocabulary/patch.js';
import { apiClientWithDeadline } from './api-client.js';
import type {
  AgonesGameServer,
  ClusterApi,
  ClusterEvent,
  DeletePreconditions,
  EvictionOutcome,
  KarpenterNodePool,
  ListOptions,
} from './cluster-api.js';
import {
  KubernetesApiError,
  KubernetesConflictError,
  KubernetesInvalidError,
  KubernetesListExpiredError,
  KubernetesNotFoundError,
  type KubernetesRequestTarget,
  KubernetesUnreachableError,
  statusOf,
} from './errors.js';

/** Items per list page when the caller names none; the apiserver's own default cap is 500 too. */
const DEFAULT_PAGE_SIZE = 500;

/** Events on cluster-scoped objects (nodes) go where kubelet puts them. */
const CLUSTER_SCOPED_EVENT_NAMESPACE = 'default';

/** An event name is a DNS subdomain (≤ 253); keep room for `.` and 16 hex digits of its key. */
const MAX_EVENT_NAME_PREFIX = 253 - 17;

/** What the adapter needs; the clock is injected so tests control it. */
export interface ClientNodeClusterApiOptions {
  readonly kubeConfig: KubeConfig;
  /** Epoch ms, for event timestamps. */
  readonly now?: () => number;
  /** Page size of lists whose options name none. */
  readonly defaultPageSize?: number;
  /** How long one request may go unanswered (`KUBERNETES_REQUEST_TIMEOUT_MS` by default). */
  readonly requestTimeoutMs?: number;
}

/** Agones' API group, version and resource of `GameServer`s. */
const AGONES_GAME_SERVERS = { group: 'agones.dev', version: 'v1', plural: 'gameservers' } as const;

/** The page shape every client-node list call returns. */
interface Page<T> {
  readonly items: T[];
  readonly metadata?: V1ListMeta;
}

/** `ClusterApi` over a client-node `CoreV1Api` made from one `KubeConfig`. */
export class ClientNodeClusterApi implements ClusterApi {
  readonly #core: CoreV1Api;
  readonly #apps: AppsV1Api;
  readonly #custom: CustomObjectsApi;
  readonly #networking: NetworkingV1Api;
  readonly #now: () => number;
  readonly #defaultPageSize: number;

  constructor(options: ClientNodeClusterApiOptions) {
    const { kubeConfig, requestTimeoutMs } = options;
    this.#core = apiClientWithDeadline(kubeConfig, CoreV1Api, requestTimeoutMs);
    this.#apps = apiClientWithDeadline(kubeConfig, AppsV1Api, requestTimeoutMs);
    this.#custom = apiClientWithDeadline(kubeConfig, CustomObjectsApi, requestTimeoutMs);
    this.#networking = apiClientWithDeadline(kubeConfig, NetworkingV1Api, requestTimeoutMs);
    this.#now = options.now ?? Date.now;
    this.#defaultPageSize = options.defaultPageSize ?? DEFAULT_PAGE_SIZE;
  }

  getNode(name: string): Promise<V1Node | undefined> {
    return this.#read(`nodes/${name}`, () => this.#core.readNode({ name }));
  }

  getService(namespace: string, name: string): Promise<V1Service | undefined> {
    return this.#read(`namespaces/${namespace}/services/${name}`, () =>
      this.#core.readNamespacedService({ namespace, name }),
    );
  }

  getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    return this.#read(`namespaces/${namespace}/pods/${name}`, () =>
      this.#core.readNamespacedPod({ namespace, name }),
    );
  }

  /** One GET; an object that does not exist reads as undefined, anything else is translated. */
  async #read<T>(resource: string, get: () => Promise<T>): Promise<T | undefined> {
    try {
      return await get();
    } catch (error) {
      const translated = translateKubernetesError(error, { verb: 'get', resource });
      if (translated instanceof KubernetesNotFoundError) return undefined;
      throw translated;
    }
  }

  listNodes(options: ListOptions = {}): AsyncIterable<V1Node> {
    return this.#paged({ verb: 'list', resource: 'nodes' }, options, (params) =>
      this.#core.listNode(params),
    );
  }

  listPods(options: ListOptions = {}): AsyncIterable<V1Pod> {
    return this.#paged({ verb: 'list', resource: 'pods' }, options, (params) =>
      this.#core.listPodForAllNamespaces(params),
    );
  }

  listServices(options: ListOptions = {}): AsyncIterable<V1Service> {
    return this.#paged({ verb: 'list', resource: 'services' }, options, (params) =>
      this.#core.listServiceForAllNamespaces(params),
    );
  }

  async patchNode(name: string, patch: readonly JsonPatchOperation[]): Promise<V1Node> {
    const target = { verb: 'patch', resource: `nodes/${name}` };
    try {
      // client-node's default Content-Type for patchNode is application/json-patch+json.
      return await this.#core.patchNode({ name, body: patch });
    } catch (error) {
      throw translateKubernetesError(error, target, { jsonPatch: true });
    }
  }

  async scaleDeployment(namespace: string, name: string, replicas: number): Promise<void> {
    const target = { verb: 'patch', resource: `namespaces/${namespace}/deployments/${name}/scale` };
    try {
      await this.#apps.patchNamespacedDeploymentScale({
        namespace,
        name,
        body: [{ op: 'replace', path: '/spec/replicas', value: replicas }],
      });
    } catch (error) {
      throw translateKubernetesError(error, target, { jsonPatch: true });
    }
  }

  async patchPod(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<V1Pod> {
    const target = { verb: 'patch', resource: `namespaces/${namespace}/pods/${name}` };
    try {
      // application/json-patch+json is the first media type client-node offers for pods too.
      return await this.#core.patchNamespacedPod({ namespace, name, body: patch });
    } catch (error) {
      throw translateKubernetesError(error, target, { jsonPatch: true });
    }
  }

  async evictPod(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<EvictionOutcome> {
    const target = { verb: 'create', resource: `namespaces/${namespace}/pods/${name}/eviction` };
    try {
      await this.#core.createNamespacedPodEviction({
        namespace,
        name,
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name, namespace },
          ...(preconditions ? { deleteOptions: { preconditions: { ...preconditions } } } : {}),
        },
      });
      return 'evicted';
    } catch (error) {
      const translated = translateKubernetesError(error, target);
      // 429: a PodDisruptionBudget allows no disruption now (or the apiserver is throttling):
      // either way, not now. The eviction registry answers a failed precondition with 409.
      if (translated.statusCode === 429) return 'refused';
      if (translated instanceof KubernetesConflictError) return 'changed';
      if (translated instanceof KubernetesNotFoundError) return 'gone';
      throw translated;
    }
  }

  listGameServers(options: ListOptions = {}): AsyncIterable<AgonesGameServer> {
    const pages = this.#paged<AgonesGameServer>(
      { verb: 'list', resource: 'gameservers.agones.dev' },
      options,
      async (params) => {
        // Custom objects come back as raw JSON: the continue token is `continue`, not the
        // typed lists' `_continue`.
        const page = (await this.#custom.listClusterCustomObject({
          ...AGONES_GAME_SERVERS,
          ...params,
        })) as { items?: AgonesGameServer[]; metadata?: { continue?: string } };
        return { items: page.items ?? [], metadata: { _continue: page.metadata?.continue } };
      },
    );
    return withoutUnknownGroup(pages);
  }

  async patchGameServer(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<AgonesGameServer> {
    const target = {
      verb: 'patch',
      resource: `namespaces/${namespace}/gameservers.agones.dev/${name}`,
    };
    try {
      // application/json-patch+json is the first media type client-node offers for custom objects.
      return (await this.#custom.patchNamespacedCustomObject({
        ...AGONES_GAME_SERVERS,
        namespace,
        name,
        body: patch,
      })) as AgonesGameServer;
    } catch (error) {
      throw translateKubernetesError(error, target, { jsonPatch: true });
    }
  }

  async deleteGameServer(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<'deleted' | 'changed' | 'gone'> {
    const target = {
      verb: 'delete',
      resource: `namespaces/${namespace}/gameservers.agones.dev/${name}`,
    };
    try {
      await this.#custom.deleteNamespacedCustomObject({
        ...AGONES_GAME_SERVERS,
        namespace,
        name,
        ...(preconditions ? { body: { preconditions: { ...preconditions } } } : {}),
      });
      return 'deleted';
    } catch (error) {
      const translated = translateKubernetesError(error, target);
      if (translated instanceof KubernetesConflictError) return 'changed';
      if (translated instanceof KubernetesNotFoundError) return 'gone';
      throw translated;
    }
  }

  getKarpenterNodePool(name: string): Promise<KarpenterNodePool | undefined> {
    // A 404 is the NodePool missing or Karpenter's group unknown: both read as undefined.
    return this.#read(
      `nodepools.karpenter.sh/${name}`,
      () =>
        this.#custom.getClusterCustomObject({
          group: 'karpenter.sh',
          version: 'v1',
          plural: 'nodepools',
          name,
        }) as Promise<KarpenterNodePool>,
    );
  }

  async listServiceCidrs(): Promise<readonly V1ServiceCIDR[] | undefined> {
    const cidrs: V1ServiceCIDR[] = [];
    const pages = this.#paged(
      { verb: 'list', resource: 'servicecidrs.networking.k8s.io' },
      {},
      (params) => this.#networking.listServiceCIDR(params),
    );
    try {
      for await (const cidr of pages) cidrs.push(cidr);
    } catch (error) {
      // Before Kubernetes 1.33 (or with the API off) the resource is unknown: ranges are flags.
      if (error instanceof KubernetesNotFoundError && cidrs.length === 0) return undefined;
      throw error;
    }
    return cidrs;
  }

  listIpAddresses(options: ListOptions = {}): AsyncIterable<V1IPAddress> {
    return this.#paged(
      { verb: 'list', resource: 'ipaddresses.networking.k8s.io' },
      options,
      (params) => this.#networking.listIPAddress(params),
    );
  }

  async deleteNode(name: string): Promise<void> {
    const target = { verb: 'delete', resource: `nodes/${name}` };
    try {
      await this.#core.deleteNode({ name });
    } catch (error) {
      const translated = translateKubernetesError(error, target);
      // Already gone is the outcome the caller asked for.
      if (translated instanceof KubernetesNotFoundError) return;
      throw translated;
    }
  }

  /**
   * Records an Event the way client-go's recorder does: the same finding on the same object
   * (component, object, type, reason, message) is one Event whose `count` rises and whose
   * `lastTimestamp` moves, not a new Event per pass. The name is derived from that key, so a
   * stateless pass finds the Event it made last time; the count is raised with a `test`-guarded
   * JSON patch, so two passes racing on it never lose an increment silently.
   */
  async createEvent(event: ClusterEvent): Promise<void> {
    const { involvedObject } = event;
    const namespace = involvedObject.namespace ?? CLUSTER_SCOPED_EVENT_NAMESPACE;
    const name = `${involvedObject.name.slice(0, MAX_EVENT_NAME_PREFIX)}.${eventKey(event)}`;
    const at = new Date(this.#now());
    const body: CoreV1Event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: 'v1',
        kind: involvedObject.kind,
        name: involvedObject.name,
        ...(involvedObject.namespace === undefined ? {} : { namespace: involvedObject.namespace }),
        ...(involvedObject.uid === undefined ? {} : { uid: involvedObject.uid }),
      },
      reason: event.reason,
      message: event.message,
      type: event.type,
      source: { component: event.component },
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
    };
    const create = { verb: 'create', resource: `namespaces/${namespace}/events` };
    try {
      await this.#core.createNamespacedEvent({ namespace, body });
      return;
    } catch (error) {
      const translated = translateKubernetesError(error, create);
      if (!(translated instanceof KubernetesConflictError)) throw translated;
    }
    await this.#countAgain(namespace, name, at);
  }

  /** Raises the count of an existing Event by one; tries again once if another pass raced it. */
  async #countAgain(namespace: string, name: string, at: Date): Promise<void> {
    const target = { verb: 'patch', resource: `namespaces/${namespace}/events/${name}` };
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = await this.#core.readNamespacedEvent({ name, namespace });
        const count = existing.count ?? 1;
        await this.#core.patchNamespacedEvent({
          name,
          namespace,
          body: [
            { op: 'test', path: '/count', value: count },
            { op: 'replace', path: '/count', value: count + 1 },
            { op: 'replace', path: '/lastTimestamp', value: at.toISOString() },
          ],
        });
        return;
      } catch (error) {
        const translated = translateKubernetesError(error, target, { jsonPatch: true });
        if (translated instanceof KubernetesConflictError && attempt < 2) continue;
        throw translated;
      }
    }
  }

  async *#paged<T>(
    target: KubernetesRequestTarget,
    options: ListOptions,
    fetchPage: (params: {
      labelSelector?: string;
      fieldSelector?: string;
      limit: number;
      _continue?: string;
    }) => Promise<Page<T>>,
  ): AsyncGenerator<T, void, undefined> {
    const limit = options.pageSize ?? this.#defaultPageSize;
    let token: string | undefined;
    do {
      let page: Page<T>;
      try {
        page = await fetchPage({
          ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
          ...(options.fieldSelector ? { fieldSelector: options.fieldSelector } : {}),
          limit,
          ...(token === undefined ? {} : { _continue: token }),
        });
      } catch (error) {
        throw translateKubernetesError(error, target);
      }
      yield* page.items;
      // An empty string means "no more pages", as an absent one does.
      token = page.metadata?._continue || undefined;
    } while (token !== undefined);
  }
}

/**
 * A list of a custom resource whose API group the apiserver does not serve (404 on the first
 * page: the CRD is not installed) reads as empty; a 404 later in the list is an error.
 */
async function* withoutUnknownGroup<T>(pages: AsyncIterable<T>): AsyncGenerator<T, void> {
  let first = true;
  try {
    for await (const item of pages) {
      first = false;
      yield item;
    }
  } catch (error) {
    if (first && error instanceof KubernetesNotFoundError) return;
    throw error;
  }
}

/** Options of `translateKubernetesError`. */
export interface TranslateOptions {
  /** The call sent a JSON patch: a cause-less 422 means the patch did not apply (a conflict). */
  readonly jsonPatch?: boolean;
}

/** Turns whatever client-node threw into berth's typed Kubernetes error. */
export function translateKubernetesError(
  error: unknown,
  target: KubernetesRequestTarget,
  options: TranslateOptions = {},
): KubernetesApiError {
  if (error instanceof KubernetesApiError) return error;
  if (!(error instanceof ApiException))
    return new KubernetesUnreachableError(target, { cause: error });
  const code = error.code;
  // client-node hands the error body over as the raw response text, or not at all.
  const status = statusOf(error.body, code);
  switch (code) {
    case 404:
      return new KubernetesNotFoundError(target, status, { cause: error });
    case 409:
      return new KubernetesConflictError(target, 409, status, { cause: error });
    case 410:
      return new KubernetesListExpiredError(target, status, { cause: error });
    case 422: {
      const hasFieldCauses = (status?.details?.causes?.length ?? 0) > 0;
      return options.jsonPatch && !hasFieldCauses
        ? new KubernetesConflictError(target, 422, status, { cause: error })
        : new KubernetesInvalidError(target, status, { cause: error });
    }
    default:
      return new KubernetesApiError(target, code, status, { cause: error });
  }
}

/** 16 hex characters naming one finding on one object, as client-go's aggregator keys them. */
function eventKey(event: ClusterEvent): string {
  const { involvedObject: o } = event;
  const key = [
    event.component,
    o.kind,
    o.namespace ?? '',
    o.name,
    o.uid ?? '',
    event.type,
    event.reason,
    event.message,
  ];
  return createHash('sha256').update(key.join('\u0000')).digest('hex').slice(0, 16);
}

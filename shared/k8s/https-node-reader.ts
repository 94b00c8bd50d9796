/**
 * The two Kubernetes reads the `pods/binding` webhook makes (a pod, a node), the list of
 * ServiceCIDRs the Service webhook allocates within, and the lists of a namespace's pods and
 * Services that tell a re-invoked `generateName` CREATE from a copy, over `node:https` alone. The admission
 * function needs nothing else from the API, and `@kubernetes/client-node`
 * with its undici transport is most of a megabyte and a hundred milliseconds of cold start; the
 * repair, scale and ENI passes, which list, patch and record events, keep the client-node adapter.
 * Failures leave this file as the same typed errors that adapter throws (./errors.ts).
 */
import { Agent, request } from 'node:https';
import type { V1ListMeta, V1Node, V1Pod, V1Service, V1ServiceCIDR } from '@kubernetes/client-node';
import type { ClusterApi, ListOptions } from './cluster-api.js';
import {
  isUnauthorized,
  KubernetesApiError,
  type KubernetesRequestTarget,
  KubernetesUnreachableError,
  statusOf,
} from './errors.js';

/**
 * Whole-request budget (connect, TLS, answer) of one read. A binding makes two reads in a row
 * (the pod, then its node) inside the admission function's 4 s timeout (the webhook's is 5 s),
 * after a possible cold start: 1.2 s each leaves the function time to answer with a warning
 * instead of being killed. A healthy apiserver answers a GET in milliseconds.
 */
const KUBERNETES_READ_TIMEOUT_MS = 1_200;

/** Objects per page of a list: the admission function lists one namespace, rarely. */
const LIST_PAGE_SIZE = 500;

/** An API server reached with a bearer token. */
export interface BearerAccess {
  /** `https://host[:port]`, as EKS DescribeCluster returns it. */
  readonly endpoint: string;
  /** Base64 PEM of the CA that signs the server's certificate, as DescribeCluster returns it. */
  readonly caData: string;
  readonly token: string;
}

/** Hands out the access to use now; `EksCredentials` renews its token before EKS stops taking it. */
export interface BearerAccessSource {
  get(): Promise<BearerAccess>;
  /** Drops the cached token after the apiserver refused it (401), so `get` makes a new one. */
  invalidate?(): void;
}

/** What `HttpsClusterReader` needs. */
export interface HttpsClusterReaderOptions {
  readonly access: BearerAccessSource;
  /** `KUBERNETES_READ_TIMEOUT_MS` by default. */
  readonly timeoutMs?: number;
}

interface Answer {
  readonly statusCode: number;
  readonly body: string;
}

/**
 * `getPod` and `getNode` as plain HTTPS GETs with a bearer token. One keep-alive agent, trusting
 * only the cluster's CA, serves every call of the container, so warm invocations skip the TCP and
 * TLS handshakes.
 */
export class HttpsClusterReader
  implements
    Pick<ClusterApi, 'getPod' | 'getNode' | 'listServiceCidrs' | 'listPods' | 'listServices'>
{
  readonly #access: BearerAccessSource;
  readonly #timeoutMs: number;
  /** The agent and the CA it trusts (a cluster's CA does not change; a new one gets a new agent). */
  #pool: { readonly caData: string; readonly agent: Agent } | undefined;

  constructor(options: HttpsClusterReaderOptions) {
    this.#access = options.access;
    this.#timeoutMs = options.timeoutMs ?? KUBERNETES_READ_TIMEOUT_MS;
  }

  async getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    const resource = `namespaces/${namespace}/pods/${name}`;
    return this.#get<V1Pod>(
      { verb: 'get', resource },
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
    );
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    return this.#get<V1Node>(
      { verb: 'get', resource: `nodes/${name}` },
      `/api/v1/nodes/${encodeURIComponent(name)}`,
    );
  }

  /**
   * The cluster's ServiceCIDRs (`networking.k8s.io/v1`, Kubernetes 1.33+), in one GET: a
   * cluster has a handful. Undefined on a cluster without the resource (404).
   */
  async listServiceCidrs(): Promise<readonly V1ServiceCIDR[] | undefined> {
    const list = await this.#get<{ items?: V1ServiceCIDR[] }>(
      { verb: 'list', resource: 'servicecidrs.networking.k8s.io' },
      '/apis/networking.k8s.io/v1/servicecidrs',
    );
    return list === undefined ? undefined : (list.items ?? []);
  }

  listPods(options: ListOptions = {}): AsyncIterable<V1Pod> {
    return this.#list<V1Pod>({ verb: 'list', resource: 'pods' }, '/api/v1/pods', options);
  }

  listServices(options: ListOptions = {}): AsyncIterable<V1Service> {
    return this.#list<V1Service>(
      { verb: 'list', resource: 'services' },
      '/api/v1/services',
      options,
    );
  }

  /** A list read page by page (limit and continue), as the apiserver pages it. */
  async *#list<T>(
    target: KubernetesRequestTarget,
    path: string,
    options: ListOptions,
  ): AsyncIterable<T> {
    let next: string | undefined;
    do {
      const query = new URLSearchParams({ limit: String(options.pageSize ?? LIST_PAGE_SIZE) });
      if (options.labelSelector) query.set('labelSelector', options.labelSelector);
      if (options.fieldSelector) query.set('fieldSelector', options.fieldSelector);
      if (next) query.set('continue', next);
      const page = await this.#get<{ items?: T[]; metadata?: V1ListMeta }>(
        target,
        `${path}?${query}`,
      );
      yield* page?.items ?? [];
      next = page?.metadata?._continue || undefined;
    } while (next !== undefined);
  }

  /** Closes the kept-alive connections (tests, shutdown); later reads open new ones. */
  close(): void {
    this.#pool?.agent.destroy();
    this.#pool = undefined;
  }

  /**
   * One read; a refused token (401) is dropped and the read made once more with a new one, since
   * a token can stop being honoured before the source's refresh age (clock skew, a rotated role).
   */
  async #get<T>(target: KubernetesRequestTarget, path: string): Promise<T | undefined> {
    try {
      return await this.#getOnce<T>(target, path);
    } catch (error) {
      if (!isUnauthorized(error) || !this.#access.invalidate) throw error;
      this.#access.invalidate();
      return this.#getOnce<T>(target, path);
    }
  }

  async #getOnce<T>(target: KubernetesRequestTarget, path: string): Promise<T | undefined> {
    const access = await this.#access.get();
    let answer: Answer;
    try {
      answer = await this.#send(access, path);
    } catch (error) {
      throw new KubernetesUnreachableError(target, { cause: error });
    }
    const { statusCode, body } = answer;
    if (statusCode === 404) return undefined;
    if (statusCode >= 200 && statusCode < 300) {
      try {
        return JSON.parse(body) as T;
      } catch (error) {
        throw new KubernetesApiError(target, statusCode, undefined, {
          cause: error,
          message: `kubernetes ${target.verb} ${target.resource} answered ${statusCode} with a body that is not JSON`,
        });
      }
    }
    throw new KubernetesApiError(target, statusCode, statusOf(body, statusCode));
  }

  /**
   * One GET. A Lambda container frozen between invocations misses the server closing an idle
   * kept-alive socket, and the first write on it fails at once; a GET is safe to send again, so
   * that one case is retried once, on a new socket (Node's documented `reusedSocket` pattern).
   */
  #send(access: BearerAccess, path: string, retryStaleSocket = true): Promise<Answer> {
    const server = new URL(access.endpoint);
    const basePath = server.pathname.replace(/\/+$/, '');
    const agent = this.#agentFor(access.caData);
    return new Promise<Answer>((resolve, reject) => {
      let settled = false;
      let timedOut: Error | undefined;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        outcome();
      };
      // Whatever a destroyed request reports afterwards, the budget running out is the cause.
      const fail = (error: Error) => settle(() => reject(timedOut ?? error));
      const req = request(
        {
          agent,
          method: 'GET',
          hostname: server.hostname.replace(/^\[(.*)\]$/, '$1'),
          port: server.port === '' ? 443 : Number(server.port),
          path: basePath + path,
          headers: {
            accept: 'application/json',
            authorization: `Bearer ${access.token}`,
            'user-agent': 'berth',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', fail);
          res.on('end', () =>
            settle(() =>
              resolve({
                statusCode: res.statusCode ?? 0,
                body: Buffer.concat(chunks).toString('utf8'),
              }),
            ),
          );
          // A socket destroyed mid-body closes the response without an end.
          res.on('close', () =>
            fail(new Error('connection closed before the answer was complete')),
          );
        },
      );
      const timer = setTimeout(() => {
        timedOut = Object.assign(new Error(`no answer within ${this.#timeoutMs} ms`), {
          code: 'ETIMEDOUT',
        });
        req.destroy(timedOut);
      }, this.#timeoutMs);
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (retryStaleSocket && !timedOut && req.reusedSocket && error.code === 'ECONNRESET') {
          settle(() => resolve(this.#send(access, path, false)));
          return;
        }
        fail(error);
      });
      req.end();
    });
  }

  #agentFor(caData: string): Agent {
    if (this.#pool?.caData === caData) return this.#pool.agent;
    this.#pool?.agent.destroy();
    const agent = new Agent({
      keepAlive: true,
      ca: Buffer.from(caData, 'base64').toString('utf8'),
    });
    this.#pool = { caData, agent };
    return agent;
  }
}

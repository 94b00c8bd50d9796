/**
 * berth's HTTP surface, independent of where it runs: the local server and
 * the Lambda function URL both translate their requests into `HttpRequest` and call this.
 */
import { timingSafeEqual } from 'node:crypto';
import type { AdmissionDecision } from '../admission/decision.js';
import { type AdmissionHandlers, admit } from '../admission/dispatch.js';
import { MalformedReviewError, parseAdmissionReview } from '../admission/review.js';
import {
  EXPOSITION_CONTENT_TYPES,
  type ExpositionFormat,
  expositionFormat,
} from '../metrics/openmetrics.js';
import { HolderQueryError } from '../status/errors.js';
import { AllocationCounter } from '../ui/allocation-count.js';
import type { HttpFault, HttpRequest, HttpResponse } from './exchange.js';
import { refusalOf } from './refusal.js';
import { unavailableFault } from './unavailable.js';

/** ENI IP assignment, when this deployment serves it. */
export interface NodeIpApi {
  assign(node: string, body: unknown): Promise<unknown>;
  /** Releases `ip` for the holder the query names (`namespace`, `pod`, `containerId`). */
  release(node: string, ip: string, holder: Readonly<Record<string, string>>): Promise<unknown>;
  /** The address the holder the query names has, read only. */
  lookUp(node: string, holder: Readonly<Record<string, string>>): Promise<unknown>;
  /** The node's set, for a node that hands its addresses out itself (its agent asks). */
  nodeSet(node: string): Promise<unknown>;
  /** Takes the node's report of its use (and returns, and a refill) and answers its set. */
  nodeReport(node: string, body: unknown): Promise<unknown>;
}

/** What the routes call. */
export interface HttpApiDeps {
  /** The webhook; a deployment that only serves node IPs has none. */
  readonly admission?: AdmissionHandlers;
  /** Answers whether the store can be reached. */
  readonly healthy: () => Promise<boolean>;
  readonly status?: () => Promise<unknown>;
  /**
   * `GET /metrics`: the numbers `status` reads, for Prometheus, in the format the request's
   * `Accept` asks for (OpenMetrics or the Prometheus text format). Behind the path secret in AWS,
   * as every route is.
   */
  readonly metrics?: (format: ExpositionFormat) => Promise<string>;
  /** ENI IP assignment; absent where berth has no cluster and EC2 access. */
  readonly nodeIps?: NodeIpApi;
  /**
   * The secret last path segment of every route (AWS: EKS cannot give webhooks client
   * credentials, and the public URL must answer nobody else): `/admission/<secret>`,
   * `/healthz/<secret>`, `/v1/status/<secret>`. Absent locally, where paths are plain.
   */
  readonly pathSecret?: string;
  /** Hears every admission decision (the structured log line, the metrics). */
  readonly onDecision?: (decision: AdmissionDecision) => void;
  /** Maps an error from a route to a client fault, or undefined for an internal one. */
  readonly classify?: (error: unknown) => HttpFault | undefined;
  /**
   * The table as messages name it (what serves it and its name: `DynamoDB Local at URL, table T`,
   * `DynamoDB table T`); `UNNAMED_STORE` when absent.
   */
  readonly storeName?: string;
  /**
   * Hears each request answered 503 because the table or the Kubernetes API did not answer
   * (a runtime logs it, at most so often), instead of the error propagating as a 500.
   */
  readonly onUnavailable?: (fault: HttpFault) => void;
  /**
   * The web view: its page (`GET /ui`) and its data (`GET /ui/state`). Only the local server
   * offers it (the function URLs in AWS answer machines, not people), and it hands the page in,
   * so the Lambda bundles neither carry nor build it.
   */
  readonly webView?: {
    readonly page: HttpResponse;
    readonly state: () => Promise<unknown>;
    /** `GET /ui/holders?value=V`: who holds a cluster IP, a port, or what `namespace/name` holds. */
    readonly holders?: (query: string) => Promise<unknown>;
  };
}

const json = (statusCode: number, body: unknown): HttpResponse => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const problem = (statusCode: number, message: string, retryAfterSeconds?: number) => {
  const answer = json(statusCode, { error: message });
  return retryAfterSeconds === undefined
    ? answer
    : { ...answer, headers: { ...answer.headers, 'retry-after': String(retryAfterSeconds) } };
};

/** A path segment decoded; undefined when it is not valid percent-encoding. */
/** The request's JSON body handed to `handle`; a 400 saying what to `send` when it is not JSON. */
async function withJsonBody(
  request: HttpRequest,
  send: string,
  handle: (body: unknown) => Promise<HttpResponse>,
): Promise<HttpResponse> {
  let body: unknown;
  try {
    body = JSON.parse(request.body ?? '');
  } catch {
    return problem(400, `body is not JSON: send ${send}`);
  }
  return handle(body);
}

function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Constant-time comparison, so the secret cannot be found one character at a time. */
function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The route a path names: with a secret, the path without its last segment when that segment is
 * the secret, and undefined for anything else (which is answered with nothing but a 404).
 */
function routeOf(path: string, secret: string | undefined): string | undefined {
  if (secret === undefined) return path;
  const cut = path.lastIndexOf('/');
  if (cut <= 0 || !sameSecret(path.slice(cut + 1), secret)) return undefined;
  return path.slice(0, cut);
}

/** The store as messages name it when the deployment does not say. */
const UNNAMED_STORE = "DynamoDB (berth's table)";

const NOT_FOUND: HttpResponse = { statusCode: 404, headers: {}, body: '' };

const NODE_IPS = /^\/v1\/nodes\/([^/]+)\/ips(?:\/([^/]+))?$/;
const NODE_ADDRESSES = /^\/v1\/nodes\/([^/]+)\/addresses$/;

/** Builds the request handler. Internal faults propagate, so the caller answers 500 and logs them. */
export function createHttpApi(deps: HttpApiDeps): (request: HttpRequest) => Promise<HttpResponse> {
  // The web view plots the values this server allocated, counted from its decisions.
  const allocations = new AllocationCounter();
  const onDecision = deps.webView
    ? (decision: AdmissionDecision) => {
        allocations.hear(decision);
        deps.onDecision?.(decision);
      }
    : deps.onDecision;
  const routes = async (request: HttpRequest): Promise<HttpResponse> => {
    const { method } = request;
    const { admission } = deps;
    const path = routeOf(request.path, deps.pathSecret);
    if (path === undefined) return NOT_FOUND;
    // After the secret: a caller without it learns nothing, not even that berth refuses it.
    const refused = request.headers && refusalOf(method, request.headers);
    if (refused) return refused;
    if (admission && path === '/admission') {
      if (method !== 'POST') return problem(405, 'use POST for admission reviews');
      return withJsonBody(request, 'an admission.k8s.io/v1 AdmissionReview', async (body) => {
        try {
          return json(200, await admit(parseAdmissionReview(body), admission, onDecision));
        } catch (error) {
          if (error instanceof MalformedReviewError) return problem(400, error.message);
          throw error;
        }
      });
    }
    if (path === '/healthz' && method === 'GET') {
      return (await deps.healthy())
        ? { statusCode: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' }
        : {
            statusCode: 503,
            headers: { 'content-type': 'text/plain' },
            // berth answers: what is down is its store, named so an operator looks there.
            body: `store unreachable: ${deps.storeName ?? UNNAMED_STORE} does not answer; berth itself is up`,
          };
    }
    if (path === '/v1/status' && method === 'GET' && deps.status)
      return json(200, await deps.status());
    if (path === '/metrics' && method === 'GET' && deps.metrics) {
      const accept = request.headers?.accept;
      const format = expositionFormat(Array.isArray(accept) ? accept.join(',') : accept);
      return {
        statusCode: 200,
        headers: {
          'content-type': EXPOSITION_CONTENT_TYPES[format],
          'cache-control': 'no-store',
          vary: 'accept',
        },
        body: await deps.metrics(format),
      };
    }
    if (deps.webView && method === 'GET' && path === '/ui') return deps.webView.page;
    if (deps.webView && method === 'GET' && path === '/ui/state') {
      return {
        ...json(200, {
          ...((await deps.webView.state()) as object),
          allocations: allocations.count,
        }),
        headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
      };
    }
    if (deps.webView?.holders && method === 'GET' && path === '/ui/holders') {
      const value = request.query?.value?.trim() ?? '';
      if (value === '') return problem(400, 'value: give an IP, a port or namespace/name');
      try {
        return json(200, { value, holders: await deps.webView.holders(value) });
      } catch (error) {
        // A value outside every range is the asker's mistake, said as such.
        if (error instanceof HolderQueryError) return problem(400, error.message);
        throw error;
      }
    }
    const nodeIps = NODE_IPS.exec(path);
    const addresses = NODE_ADDRESSES.exec(path);
    if ((nodeIps || addresses) && !deps.nodeIps) {
      return problem(
        503,
        'ENI IP assignment is not enabled here: it needs a cluster (--kubeconfig) and EC2 access',
      );
    }
    if (addresses && deps.nodeIps) {
      const node = decoded(addresses[1] ?? '');
      if (node === undefined)
        return problem(400, `${path}: a path segment is not valid percent-encoding`);
      if (method === 'GET') return json(200, await deps.nodeIps.nodeSet(node));
      if (method === 'POST') {
        const api = deps.nodeIps;
        return withJsonBody(
          request,
          'the node\'s report, {"leased": [...], "rested": [...], "returned": [...]}',
          async (body) => json(200, await api.nodeReport(node, body)),
        );
      }
      return problem(405, `${method} is not allowed on ${path}`);
    }
    if (nodeIps && deps.nodeIps) {
      const node = decoded(nodeIps[1] ?? '');
      const ip = nodeIps[2] === undefined ? undefined : decoded(nodeIps[2]);
      if (node === undefined || (nodeIps[2] !== undefined && ip === undefined)) {
        return problem(400, `${path}: a path segment is not valid percent-encoding`);
      }
      if (method === 'POST' && ip === undefined) {
        const api = deps.nodeIps;
        return withJsonBody(request, '{"namespace": "...", "pod": "..."}', async (body) =>
          json(200, await api.assign(node, body)),
        );
      }
      if (method === 'GET' && ip === undefined)
        return json(200, await deps.nodeIps.lookUp(node, request.query ?? {}));
      if (method === 'DELETE' && ip !== undefined)
        return json(200, await deps.nodeIps.release(node, ip, request.query ?? {}));
      return problem(405, `${method} is not allowed on ${path}`);
    }
    return problem(404, `no route for ${method} ${path}`);
  };
  return async (request) => {
    try {
      return await routes(request);
    } catch (error) {
      const fault = deps.classify?.(error);
      if (fault) return problem(fault.statusCode, fault.message, fault.retryAfterSeconds);
      const unavailable = unavailableFault(error, deps.storeName ?? UNNAMED_STORE);
      if (!unavailable) throw error;
      deps.onUnavailable?.(unavailable);
      return problem(unavailable.statusCode, unavailable.message);
    }
  };
}

/**
 * A loopback stand-in for the few kube-apiserver paths berth uses, served over plain HTTP so the
 * REAL `@kubernetes/client-node` talks to it (client-node accepts `http://` only with
 * `skipTLSVerify: true`, which `kubeConfig()` sets): the Kubernetes API of `berth sim`'s cluster,
 * and the tests' apiserver. No kube-apiserver, envtest or kwok binary is
 * available offline, so this mimics the apiserver's answers where berth depends on them:
 * - `Status` bodies for errors (404 `NotFound` with details, 409 `Conflict`, 410 `Expired`);
 * - lists sorted by key, paged with limit/continue, `remainingItemCount` only without selectors;
 * - label selectors (`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-joined) and the field selectors the
 *   apiserver supports per kind (pods: `spec.nodeName`, `status.phase`, ...), with
 *   `field label not supported` for the rest;
 * - JSON patch (`application/json-patch+json`) of nodes: an operation that cannot be applied (a
 *   failed `test`, a missing path) answers 422 `Invalid` with the generic message and no causes,
 *   exactly as the apiserver's `NewGenericServerResponse(422, ...)` does; a patched
 *   `metadata.resourceVersion` that does not match answers 409 `Conflict`;
 * - DELETE of nodes answering a `Success` Status; POST of core/v1 events with the legacy
 *   namespace validation (`involvedObject.namespace` must match, or be empty for `default`);
 * - JSON patch and DELETE of pods, and the Eviction subresource (`pods/{name}/eviction`, policy/v1)
 *   as the eviction registry answers it: delete preconditions checked (409), the one
 *   PodDisruptionBudget matching the pod checked (429 `TooManyRequests` with a `DisruptionBudget`
 *   cause when it allows no disruption, 500 when more than one matches), then the pod deleted;
 * - with `agones: true`, Agones `GameServer`s (`agones.dev/v1`): list, get, create, JSON patch, and delete
 *   with preconditions, the GameServer's pods going with it (ownerReference garbage collection);
 *   without it, the group is unknown (404), as on a cluster without Agones.
 * - with `serviceCIDRs`, a Kubernetes 1.33+ cluster's `networking.k8s.io/v1` ServiceCIDRs (the
 *   default one, `kubernetes`, made from them) and IPAddresses: a Service stored with a cluster IP
 *   gets an IPAddress named by it, and one whose IP no ready ServiceCIDR covers, or that another
 *   Service's IPAddress holds, is refused 422 with the apiserver's message
 *   (`pkg/registry/core/service/storage/alloc.go`: `failed to allocate IP <ip>: <error>`); a
 *   deleted ServiceCIDR stays, Ready False and Terminating, behind its finalizer while addresses
 *   only it covers remain (`pkg/controller/servicecidrs`); without it the group is unknown (404),
 *   as before 1.33. https://kubernetes.io/docs/tasks/network/extend-service-ip-ranges/
 * - with `webhooks`, the admission chain (`admission-chain.ts`: webhooks in order, re-invocation)
 *   for pods and Services written through HTTP: CREATE (then a `generateName` object is named, as
 *   the apiserver names it after mutating admission: `rest.BeforeCreate` in
 *   `staging/src/k8s.io/apiserver/pkg/registry/rest/create.go`), UPDATE by JSON patch, DELETE, and
 *   the `pods/binding` subresource, whose Binding annotations are copied onto the pod as it is
 *   bound (`setPodNodeAndMetadata` in `pkg/registry/core/pod/storage/storage.go`); a denial
 *   answers the webhook's code with the apiserver's message. `dryRun=All` admits and stores nothing.
 * Listeners registered with `onChange` run after every change made through HTTP, so a
 * controller stand-in (sim/fleet-controller.ts) reacts as its real one would.
 * Tests seed and inspect the maps directly, record requests, require a bearer token, fail the
 * next N requests to a path, and expire continue tokens.
 */
import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  CoreV1Event,
  KubeConfig,
  V1IPAddress,
  V1MutatingWebhook,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
  V1Service,
  V1ServiceCIDR,
} from '@kubernetes/client-node';
import type { AgonesGameServer } from '../../shared/k8s/cluster-api.js';
import { bearerTokenKubeConfig } from '../../shared/k8s/kubeconfig.js';
import { type CidrBlock, cidrContains, formatIp, parseCidr, parseIp } from '../../shared/net/ip.js';
import { ownValueOf } from '../../shared/vocabulary/opaque.js';
import { type ApiserverRequest, apiserverAdmit } from './admission-chain.js';
import { applyPatch, JsonPatchError } from './json-patch.js';

/** One request as the fake received it. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: IncomingHttpHeaders;
  /** Parsed JSON body, or undefined when there was none. */
  readonly body: unknown;
}

/** Makes matching requests fail with a Status of `status`. */
export interface FailureRule {
  /** Upper-case HTTP method; any method when absent. */
  readonly method?: string;
  /** Exact path (no query) or a pattern tested against it. */
  readonly path: string | RegExp;
  readonly status: number;
  /** Status `reason`; a fitting one for the code when absent. */
  readonly reason?: string;
  readonly message?: string;
  /** How many matching requests fail; 1 by default. */
  readonly times?: number;
}

/** Options of `startKubeApiServer`. */
export interface KubeApiServerOptions {
  /** Require `Authorization: Bearer <token>`; no check when absent. */
  readonly token?: string;
  /** Epoch ms for creation timestamps. */
  readonly now?: () => number;
  /** Serve Agones' `agones.dev/v1` GameServers (a cluster with Agones installed). */
  readonly agones?: boolean;
  /**
   * Serve `networking.k8s.io/v1` ServiceCIDRs and IPAddresses (Kubernetes 1.33+), the default
   * ServiceCIDR `kubernetes` holding these CIDRs; absent: a cluster before 1.33.
   */
  readonly serviceCIDRs?: readonly string[];
}

/** What changed through HTTP, for controller stand-ins. */
export interface ApiChange {
  readonly verb: 'patch' | 'delete' | 'evict' | 'create';
  readonly resource: 'nodes' | 'pods' | 'services' | 'gameservers';
  readonly key: string;
}

/** A running fake; maps are keyed `name` (nodes) or `namespace/name` (pods, services). */
export interface KubeApiServer {
  readonly url: string;
  readonly nodes: Map<string, V1Node>;
  readonly pods: Map<string, V1Pod>;
  readonly services: Map<string, V1Service>;
  readonly events: CoreV1Event[];
  /** Replicas set through a Deployment's `scale` subresource, by namespace/name. */
  readonly deploymentReplicas: Map<string, number>;
  /** PodDisruptionBudgets (policy/v1) by namespace/name, checked by evictions. */
  readonly podDisruptionBudgets: Map<string, V1PodDisruptionBudget>;
  /** Agones GameServers by namespace/name (served only with `agones: true`). */
  readonly gameServers: Map<string, AgonesGameServer>;
  /** ServiceCIDRs by name (served only with `serviceCIDRs`). */
  readonly serviceCidrs: Map<string, V1ServiceCIDR>;
  /** IPAddresses by IP (served only with `serviceCIDRs`). */
  readonly ipAddresses: Map<string, V1IPAddress>;
  readonly requests: RecordedRequest[];
  /** The bearer token required from now on; undefined turns the check off. */
  token: string | undefined;
  /**
   * The mutating webhooks, in the order the apiserver calls them (berth's, then others), for
   * pods and Services written through HTTP (create, patch, delete, binding): empty, none.
   */
  readonly webhooks: V1MutatingWebhook[];
  /** Stores a node with uid, resourceVersion and creationTimestamp filled in; returns the stored copy. */
  addNode(node: V1Node): V1Node;
  addPod(pod: V1Pod): V1Pod;
  /**
   * Stores a Service; with `serviceCIDRs`, records its cluster IPs as IPAddresses, and throws a
   * `StatusFailure` (422, the apiserver's message) for an IP no ready ServiceCIDR covers or that
   * another Service holds.
   */
  addService(service: V1Service): V1Service;
  /** Deletes a Service and its IPAddresses, as the apiserver does once it is gone. */
  removeService(namespace: string, name: string): void;
  /** Creates a ServiceCIDR, Ready, with the finalizer the apiserver adds. */
  addServiceCidr(name: string, cidrs: readonly string[]): V1ServiceCIDR;
  /** Deletes a ServiceCIDR: gone, or Terminating while addresses only it covers remain. */
  deleteServiceCidr(name: string): void;
  addPodDisruptionBudget(budget: V1PodDisruptionBudget): V1PodDisruptionBudget;
  addGameServer(gameServer: AgonesGameServer): AgonesGameServer;
  /** A new resourceVersion, for stand-ins that change stored objects directly. */
  nextResourceVersion(): string;
  /** Runs `listener` after every change made through HTTP. */
  onChange(listener: (change: ApiChange) => void): void;
  failNext(rule: FailureRule): void;
  /** Every continue token handed out so far answers 410 `Expired` from now on. */
  expireContinueTokens(): void;
  /** A client-node config for this fake (http, `skipTLSVerify`), sending `token`. */
  kubeConfig(token?: string): KubeConfig;
  stop(): Promise<void>;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The `Status` body an apiserver answers a failed request with. */
export function failureStatus(
  code: number,
  reason: string,
  message: string,
  details?: JsonObject,
): JsonObject {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details === undefined ? {} : { details }),
    code,
  };
}

/** A failure the fake answers with a Status body. */
export class StatusFailure extends Error {
  readonly body: JsonObject;
  constructor(code: number, reason: string, message: string, details?: JsonObject) {
    super(message);
    this.body = failureStatus(code, reason, message, details);
  }
  get code(): number {
    return this.body.code as number;
  }
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

const notFound = (resource: string, name: string): StatusFailure =>
  new StatusFailure(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: resource });

const EXPIRED_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';

/** Field selectors the apiserver accepts per resource (the `strategy.go` of each core registry). */
const FIELD_LABELS: Readonly<Record<string, Readonly<Record<string, (o: JsonObject) => string>>>> =
  {
    nodes: {
      'metadata.name': (o) => str(get(o, ['metadata', 'name'])),
      'spec.unschedulable': (o) => String(get(o, ['spec', 'unschedulable']) === true),
    },
    pods: {
      'metadata.name': (o) => str(get(o, ['metadata', 'name'])),
      'metadata.namespace': (o) => str(get(o, ['metadata', 'namespace'])),
      'spec.nodeName': (o) => str(get(o, ['spec', 'nodeName'])),
      'spec.restartPolicy': (o) => str(get(o, ['spec', 'restartPolicy'])),
      'spec.schedulerName': (o) => str(get(o, ['spec', 'schedulerName'])),
      'spec.serviceAccountName': (o) => str(get(o, ['spec', 'serviceAccountName'])),
      'status.phase': (o) => str(get(o, ['status', 'phase'])),
      'status.podIP': (o) => str(get(o, ['status', 'podIP'])),
      'status.nominatedNodeName': (o) => str(get(o, ['status', 'nominatedNodeName'])),
    },
    services: {
      'metadata.name': (o) => str(get(o, ['metadata', 'name'])),
      'metadata.namespace': (o) => str(get(o, ['metadata', 'namespace'])),
    },
    events: {
      'metadata.name': (o) => str(get(o, ['metadata', 'name'])),
      'metadata.namespace': (o) => str(get(o, ['metadata', 'namespace'])),
      'involvedObject.kind': (o) => str(get(o, ['involvedObject', 'kind'])),
      'involvedObject.name': (o) => str(get(o, ['involvedObject', 'name'])),
      reason: (o) => str(get(o, ['reason'])),
      type: (o) => str(get(o, ['type'])),
    },
  };

/** Starts the fake on 127.0.0.1 at a free port. */
export async function startKubeApiServer(
  options: KubeApiServerOptions = {},
): Promise<KubeApiServer> {
  const now = options.now ?? Date.now;
  const nodes = new Map<string, V1Node>();
  const pods = new Map<string, V1Pod>();
  const services = new Map<string, V1Service>();
  const events: CoreV1Event[] = [];
  const deploymentReplicas = new Map<string, number>();
  const podDisruptionBudgets = new Map<string, V1PodDisruptionBudget>();
  const gameServers = new Map<string, AgonesGameServer>();
  const serviceCidrs = new Map<string, V1ServiceCIDR>();
  const ipAddresses = new Map<string, V1IPAddress>();
  const listeners: ((change: ApiChange) => void)[] = [];
  const changed = (change: ApiChange): void => {
    for (const listener of listeners) listener(change);
  };
  const requests: RecordedRequest[] = [];
  const failures: { rule: FailureRule; left: number }[] = [];
  let resourceVersion = 1000;
  let continueGeneration = 0;

  const nextVersion = (): string => String(++resourceVersion);

  /** A JSON copy with the server-set metadata filled in. */
  const admit = (object: object, namespaced: boolean): JsonObject => {
    const copy = toJson(object);
    const metadata = asObject(copy.metadata) ?? {};
    copy.metadata = {
      ...metadata,
      ...(namespaced ? { namespace: str(metadata.namespace) || 'default' } : {}),
      uid: str(metadata.uid) || randomUUID(),
      resourceVersion: nextVersion(),
      creationTimestamp: str(metadata.creationTimestamp) || new Date(now()).toISOString(),
    };
    return copy;
  };

  const collections = {
    nodes: nodes as Map<string, object>,
    pods: pods as Map<string, object>,
    services: services as Map<string, object>,
    gameservers: gameServers as Map<string, object>,
    servicecidrs: serviceCidrs as Map<string, object>,
    ipaddresses: ipAddresses as Map<string, object>,
  } as const;

  const list = (
    resource: 'nodes' | 'pods' | 'services' | 'events' | 'gameservers' | NetworkingResource,
    namespace: string | undefined,
    query: Readonly<Record<string, string>>,
  ): JsonObject => {
    const labelMatch = parseLabelSelector(query.labelSelector ?? '');
    const fieldMatch = parseFieldSelector(resource, query.fieldSelector ?? '');
    const all: [string, JsonObject][] =
      resource === 'events'
        ? events.map((event) => {
            const json = toJson(event);
            return [
              `${str(get(json, ['metadata', 'namespace']))}/${str(get(json, ['metadata', 'name']))}`,
              json,
            ];
          })
        : [...collections[resource].entries()].map(([key, value]) => [key, toJson(value)]);
    const matching = all
      .filter(
        ([, object]) =>
          namespace === undefined || get(object, ['metadata', 'namespace']) === namespace,
      )
      .filter(([, object]) => labelMatch(object) && fieldMatch(object))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

    let start = 0;
    if (query.continue) {
      const token = decodeContinue(query.continue);
      if (token.generation !== continueGeneration) {
        throw new StatusFailure(410, 'Expired', EXPIRED_MESSAGE);
      }
      start = matching.findIndex(([key]) => key > token.after);
      if (start < 0) start = matching.length;
    }
    const limit = Number.parseInt(query.limit ?? '0', 10);
    const end = limit > 0 ? Math.min(start + limit, matching.length) : matching.length;
    const page = matching.slice(start, end);
    const last = page.at(-1);
    const more = end < matching.length && last !== undefined;
    const selected = Boolean(query.labelSelector || query.fieldSelector);
    const kind = {
      nodes: 'NodeList',
      pods: 'PodList',
      services: 'ServiceList',
      events: 'EventList',
      gameservers: 'GameServerList',
      servicecidrs: 'ServiceCIDRList',
      ipaddresses: 'IPAddressList',
    }[resource];
    const apiVersion =
      resource === 'gameservers'
        ? 'agones.dev/v1'
        : resource === 'servicecidrs' || resource === 'ipaddresses'
          ? 'networking.k8s.io/v1'
          : 'v1';
    return {
      kind,
      apiVersion,
      metadata: {
        resourceVersion: String(resourceVersion),
        ...(more
          ? {
              continue: encodeContinue({ after: last[0], generation: continueGeneration }),
              ...(selected ? {} : { remainingItemCount: matching.length - end }),
            }
          : {}),
      },
      items: page.map(([, object]) => object),
    };
  };

  const getOne = (
    resource: 'nodes' | 'pods' | 'services' | 'gameservers' | NetworkingResource,
    key: string,
    name: string,
  ): JsonObject => {
    const found = collections[resource].get(key);
    if (!found) throw notFound(resource, name);
    return toJson(found);
  };

  /** A JSON patch of a stored node or pod, with the apiserver's answers. */
  /** The object a JSON patch of `key` makes, and the one it was made from; nothing stored. */
  const patchedObject = (
    resource: 'nodes' | 'pods' | 'services' | 'gameservers',
    key: string,
    name: string,
    contentType: string,
    body: unknown,
  ): { before: JsonObject; object: JsonObject } => {
    const current = collections[resource].get(key);
    if (!current) throw notFound(resource, name);
    if (contentType !== 'application/json-patch+json') {
      throw new StatusFailure(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
      );
    }
    if (!Array.isArray(body)) {
      throw new StatusFailure(
        400,
        'BadRequest',
        'json: cannot unmarshal object into Go value of type jsonpatch.Patch',
      );
    }
    const before = toJson(current);
    let patched: Json;
    try {
      patched = applyPatch(before, body) as Json;
    } catch (error) {
      if (!(error instanceof JsonPatchError)) throw error;
      // The apiserver drops the patch library's message: NewGenericServerResponse(422, ...).
      throw new StatusFailure(
        422,
        'Invalid',
        'the server rejected our request due to an error in our request',
        {},
      );
    }
    const object = asObject(patched);
    if (!object) throw new StatusFailure(400, 'BadRequest', 'the patched object is not an object');
    return { before, object };
  };

  /** Stores a patched object: its name unchanged, its resourceVersion still the stored one. */
  const storePatched = (
    resource: 'nodes' | 'pods' | 'services' | 'gameservers',
    key: string,
    name: string,
    object: JsonObject,
  ): JsonObject => {
    const current = collections[resource].get(key);
    if (!current) throw notFound(resource, name);
    const before = toJson(current);
    const metadata = asObject(object.metadata) ?? {};
    if (str(metadata.name) !== name) {
      throw new StatusFailure(
        400,
        'BadRequest',
        `the name of the object (${str(metadata.name)}) does not match the name on the URL (${name})`,
      );
    }
    if (str(metadata.resourceVersion) !== str(get(before, ['metadata', 'resourceVersion']))) {
      throw new StatusFailure(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, kind: resource },
      );
    }
    const stored = { ...object, metadata: { ...metadata, resourceVersion: nextVersion() } };
    collections[resource].set(key, stored);
    changed({ verb: 'patch', resource, key });
    return toJson(stored);
  };

  const patchNode = (name: string, contentType: string, body: unknown): JsonObject => {
    const { object } = patchedObject('nodes', name, name, contentType, body);
    return storePatched('nodes', name, name, object);
  };

  const checkPreconditions = (resource: string, name: string, stored: object, body: unknown) => {
    const options = asObject(body === undefined ? null : toJson(body));
    const wanted = asObject(
      get(options ?? {}, ['preconditions']) ??
        get(options ?? {}, ['deleteOptions', 'preconditions']),
    );
    if (!wanted) return;
    const metadata = asObject(get(toJson(stored), ['metadata'])) ?? {};
    const expected = {
      uid: str(wanted.uid) || undefined,
      resourceVersion: str(wanted.resourceVersion) || undefined,
    };
    if (
      !meetsPreconditions(
        { uid: str(metadata.uid), resourceVersion: str(metadata.resourceVersion) },
        expected,
      )
    ) {
      const field =
        expected.uid !== undefined && expected.uid !== str(metadata.uid)
          ? 'UID'
          : 'ResourceVersion';
      const value = field === 'UID' ? expected.uid : expected.resourceVersion;
      const actual = field === 'UID' ? str(metadata.uid) : str(metadata.resourceVersion);
      throw new StatusFailure(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${resource} "${name}": Precondition failed: ${field} in precondition: ${value}, ${field} in object meta: ${actual}`,
        { name, kind: resource },
      );
    }
  };

  const success = (kind: string, name: string, uid: string, code?: number): JsonObject => ({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name, kind, uid },
    ...(code === undefined ? {} : { code }),
  });

  const deletePod = (key: string, name: string, body: unknown): JsonObject => {
    const current = pods.get(key);
    if (!current) throw notFound('pods', name);
    checkPreconditions('pods', name, current, body);
    pods.delete(key);
    changed({ verb: 'delete', resource: 'pods', key });
    return toJson(current);
  };

  /**
   * The eviction registry (`pkg/registry/core/pod/storage/eviction.go`): preconditions, then the
   * one PodDisruptionBudget over the pod, then the delete. A pod that is not running (Pending,
   * Succeeded, Failed) is deleted without looking at budgets, as the registry does.
   */
  const evictPod = (namespace: string, name: string, body: unknown): JsonObject => {
    const key = `${namespace}/${name}`;
    const current = pods.get(key);
    if (!current) throw notFound('pods', name);
    checkPreconditions('pods', name, current, body);
    const json = toJson(current);
    if (str(get(json, ['status', 'phase'])) === 'Running') {
      const labels = asObject(get(json, ['metadata', 'labels'])) ?? {};
      const budgets = [...podDisruptionBudgets.values()]
        .map((budget) => toJson(budget))
        .filter(
          (budget) =>
            str(get(budget, ['metadata', 'namespace'])) === namespace &&
            selects(asObject(get(budget, ['spec', 'selector'])), labels),
        );
      if (budgets.length > 1) {
        throw new StatusFailure(
          500,
          'InternalError',
          'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
        );
      }
      const [budget] = budgets;
      if (budget) {
        const { allowed, desired, healthy } = disruptionsAllowed(budget, namespace);
        if (allowed <= 0) {
          throw new StatusFailure(
            429,
            'TooManyRequests',
            "Cannot evict pod as it would violate the pod's disruption budget.",
            {
              causes: [
                {
                  reason: 'DisruptionBudget',
                  message: `The disruption budget ${str(get(budget, ['metadata', 'name']))} needs ${desired} healthy pods and has ${healthy} currently`,
                },
              ],
            },
          );
        }
      }
    }
    pods.delete(key);
    changed({ verb: 'evict', resource: 'pods', key });
    return success('pods', name, str(get(json, ['metadata', 'uid'])), 201);
  };

  /**
   * What the disruption controller would write in `status.disruptionsAllowed`, with the pods the
   * budget selects now as the expected count (the controller takes a percentage against the
   * owning controller's scale, which the fake does not keep).
   */
  const disruptionsAllowed = (budget: JsonObject, namespace: string) => {
    const selector = asObject(get(budget, ['spec', 'selector']));
    const covered = [...pods.values()]
      .map((pod) => toJson(pod))
      .filter(
        (pod) =>
          str(get(pod, ['metadata', 'namespace'])) === namespace &&
          selects(selector, asObject(get(pod, ['metadata', 'labels'])) ?? {}),
      );
    const expected = covered.length;
    const healthy = covered.filter(
      (pod) =>
        str(get(pod, ['status', 'phase'])) === 'Running' &&
        get(pod, ['metadata', 'deletionTimestamp']) === undefined,
    ).length;
    const minAvailable = get(budget, ['spec', 'minAvailable']);
    const maxUnavailable = get(budget, ['spec', 'maxUnavailable']);
    const desired =
      minAvailable !== undefined
        ? scaledValue(minAvailable, expected, true)
        : expected - scaledValue(maxUnavailable ?? 0, expected, true);
    return { allowed: healthy - desired, desired, healthy };
  };

  const deleteGameServer = (namespace: string, name: string, body: unknown): JsonObject => {
    const key = `${namespace}/${name}`;
    const current = gameServers.get(key);
    if (!current) throw notFound('gameservers.agones.dev', name);
    checkPreconditions('gameservers.agones.dev', name, current, body);
    gameServers.delete(key);
    const uid = current.metadata?.uid;
    // The garbage collector deletes the pods the GameServer owns.
    for (const [podKey, pod] of pods) {
      if (pod.metadata?.ownerReferences?.some((owner) => owner.uid === uid)) pods.delete(podKey);
    }
    changed({ verb: 'delete', resource: 'gameservers', key });
    return toJson(current);
  };

  const deleteNode = (name: string): JsonObject => {
    const current = nodes.get(name);
    if (!current) throw notFound('nodes', name);
    nodes.delete(name);
    changed({ verb: 'delete', resource: 'nodes', key: name });
    return success('nodes', name, str(get(toJson(current), ['metadata', 'uid'])));
  };

  const createEvent = (namespace: string, body: unknown): JsonObject => {
    const event = asObject(body === undefined ? null : toJson(body));
    if (!event)
      throw new StatusFailure(400, 'BadRequest', 'the body of the request is not an Event');
    const metadata = asObject(event.metadata) ?? {};
    const bodyNamespace = str(metadata.namespace);
    if (bodyNamespace && bodyNamespace !== namespace) {
      throw new StatusFailure(
        400,
        'BadRequest',
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    const name =
      str(metadata.name) ||
      (str(metadata.generateName) ? generatedName(str(metadata.generateName)) : '');
    if (!name) {
      throw invalid(
        'Event',
        '',
        'metadata.name',
        '',
        'name or generateName is required',
        'FieldValueRequired',
      );
    }
    const involvedNamespace = str(get(event, ['involvedObject', 'namespace']));
    const namespaceAgrees = involvedNamespace
      ? involvedNamespace === namespace
      : namespace === 'default' || namespace === '';
    if (!namespaceAgrees) {
      throw invalid(
        'Event',
        name,
        'involvedObject.namespace',
        involvedNamespace,
        'does not match event.namespace',
      );
    }
    if (events.some((e) => e.metadata.name === name && e.metadata.namespace === namespace)) {
      throw new StatusFailure(409, 'AlreadyExists', `events "${name}" already exists`, {
        name,
        kind: 'events',
      });
    }
    const stored = admit({ ...event, metadata: { ...metadata, name, namespace } }, true);
    events.push(stored as unknown as CoreV1Event);
    return stored;
  };

  /** The ServiceCIDR blocks new cluster IPs may come from: Ready and not being deleted. */
  const readyBlocks = (): CidrBlock[] =>
    [...serviceCidrs.values()]
      .filter(
        (cidr) =>
          !cidr.metadata?.deletionTimestamp &&
          cidr.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'False',
      )
      .flatMap((cidr) => (cidr.spec?.cidrs ?? []).flatMap((text) => parseCidr(text) ?? []));

  /** Whether a block offers the IP: inside, and not its network address or IPv4 broadcast. */
  const offers = (block: CidrBlock, ip: { family: 'IPv4' | 'IPv6'; value: bigint }): boolean => {
    if (!cidrContains(block, ip) || ip.value === block.network) return false;
    const last = block.network + (1n << BigInt(block.hostBits)) - 1n;
    return block.family === 'IPv6' || ip.value !== last;
  };

  /**
   * What the apiserver's allocators do for a Service it stores: each cluster IP is checked
   * against the ready ServiceCIDRs and the IPAddresses, then recorded as one.
   */
  const allocateClusterIps = (stored: V1Service): void => {
    const namespace = stored.metadata?.namespace ?? 'default';
    const name = stored.metadata?.name ?? '';
    const single = stored.spec?.clusterIP ?? '';
    const listed = stored.spec?.clusterIPs?.length ? stored.spec.clusterIPs : [single];
    const wanted = single === '' || single === 'None' ? [] : listed;
    const mine = (address: V1IPAddress | undefined) =>
      address?.spec?.parentRef?.namespace === namespace && address.spec.parentRef.name === name;
    const canonical: string[] = [];
    for (const text of wanted) {
      const ip = parseIp(text);
      const failed = (detail: string) =>
        new StatusFailure(
          422,
          'Invalid',
          `Service "${name}" is invalid: spec.clusterIPs: Invalid value: ${JSON.stringify(listed)}: failed to allocate IP ${text}: ${detail}`,
          {
            name,
            kind: 'Service',
            causes: [
              {
                reason: 'FieldValueInvalid',
                message: `Invalid value: ${JSON.stringify(listed)}: failed to allocate IP ${text}: ${detail}`,
                field: 'spec.clusterIPs',
              },
            ],
          },
        );
      if (!ip) throw failed('not a valid IP');
      const key = formatIp(ip);
      const held = ipAddresses.get(key);
      if (held && !mine(held)) throw failed('provided IP is already allocated');
      // An IP the Service already holds stays its own, whatever became of its range since.
      if (!held && !readyBlocks().some((block) => offers(block, ip))) {
        throw failed('the provided network does not match the current range');
      }
      canonical.push(key);
    }
    for (const [key, address] of ipAddresses) {
      if (mine(address) && !canonical.includes(key)) ipAddresses.delete(key);
    }
    for (const key of canonical) {
      if (ipAddresses.has(key)) continue;
      const family = key.includes(':') ? 'IPv6' : 'IPv4';
      ipAddresses.set(
        key,
        admit(
          {
            apiVersion: 'networking.k8s.io/v1',
            kind: 'IPAddress',
            metadata: {
              name: key,
              labels: {
                'ipaddress.kubernetes.io/ip-family': family,
                'ipaddress.kubernetes.io/managed-by': 'ipallocator.k8s.io',
              },
            },
            spec: { parentRef: { group: '', resource: 'services', namespace, name } },
          },
          false,
        ) as unknown as V1IPAddress,
      );
    }
    syncServiceCidrs();
  };

  /**
   * The servicecidrs controller: a deleted ServiceCIDR goes once no IPAddress needs it (none
   * inside it that another ready one does not also cover), else it stays Ready False,
   * Terminating.
   */
  const syncServiceCidrs = (): void => {
    for (const [name, cidr] of serviceCidrs) {
      if (!cidr.metadata?.deletionTimestamp) continue;
      const own = (cidr.spec?.cidrs ?? []).flatMap((text) => parseCidr(text) ?? []);
      const others = [...serviceCidrs.values()]
        .filter((o) => o !== cidr && !o.metadata?.deletionTimestamp)
        .flatMap((o) => (o.spec?.cidrs ?? []).flatMap((text) => parseCidr(text) ?? []));
      const needed = [...ipAddresses.keys()].some((key) => {
        const ip = parseIp(key);
        return (
          ip !== undefined &&
          own.some((block) => cidrContains(block, ip)) &&
          !others.some((block) => cidrContains(block, ip))
        );
      });
      if (!needed) {
        serviceCidrs.delete(name);
        continue;
      }
      cidr.status = {
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'Terminating',
            message:
              'There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR',
            lastTransitionTime: new Date(now()),
          },
        ],
      };
    }
  };

  const createServiceCidr = (name: string, cidrs: readonly string[]): V1ServiceCIDR => {
    if (serviceCidrs.has(name)) {
      throw new StatusFailure(
        409,
        'AlreadyExists',
        `servicecidrs.networking.k8s.io "${name}" already exists`,
        {
          name,
          group: 'networking.k8s.io',
          kind: 'servicecidrs',
        },
      );
    }
    const stored = admit(
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'ServiceCIDR',
        metadata: { name, finalizers: ['networking.k8s.io/service-cidr-finalizer'] },
        spec: { cidrs: [...cidrs] },
        status: {
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: '',
              message: 'Kubernetes Service CIDR is ready',
              lastTransitionTime: new Date(now()).toISOString(),
            },
          ],
        },
      },
      false,
    ) as V1ServiceCIDR;
    serviceCidrs.set(name, stored);
    return stored;
  };

  const deleteServiceCidr = (name: string): JsonObject => {
    const cidr = serviceCidrs.get(name);
    if (!cidr) throw notFound('servicecidrs.networking.k8s.io', name);
    if (!cidr.metadata?.deletionTimestamp) {
      cidr.metadata = {
        ...cidr.metadata,
        deletionTimestamp: new Date(now()),
        resourceVersion: nextVersion(),
      };
    }
    syncServiceCidrs();
    return toJson(serviceCidrs.get(name) ?? cidr);
  };

  const route = (
    method: string,
    path: string,
    query: Readonly<Record<string, string>>,
    contentType: string,
    body: unknown,
  ): { status: number; body: JsonObject } => {
    const parts = path
      .split('/')
      .filter((part) => part.length > 0)
      .map(decodeURIComponent);
    const methodNotAllowed = (): StatusFailure =>
      new StatusFailure(
        405,
        'MethodNotAllowed',
        'the server does not allow this method on the requested resource',
      );
    // /apis/agones.dev/v1[/namespaces/{ns}]/gameservers[/name]
    if (parts[0] === 'apis' && parts[1] === 'agones.dev' && options.agones) {
      if (parts[2] !== 'v1') throw unknownPath();
      const rest = parts.slice(3);
      if (rest.length === 1 && rest[0] === 'gameservers') {
        if (method !== 'GET') throw methodNotAllowed();
        return { status: 200, body: list('gameservers', undefined, query) };
      }
      const [namespaces, namespace = '', resource, name] = rest;
      if (namespaces !== 'namespaces' || resource !== 'gameservers' || rest.length > 4) {
        throw unknownPath();
      }
      if (name === undefined) {
        if (method === 'GET') return { status: 200, body: list('gameservers', namespace, query) };
        if (method === 'POST') {
          const stored = server.addGameServer({
            ...(body as AgonesGameServer),
            metadata: { ...(body as AgonesGameServer).metadata, namespace },
          });
          changed({
            verb: 'create',
            resource: 'gameservers',
            key: `${namespace}/${stored.metadata?.name}`,
          });
          return { status: 201, body: toJson(stored) };
        }
        throw methodNotAllowed();
      }
      if (method === 'GET') {
        return { status: 200, body: getOne('gameservers', `${namespace}/${name}`, name) };
      }
      if (method === 'DELETE')
        return { status: 200, body: deleteGameServer(namespace, name, body) };
      if (method === 'PATCH') {
        const key = `${namespace}/${name}`;
        const { object } = patchedObject('gameservers', key, name, contentType, body);
        return { status: 200, body: storePatched('gameservers', key, name, object) };
      }
      throw methodNotAllowed();
    }
    // /apis/networking.k8s.io/v1/{servicecidrs,ipaddresses}[/name] (Kubernetes 1.33+).
    if (parts[0] === 'apis' && parts[1] === 'networking.k8s.io' && options.serviceCIDRs) {
      const [, , version, resource, name] = parts;
      if (
        version !== 'v1' ||
        (resource !== 'servicecidrs' && resource !== 'ipaddresses') ||
        parts.length > 5
      ) {
        throw unknownPath();
      }
      if (name === undefined) {
        if (method === 'GET') return { status: 200, body: list(resource, undefined, query) };
        if (method === 'POST' && resource === 'servicecidrs') {
          const object = asObject(body === undefined ? null : toJson(body)) ?? {};
          const cidrs = get(object, ['spec', 'cidrs']);
          const stored = createServiceCidr(
            str(get(object, ['metadata', 'name'])),
            Array.isArray(cidrs) ? cidrs.map((c) => str(c)) : [],
          );
          return { status: 201, body: toJson(stored) };
        }
        throw methodNotAllowed();
      }
      if (method === 'GET') return { status: 200, body: getOne(resource, name, name) };
      if (method === 'DELETE' && resource === 'servicecidrs') {
        return { status: 200, body: deleteServiceCidr(name) };
      }
      throw methodNotAllowed();
    }
    // /apis/policy/v1/namespaces/{ns}/poddisruptionbudgets: read by tests; evictions check them.
    if (parts[0] === 'apis' && parts[1] === 'policy' && parts[2] === 'v1') {
      const [, , , namespaces, namespace, resource] = parts;
      if (
        namespaces !== 'namespaces' ||
        resource !== 'poddisruptionbudgets' ||
        parts.length !== 6
      ) {
        throw unknownPath();
      }
      if (method === 'POST') {
        const stored = server.addPodDisruptionBudget({
          ...(body as V1PodDisruptionBudget),
          metadata: { ...(body as V1PodDisruptionBudget).metadata, namespace },
        });
        return { status: 201, body: toJson(stored) };
      }
      throw methodNotAllowed();
    }
    // /apis/apps/v1/namespaces/{ns}/deployments/{name}/scale: only the scale berth sets.
    if (parts[0] === 'apis' && parts[1] === 'apps' && parts[2] === 'v1') {
      const [, , , namespaces, namespace, deployments, name, scale] = parts;
      if (namespaces !== 'namespaces' || deployments !== 'deployments' || scale !== 'scale') {
        throw unknownPath();
      }
      if (method !== 'PATCH') throw methodNotAllowed();
      const key = `${namespace}/${name}`;
      const current = { spec: { replicas: deploymentReplicas.get(key) ?? 0 } };
      const patched = applyPatch(current, body as unknown[]) as { spec: { replicas: number } };
      deploymentReplicas.set(key, patched.spec.replicas);
      return {
        status: 200,
        body: {
          apiVersion: 'autoscaling/v1',
          kind: 'Scale',
          metadata: { name: name ?? '', namespace: namespace ?? '' },
          spec: { replicas: patched.spec.replicas },
        },
      };
    }
    if (parts[0] !== 'api' || parts[1] !== 'v1') throw unknownPath();
    const rest = parts.slice(2);

    // /api/v1/nodes[/name]
    if (rest[0] === 'nodes') {
      const name = rest[1];
      if (rest.length === 1) {
        if (method !== 'GET') throw methodNotAllowed();
        return { status: 200, body: list('nodes', undefined, query) };
      }
      if (rest.length !== 2 || name === undefined) throw unknownPath();
      if (method === 'GET') return { status: 200, body: getOne('nodes', name, name) };
      if (method === 'PATCH') {
        return { status: 200, body: patchNode(name, contentType, body) };
      }
      if (method === 'DELETE') return { status: 200, body: deleteNode(name) };
      throw methodNotAllowed();
    }
    // /api/v1/pods, /api/v1/services (all namespaces)
    if (
      rest.length === 1 &&
      (rest[0] === 'pods' || rest[0] === 'services' || rest[0] === 'events')
    ) {
      if (method !== 'GET') throw methodNotAllowed();
      return { status: 200, body: list(rest[0], undefined, query) };
    }
    // /api/v1/namespaces/{ns}/{resource}[/name]
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      const namespace = rest[1] ?? '';
      const resource = rest[2];
      const name = rest[3];
      if (resource === 'events' && rest.length === 3) {
        if (method === 'POST') return { status: 201, body: createEvent(namespace, body) };
        if (method === 'GET') return { status: 200, body: list('events', namespace, query) };
        throw methodNotAllowed();
      }
      if (resource === 'events' && rest.length === 4 && name !== undefined) {
        const index = events.findIndex(
          (e) => e.metadata.name === name && e.metadata.namespace === namespace,
        );
        const found = events[index];
        if (!found) throw new StatusFailure(404, 'NotFound', `events "${name}" not found`);
        if (method === 'GET') return { status: 200, body: found as unknown as JsonObject };
        if (method === 'PATCH') {
          if (contentType !== 'application/json-patch+json') {
            throw new StatusFailure(
              415,
              'UnsupportedMediaType',
              `unsupported patch type ${contentType}`,
            );
          }
          let patched: unknown;
          try {
            patched = applyPatch(found, body as unknown[]);
          } catch {
            // The apiserver's answer to a failed `test`: 422 with no field causes.
            throw new StatusFailure(
              422,
              'Invalid',
              'the server rejected our request due to an error in our request',
            );
          }
          events[index] = patched as CoreV1Event;
          return { status: 200, body: patched as JsonObject };
        }
        throw methodNotAllowed();
      }
      if (resource === 'pods' && rest.length === 5 && rest[4] === 'eviction' && name) {
        if (method !== 'POST') throw methodNotAllowed();
        return { status: 201, body: evictPod(namespace, name, body) };
      }
      // Writes of pods and Services go through the admission chain (`admittedRoute`).
      if ((resource === 'pods' || resource === 'services') && rest.length <= 4) {
        if (method !== 'GET') throw methodNotAllowed();
        if (name === undefined) return { status: 200, body: list(resource, namespace, query) };
        return { status: 200, body: getOne(resource, `${namespace}/${name}`, name) };
      }
    }
    throw unknownPath();
  };

  /** Runs a request through the admission chain; the object as the webhooks left it. */
  const admitted = async (call: ApiserverRequest): Promise<JsonObject> => {
    const outcome = await apiserverAdmit(server.webhooks, call);
    if (!outcome.allowed) {
      const code = outcome.code ?? 400;
      throw new StatusFailure(code, REASONS[code] ?? 'BadRequest', outcome.message ?? '');
    }
    return asObject(toJson(outcome.object ?? null)) ?? {};
  };

  /** POST of a pod or Service: admitted, then named from its generateName, then stored. */
  const createAdmitted = async (
    resource: 'pods' | 'services',
    namespace: string,
    body: unknown,
    dryRun: boolean,
  ): Promise<JsonObject> => {
    const given = asObject(body === undefined ? null : toJson(body));
    if (!given)
      throw new StatusFailure(400, 'BadRequest', 'the body of the request is not an object');
    const metadata = asObject(given.metadata) ?? {};
    if (str(metadata.namespace) && str(metadata.namespace) !== namespace) {
      throw new StatusFailure(
        400,
        'BadRequest',
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    // What only the apiserver sets is dropped from what the client sent, a copy's uid included.
    const { uid: _uid, resourceVersion: _rv, creationTimestamp: _ts, ...fields } = metadata;
    const object = await admitted({
      resource,
      operation: 'CREATE',
      namespace,
      ...(str(metadata.name) ? { name: str(metadata.name) } : {}),
      object: { ...given, metadata: { ...fields, namespace } },
      dryRun,
    });
    const admittedMetadata = asObject(object.metadata) ?? {};
    const generateName = str(admittedMetadata.generateName);
    const name = str(admittedMetadata.name) || (generateName ? generatedName(generateName) : '');
    const kind = resource === 'pods' ? 'Pod' : 'Service';
    if (!name) {
      throw invalid(
        kind,
        '',
        'metadata.name',
        '',
        'name or generateName is required',
        'FieldValueRequired',
      );
    }
    const key = `${namespace}/${name}`;
    if (collections[resource].has(key)) {
      throw new StatusFailure(409, 'AlreadyExists', `${resource} "${name}" already exists`, {
        name,
        kind: resource,
      });
    }
    const named = { ...object, metadata: { ...admittedMetadata, name, namespace } };
    if (dryRun) return toJson(named);
    const stored =
      resource === 'pods' ? server.addPod(named as V1Pod) : server.addService(named as V1Service);
    changed({ verb: 'create', resource, key });
    return toJson(stored);
  };

  /** PATCH of a pod or Service: the patched object admitted as an UPDATE, then stored. */
  const patchAdmitted = async (
    resource: 'pods' | 'services',
    namespace: string,
    name: string,
    contentType: string,
    body: unknown,
    dryRun: boolean,
  ): Promise<JsonObject> => {
    const key = `${namespace}/${name}`;
    const { before, object } = patchedObject(resource, key, name, contentType, body);
    const final = await admitted({
      resource,
      operation: 'UPDATE',
      namespace,
      name,
      object,
      oldObject: before,
      dryRun,
    });
    return dryRun ? final : storePatched(resource, key, name, final);
  };

  /** DELETE of a pod or Service: admitted with the stored object as `oldObject`, then deleted. */
  const deleteAdmitted = async (
    resource: 'pods' | 'services',
    namespace: string,
    name: string,
    body: unknown,
    dryRun: boolean,
  ): Promise<JsonObject> => {
    const key = `${namespace}/${name}`;
    const current = collections[resource].get(key);
    if (!current) throw notFound(resource, name);
    const oldObject = toJson(current);
    await admitted({ resource, operation: 'DELETE', namespace, name, oldObject, dryRun });
    if (dryRun) return oldObject;
    if (resource === 'pods') return deletePod(key, name, body);
    checkPreconditions('services', name, current, body);
    server.removeService(namespace, name);
    changed({ verb: 'delete', resource, key });
    return oldObject;
  };

  /**
   * POST of a Binding: admitted as `pods/binding` CREATE, then the pod bound to its target with
   * the Binding's annotations copied onto it, as the apiserver's pod storage does.
   */
  const bindPod = async (
    namespace: string,
    name: string,
    body: unknown,
    dryRun: boolean,
  ): Promise<JsonObject> => {
    const key = `${namespace}/${name}`;
    if (!pods.has(key)) throw notFound('pods', name);
    const binding = asObject(body === undefined ? null : toJson(body)) ?? {};
    const target = str(get(binding, ['target', 'name']));
    if (!target) {
      throw invalid('Binding', name, 'target.name', '', 'Required value', 'FieldValueRequired');
    }
    const admittedBinding = await admitted({
      resource: 'pods',
      subResource: 'binding',
      operation: 'CREATE',
      namespace,
      name,
      object: { ...binding, metadata: { ...(asObject(binding.metadata) ?? {}), name, namespace } },
      dryRun,
    });
    const pod = toJson(pods.get(key));
    const assigned = str(get(pod, ['spec', 'nodeName']));
    if (assigned) {
      throw new StatusFailure(
        409,
        'Conflict',
        `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node "${assigned}"`,
      );
    }
    if (!dryRun) {
      const metadata = asObject(pod.metadata) ?? {};
      const annotations = asObject(get(admittedBinding, ['metadata', 'annotations'])) ?? {};
      pod.metadata = {
        ...metadata,
        annotations: { ...(asObject(metadata.annotations) ?? {}), ...annotations },
        resourceVersion: nextVersion(),
      };
      pod.spec = { ...(asObject(pod.spec) ?? {}), nodeName: target };
      pods.set(key, pod as unknown as V1Pod);
      changed({ verb: 'patch', resource: 'pods', key });
    }
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  };

  /** The requests the admission chain sees, answered; undefined for every other request. */
  const admittedRoute = async (
    method: string,
    path: string,
    query: Readonly<Record<string, string>>,
    contentType: string,
    body: unknown,
  ): Promise<{ status: number; body: JsonObject } | undefined> => {
    const parts = path
      .split('/')
      .filter((part) => part.length > 0)
      .map(decodeURIComponent);
    const [api, version, namespaces, namespace = '', resource, name, subresource, ...more] = parts;
    if (api !== 'api' || version !== 'v1' || namespaces !== 'namespaces' || more.length > 0) {
      return undefined;
    }
    if (resource !== 'pods' && resource !== 'services') return undefined;
    const dryRun = query.dryRun === 'All';
    if (name === undefined) {
      if (method !== 'POST') return undefined;
      return { status: 201, body: await createAdmitted(resource, namespace, body, dryRun) };
    }
    if (subresource === 'binding' && resource === 'pods' && method === 'POST') {
      return { status: 201, body: await bindPod(namespace, name, body, dryRun) };
    }
    if (subresource !== undefined) return undefined;
    if (method === 'PATCH') {
      const patched = await patchAdmitted(resource, namespace, name, contentType, body, dryRun);
      return { status: 200, body: patched };
    }
    if (method === 'DELETE') {
      return { status: 200, body: await deleteAdmitted(resource, namespace, name, body, dryRun) };
    }
    return undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams.entries());
    const raw = await readBody(req);
    let body: unknown;
    let badJson = false;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        badJson = true;
      }
    }
    requests.push({ method, path: url.pathname, query, headers: req.headers, body });

    const send = (status: number, payload: JsonObject): void => {
      const text = JSON.stringify(payload);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };

    try {
      if (server.token !== undefined && req.headers.authorization !== `Bearer ${server.token}`) {
        throw new StatusFailure(401, 'Unauthorized', 'Unauthorized');
      }
      const failure = failures.find(
        ({ rule }) =>
          (rule.method === undefined || rule.method === method) &&
          (typeof rule.path === 'string'
            ? rule.path === url.pathname
            : rule.path.test(url.pathname)),
      );
      if (failure) {
        failure.left--;
        if (failure.left <= 0) failures.splice(failures.indexOf(failure), 1);
        const { status, reason, message } = failure.rule;
        throw new StatusFailure(
          status,
          reason ?? REASONS[status] ?? 'Unknown',
          message ?? `injected failure ${status}`,
        );
      }
      if (badJson) throw new StatusFailure(400, 'BadRequest', 'the request body is not valid JSON');
      const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
      const answer =
        (await admittedRoute(method, url.pathname, query, contentType, body)) ??
        route(method, url.pathname, query, contentType, body);
      send(answer.status, answer.body);
    } catch (error) {
      if (error instanceof StatusFailure) {
        send(error.code, error.body);
        return;
      }
      send(
        500,
        new StatusFailure(500, 'InternalError', `fake apiserver bug: ${String(error)}`).body,
      );
    }
  };

  const http = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  const server: KubeApiServer = {
    url,
    nodes,
    pods,
    services,
    events,
    deploymentReplicas,
    podDisruptionBudgets,
    gameServers,
    serviceCidrs,
    ipAddresses,
    requests,
    token: options.token,
    webhooks: [],
    addNode(node) {
      const stored = admit(node, false) as V1Node;
      nodes.set(stored.metadata?.name ?? '', stored);
      return stored;
    },
    addPod(pod) {
      const stored = admit(pod, true) as V1Pod;
      pods.set(`${stored.metadata?.namespace}/${stored.metadata?.name}`, stored);
      return stored;
    },
    addService(service) {
      const stored = admit(service, true) as V1Service;
      if (options.serviceCIDRs) allocateClusterIps(stored);
      services.set(`${stored.metadata?.namespace}/${stored.metadata?.name}`, stored);
      return stored;
    },
    removeService(namespace, name) {
      services.delete(`${namespace}/${name}`);
      for (const [key, address] of ipAddresses) {
        const parent = address.spec?.parentRef;
        if (parent?.namespace === namespace && parent.name === name) ipAddresses.delete(key);
      }
      syncServiceCidrs();
    },
    addServiceCidr: createServiceCidr,
    deleteServiceCidr(name) {
      deleteServiceCidr(name);
    },
    addPodDisruptionBudget(budget) {
      const stored = admit(budget, true) as V1PodDisruptionBudget;
      podDisruptionBudgets.set(`${stored.metadata?.namespace}/${stored.metadata?.name}`, stored);
      return stored;
    },
    addGameServer(gameServer) {
      const stored = admit(gameServer, true) as AgonesGameServer;
      gameServers.set(`${stored.metadata?.namespace}/${stored.metadata?.name}`, stored);
      return stored;
    },
    nextResourceVersion: nextVersion,
    onChange(listener) {
      listeners.push(listener);
    },
    failNext(rule) {
      failures.push({ rule, left: rule.times ?? 1 });
    },
    expireContinueTokens() {
      continueGeneration++;
    },
    kubeConfig(token) {
      return bearerTokenKubeConfig({
        name: 'fake',
        server: url,
        token: token ?? server.token ?? 'fake-token',
        skipTLSVerify: true,
      });
    },
    async stop() {
      http.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        http.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
  // The default ServiceCIDR the apiserver makes from --service-cluster-ip-range.
  if (options.serviceCIDRs) createServiceCidr('kubernetes', options.serviceCIDRs);
  return server;
}

/** The networking.k8s.io/v1 resources the fake serves. */
type NetworkingResource = 'servicecidrs' | 'ipaddresses';

/** Whether a `matchLabels` / `matchExpressions` selector selects `labels` (a null one: none). */
function selects(selector: JsonObject | undefined, labels: JsonObject): boolean {
  if (!selector) return false;
  const match = asObject(selector.matchLabels) ?? {};
  const expressions = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  // A label key is a user's (`constructor` is one): never read one Object.prototype has.
  const label = (key: string) => ownValueOf(labels, key);
  return (
    Object.entries(match).every(([key, value]) => label(key) === value) &&
    expressions.every((raw) => {
      const expression = asObject(raw) ?? {};
      const key = str(expression.key);
      const values = Array.isArray(expression.values) ? expression.values : [];
      switch (expression.operator) {
        case 'In':
          return values.includes(label(key) ?? null);
        case 'NotIn':
          return !values.includes(label(key) ?? null);
        case 'Exists':
          return Object.hasOwn(labels, key);
        case 'DoesNotExist':
          return !Object.hasOwn(labels, key);
        default:
          return false;
      }
    })
  );
}

/** An int-or-percent against `total`, percentages rounded up (`intstr.GetScaledValueFromIntOrPercent`). */
function scaledValue(value: Json, total: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const percent = Number.parseInt(str(value), 10);
  const scaled = (percent * total) / 100;
  return roundUp ? Math.ceil(scaled) : Math.floor(scaled);
}

function unknownPath(): StatusFailure {
  return new StatusFailure(404, 'NotFound', 'the server could not find the requested resource', {});
}

function invalid(
  kind: string,
  name: string,
  field: string,
  value: string,
  detail: string,
  causeReason = 'FieldValueInvalid',
): StatusFailure {
  const message = `Invalid value: "${value}": ${detail}`;
  return new StatusFailure(422, 'Invalid', `${kind} "${name}" is invalid: ${field}: ${message}`, {
    name,
    kind: `${kind.toLowerCase()}s`,
    causes: [{ reason: causeReason, message, field }],
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The characters the apiserver draws generated names from (`k8s.io/apimachinery/pkg/util/rand`). */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * A name made from `generateName` as the apiserver's `names.SimpleNameGenerator` makes it: at most
 * 58 characters of it and 5 random ones.
 */
function generatedName(generateName: string): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) {
    suffix += NAME_ALPHABET[Math.floor(Math.random() * NAME_ALPHABET.length)];
  }
  return `${generateName.slice(0, 58)}${suffix}`;
}

function toJson(value: unknown): JsonObject {
  return JSON.parse(JSON.stringify(value)) as JsonObject;
}

function asObject(value: Json | undefined): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
}

function get(object: JsonObject, path: readonly string[]): Json | undefined {
  let at: Json | undefined = object;
  for (const key of path) {
    const container = asObject(at);
    if (!container) return undefined;
    at = container[key];
  }
  return at;
}

function str(value: Json | undefined): string {
  return typeof value === 'string' ? value : '';
}

interface ContinueToken {
  readonly after: string;
  readonly generation: number;
}

function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify(token), 'utf8').toString('base64url');
}

function decodeContinue(text: string): ContinueToken {
  try {
    const parsed = JSON.parse(
      Buffer.from(text, 'base64url').toString('utf8'),
    ) as Partial<ContinueToken>;
    if (typeof parsed.after === 'string' && typeof parsed.generation === 'number') {
      return { after: parsed.after, generation: parsed.generation };
    }
  } catch {
    // fall through to the apiserver's answer for a garbled token
  }
  throw new StatusFailure(400, 'BadRequest', `continue key is not valid: ${text}`);
}

type Matcher = (object: JsonObject) => boolean;

/**
 * Whether an object's metadata still meets a delete's preconditions (`metav1.Preconditions`), as
 * the apiserver checks them (shared with the in-memory fakes).
 */
export function meetsPreconditions(
  metadata: { readonly uid?: string; readonly resourceVersion?: string } | undefined,
  preconditions: { readonly uid?: string; readonly resourceVersion?: string } | undefined,
): boolean {
  return (
    (preconditions?.uid === undefined || preconditions.uid === metadata?.uid) &&
    (preconditions?.resourceVersion === undefined ||
      preconditions.resourceVersion === metadata?.resourceVersion)
  );
}

/**
 * Whether an object passes a label and a field selector, as the fake serves them (shared with
 * the in-memory `FakeClusterApi`). Throws on a selector the apiserver would refuse.
 */
export function selectorMatches(
  resource: 'nodes' | 'pods' | 'services',
  object: object,
  selectors: { readonly labelSelector?: string; readonly fieldSelector?: string },
): boolean {
  const json = toJson(object);
  return (
    parseLabelSelector(selectors.labelSelector ?? '')(json) &&
    parseFieldSelector(resource, selectors.fieldSelector ?? '')(json)
  );
}

/** Equality-based label selectors and existence tests; set-based (`in`, `notin`) are not served. */
function parseLabelSelector(selector: string): Matcher {
  const terms = selector
    .split(',')
    .map((term) => term.trim())
    .filter((term) => term.length > 0)
    .map((term): Matcher => {
      const labels = (o: JsonObject): JsonObject => asObject(get(o, ['metadata', 'labels'])) ?? {};
      const ne = /^([^!=\s]+)\s*!=\s*(\S*)$/.exec(term);
      if (ne) return (o) => labels(o)[ne[1] ?? ''] !== (ne[2] ?? '');
      const eq = /^([^!=\s]+)\s*==?\s*(\S*)$/.exec(term);
      if (eq) return (o) => labels(o)[eq[1] ?? ''] === (eq[2] ?? '');
      const absent = /^!\s*([^!=\s]+)$/.exec(term);
      if (absent) return (o) => !((absent[1] ?? '') in labels(o));
      if (/^[^!=\s(),]+$/.test(term)) return (o) => term in labels(o);
      throw new StatusFailure(400, 'BadRequest', `unable to parse requirement: ${term}`);
    });
  return (object) => terms.every((term) => term(object));
}

function parseFieldSelector(resource: string, selector: string): Matcher {
  const fields = FIELD_LABELS[resource] ?? {};
  const terms = selector
    .split(',')
    .map((term) => term.trim())
    .filter((term) => term.length > 0)
    .map((term): Matcher => {
      const match = /^([^!=]+)(!=|==|=)(.*)$/.exec(term);
      if (!match) throw new StatusFailure(400, 'BadRequest', `invalid selector: '${selector}'`);
      const [, field = '', op, value = ''] = match;
      const read = fields[field];
      if (!read) throw new StatusFailure(400, 'BadRequest', `field label not supported: ${field}`);
      return op === '!=' ? (o) => read(o) !== value : (o) => read(o) === value;
    });
  return (object) => terms.every((term) => term(object));
}

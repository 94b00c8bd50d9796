/**
 * `pods` CREATE and DELETE: game-server host ports with Agones semantics.
 *
 * CREATE of a pod with `berth.dev/ports`: validate the specs (422 with every problem, 400 for bad
 * JSON), recognise a re-invocation by its stored allocation id, else allocate under a new id, and
 * answer the patch. DELETE (not dry run) releases exactly what is recorded under the pod's id and
 * namespace, once. Pods without the annotation are allowed untouched and cost no store access.
 */

import type { BerthConfig } from '../config/schema.js';
import { FrontPoolFullError } from '../fronts/errors.js';
import { type FrontsOffered, NO_FRONTS } from '../fronts/front-spec.js';
import {
  claimListeners,
  type ListenerClaimDeps,
  releaseClaimedListeners,
} from '../fronts/listener-claim.js';
import { frontedPortsOf } from '../fronts/pod-fronts.js';
import type { FrontQueue } from '../fronts/work.js';
import {
  allocateHostPorts,
  type HostPortAllocatorDeps,
  releaseHostPorts,
} from '../hostports/allocator.js';
import { CountView } from '../hostports/count-view.js';
import {
  HostPortBlockError,
  HostPortContentionError,
  HostPortQuotaError,
} from '../hostports/errors.js';
import type { HostPortRange } from '../hostports/model.js';
import {
  buildPodPatch,
  ownHostPorts,
  podCarriesHostPorts,
  podContainersOf,
} from '../hostports/patch.js';
import { portsAsked, releaseQuota, withinQuota } from '../hostports/quota.js';
import { PORTS_PATH, type PortSpec, parsePortSpecs } from '../hostports/spec.js';
import type { PodPortRecord } from '../hostports/store.js';
import { type AllocationCarriers, isSameCreate } from '../k8s/allocation-carriers.js';
import { carriedAllocationId, newAllocationId } from '../vocabulary/allocation-id.js';
import { ALLOCATION_ID_ANNOTATION, PORTS_ANNOTATION } from '../vocabulary/labels.js';
import { annotationOf, objectAt, ownValueOf, stringAt } from '../vocabulary/opaque.js';
import { type Owner, sameObject } from '../vocabulary/owner.js';
import { oversizedIdentity } from './bounds.js';
import type { AdmissionHandler } from './dispatch.js';
import { isRecordsPod } from './pod-identity.js';
import { allow, deny } from './response.js';
import type { AdmissionRequest } from './review.js';

/**
 * What the pod handler needs; everything that varies is injected. From the allocator: `store`,
 * `random` (uniform in [0, 1), ties between equally used ports), `now` (epoch ms) and an
 * optional `sleep` for the backoff between lost races.
 */
/** What the pod handler needs; it keeps its own view of the counts (one per process). */
export interface PodAdmissionDeps extends Omit<HostPortAllocatorDeps, 'view'> {
  /** The named host port ranges come from here. */
  readonly config: Pick<BerthConfig, 'hostPortRanges'> &
    Partial<Pick<BerthConfig, 'hostPortQuotas'>>;
  /** Source of allocation ids (`crypto.randomBytes` in production). */
  readonly randomBytes: (size: number) => Uint8Array;
  /** Told of every committed allocation and its lost races, for logs and metrics. */
  readonly onAllocated?: (event: { readonly id: string; readonly conflicts: number }) => void;
  /** Public fronts, when the config has any (shared/fronts/). */
  readonly fronts?: PodFrontsDeps;
  /**
   * The stored pods that carry an allocation id, read from the cluster: what tells a
   * re-invocation of a `generateName` pod from a copy. Without a cluster, berth cannot tell, and
   * a carried id of an unnamed pod always gets a fresh allocation.
   */
  readonly carriers?: AllocationCarriers;
}

/** What the pod handler needs for public fronts. */
export interface PodFrontsDeps {
  readonly offered: FrontsOffered;
  /** NLB listener claims; absent without NLBs. */
  readonly listeners?: ListenerClaimDeps;
  /** Where a deleted pod's fronts are queued to come down once it is gone. */
  readonly queue: FrontQueue;
  readonly cluster: string;
  /** `settle.delaySeconds`: the first look at a deleted pod. */
  readonly delaySeconds: number;
}

/** The configured host port ranges, in config order. */
export function hostPortRangesOf(config: Pick<BerthConfig, 'hostPortRanges'>): HostPortRange[] {
  return Object.entries(config.hostPortRanges).map(([name, ports]) => ({
    name,
    first: ports.base,
    size: ports.size,
  }));
}

type PodObject = Readonly<Record<string, unknown>>;

function podRefOf(request: AdmissionRequest, pod: PodObject): Owner {
  const name = stringAt(pod, 'metadata', 'name') || request.name || '';
  return {
    kind: 'Pod',
    namespace: request.namespace ?? stringAt(pod, 'metadata', 'namespace') ?? 'default',
    name,
    generateName: stringAt(pod, 'metadata', 'generateName') ?? '',
    // A CREATE with generateName: until berth learns the name, the request is the pod.
    ...(name === '' ? { request: request.uid } : {}),
  };
}

/** The patch's fronts: the addresses known, for a pod with a fronted port; none otherwise. */
function frontsOf(
  specs: readonly PortSpec[],
  addresses: ReadonlyMap<string, string>,
): { fronts?: ReadonlyMap<string, string> } {
  return specs.some((spec) => spec.front !== undefined) ? { fronts: addresses } : {};
}

/** The `pods` admission handler (CREATE allocates, DELETE releases). */
export function podAdmission(deps: PodAdmissionDeps): AdmissionHandler {
  const ranges = hostPortRangesOf(deps.config);
  const quotaOf = (namespace: string) => ownValueOf(deps.config.hostPortQuotas, namespace);
  const rangeByName = new Map(ranges.map((r) => [r.name, r]));
  const allocator = { ...deps, view: new CountView({ now: deps.now }) };

  async function create(request: AdmissionRequest) {
    const pod = request.object;
    const annotation = pod ? annotationOf(pod, PORTS_ANNOTATION) : undefined;
    if (!pod || annotation === undefined) return allow();
    const parsed = parsePortSpecs(
      annotation,
      podContainersOf(pod),
      rangeByName,
      deps.fronts?.offered ?? NO_FRONTS,
    );
    // One line per problem, as config errors are printed: a message may itself contain "; ".
    if (!parsed.ok) return deny(parsed.code, parsed.problems.join('\n'));
    const { specs } = parsed;
    const podRef = podRefOf(request, pod);
    const oversized = oversizedIdentity('Pod', podRef);
    if (oversized !== undefined) return deny(422, oversized);
    const patchInput = { specs, allocationIdAnnotation: ALLOCATION_ID_ANNOTATION };

    // A re-invoked webhook sees its own earlier patch: same id stored for this very pod, and the
    // pod's container ports carry the recorded host ports. A copied annotation fails the test
    // and gets a fresh allocation under a new id.
    const carriedId = carriedAllocationId(pod);
    if (carriedId !== undefined) {
      const record = await deps.store.getRecord(carriedId);
      if (
        record &&
        podCarriesHostPorts(pod, specs, record.ports) &&
        (await isSameCreate(
          deps.carriers,
          { id: record.id, owner: record.pod, recordedAt: record.createdAt },
          podRef,
          deps.now(),
        )) &&
        (await takenOver(record, podRef, request.dryRun === true))
      ) {
        const fronts = await listenersFor(record.id, podRef, specs, request.dryRun === true);
        if (typeof fronts === 'string') return deny(409, fronts);
        return allow(
          buildPodPatch(pod, {
            ...patchInput,
            held: record.ports,
            allocationId: record.id,
            ...frontsOf(specs, fronts),
          }),
        );
      }
    }

    const id = newAllocationId(deps.randomBytes);
    const dryRun = request.dryRun === true;
    // Listener slots first: a full pool then denies with nothing allocated. Slots of a pod whose
    // host ports then fail are freed by the fronts pass once the pod never appears.
    const fronts = await listenersFor(id, podRef, specs, dryRun);
    if (typeof fronts === 'string') return deny(409, fronts);
    const quota = quotaOf(podRef.namespace);
    const asked = { namespace: podRef.namespace, asked: portsAsked(specs) };
    try {
      const outcome = await withinQuota(deps.store, quota, asked, () =>
        allocateHostPorts(allocator, {
          id,
          pod: podRef,
          specs,
          ranges: rangeByName,
          dryRun,
          carried: ownHostPorts(pod, specs),
          ...(quota === undefined ? {} : { quota }),
        }),
      );
      if (request.dryRun !== true) deps.onAllocated?.({ id, conflicts: outcome.conflicts });
      return allow(
        buildPodPatch(pod, {
          ...patchInput,
          held: outcome.record.ports,
          allocationId: id,
          ...frontsOf(specs, fronts),
        }),
      );
    } catch (error) {
      // Refused by berth itself: the pod will never exist, so its listener slots go now.
      if (!dryRun && fronts.size > 0) await releaseListeners(id);
      if (error instanceof HostPortContentionError)
        return deny(409, `${PORTS_PATH}: ${error.message}`);
      if (error instanceof HostPortBlockError) return deny(409, error.message);
      if (error instanceof HostPortQuotaError) return deny(403, error.message);
      throw error;
    }
  }

  /**
   * Whether the CREATE `pod` now holds `record`: at once when it is the very object recorded; as
   * a re-invocation (an unnamed pod under a new request) only once the record is handed to its
   * request. No stored pod carried the id when that was decided, yet one may have been stored and
   * deleted meanwhile, its DELETE's release still on its way: the hand-over and that release are
   * conditioned on the same request, so exactly one of them lands.
   */
  async function takenOver(record: PodPortRecord, pod: Owner, dryRun: boolean): Promise<boolean> {
    if (sameObject(record.pod, pod) || dryRun || pod.request === undefined) return true;
    return deps.store.handOver(record.id, record.pod, pod.request);
  }

  /** Frees a refused CREATE's listener slots; the fronts pass frees them if this cannot. */
  async function releaseListeners(id: string): Promise<void> {
    const claims = deps.fronts?.listeners;
    if (claims) await releaseClaimedListeners(claims, id).catch(() => undefined);
  }

  /**
   * The NLB listener addresses of the pod's NLB-fronted ports (port name → `host:port`), or the
   * denial's message when the pool has no room.
   */
  async function listenersFor(
    id: string,
    pod: Owner,
    specs: readonly PortSpec[],
    dryRun: boolean,
  ): Promise<Map<string, string> | string> {
    const claims = deps.fronts?.listeners;
    const ports = specs.filter((spec) => spec.front === 'nlb');
    if (claims === undefined || ports.length === 0) return new Map();
    try {
      const owner = { allocationId: id, namespace: pod.namespace, pod: pod.name };
      return await claimListeners(claims, { owner, ports, dryRun });
    } catch (error) {
      if (error instanceof FrontPoolFullError) return `${PORTS_PATH}: ${error.message}`;
      throw error;
    }
  }

  /** Queues a deleted pod's fronts to come down once the apiserver has let it go. */
  async function releaseFronts(id: string, pod: Owner, object: PodObject): Promise<void> {
    const fronts = deps.fronts;
    if (fronts === undefined || frontedPortsOf(object).length === 0) return;
    await fronts.queue.submit(
      {
        kind: 'release',
        cluster: fronts.cluster,
        namespace: pod.namespace,
        pod: pod.name,
        allocationId: id,
        admittedAt: deps.now(),
        attempt: 0,
      },
      fronts.delaySeconds,
    );
  }

  async function remove(request: AdmissionRequest) {
    const pod = request.oldObject;
    const id = pod ? carriedAllocationId(pod) : undefined;
    // A dry-run DELETE must not change stored state; a pod berth never allocated for has no id
    // (and one of another shape was never berth's).
    if (!pod || id === undefined || request.dryRun === true) return allow();
    const podRef = podRefOf(request, pod);
    // A name Kubernetes would never have stored was never recorded.
    if (oversizedIdentity('Pod', podRef) !== undefined) return allow();
    // Only the record's own pod releases it: an id written onto another pod (pods have no
    // UPDATE webhook) must not free a live game server's ports or take its listener with it. A
    // record named at CREATE is this pod's by its name, which the conditional delete checks.
    const quota = quotaOf(podRef.namespace);
    const named = await releaseHostPorts(allocator, id, { ...podRef, generateName: '' });
    if (named || podRef.generateName === '') {
      await releaseQuota(deps.store, quota, named);
      if (named) await releaseFronts(id, podRef, pod);
      return allow();
    }
    // A record written before the apiserver named the pod: this pod's only if it is the one
    // stored pod made from its generateName that carries its id and ports.
    const record = await deps.store.getRecord(id);
    if (record === undefined || record.pod.name !== '') return allow();
    const stored = {
      ...pod,
      metadata: { ...objectAt(pod, 'metadata'), namespace: podRef.namespace },
    };
    const own = await isRecordsPod(deps.carriers, record, stored).catch(() => undefined);
    // The cluster could not be listed: nothing is released now; the repair pass frees it once
    // no live pod carries the id (a missed release leaks, a wrong one would double-hold).
    if (own === undefined) {
      return allow(undefined, [
        `${ALLOCATION_ID_ANNOTATION}: the cluster's pods could not be listed to tell this pod from a copy; the repair pass frees its ports once it is gone`,
      ]);
    }
    if (!own) return allow();
    // Conditioned on the record as read: one that learned another pod meanwhile stays.
    const released = await releaseHostPorts(allocator, id, record.pod);
    await releaseQuota(deps.store, quota, released);
    if (released) await releaseFronts(id, podRef, pod);
    return allow();
  }

  return async (request) => {
    if (request.operation === 'CREATE') return create(request);
    if (request.operation === 'DELETE') return remove(request);
    return allow();
  };
}

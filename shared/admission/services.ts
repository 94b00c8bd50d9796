/**
 * Service admission: cluster IPs and node ports with kube-apiserver semantics, held in berth's
 * store under the Service's allocation id. Admission allocates but never frees: what an UPDATE
 * drops or a DELETE gives back stays held until the settle step has read the committed object.
 */

import { type ExclusiveAllocator, rangeKey } from '../allocation/allocator.js';
import {
  AllocationError,
  RangeFullError,
  ValueAllocatedError,
  ValueNotInRangeError,
} from '../allocation/errors.js';
import { type OwnerRecord, OwnerVersionConflictError } from '../allocation/store.js';
import { type AllocationCarriers, isSameCreate } from '../k8s/allocation-carriers.js';
import { refusalFor, type ServiceCidrState } from '../services/cluster-cidrs.js';
import { ServiceFieldError } from '../services/errors.js';
import {
  planService,
  type ServicePlan,
  type ServiceRanges,
  servicePatch,
} from '../services/plan.js';
import { MalformedServiceError, parseService, type Service } from '../services/service-spec.js';
import type { Settler } from '../settle/settler.js';
import { MAX_TASK_CLAIMS, type SettleReason, type SettleTask } from '../settle/task.js';
import {
  allocationIdForUid,
  isAllocationId,
  namesOwner,
  newAllocationId,
  ownerNamingAllocationId,
  storedAllocationId,
} from '../vocabulary/allocation-id.js';
import { ALLOCATION_ID_ANNOTATION } from '../vocabulary/labels.js';
import { namedFrom, type Owner, sameObject } from '../vocabulary/owner.js';
import { oversizedIdentity } from './bounds.js';
import type { AdmissionHandler } from './dispatch.js';
import { type AdmissionVerdict, allow, deny } from './response.js';
import type { AdmissionRequest } from './review.js';

/** What the Service handler needs. */
export interface ServiceAdmissionDeps {
  readonly allocator: ExclusiveAllocator;
  readonly ranges: ServiceRanges;
  readonly randomBytes: (size: number) => Uint8Array;
  /** Takes owners whose values wait for the apiserver's commit. */
  readonly settler: Settler;
  /** Epoch ms. */
  readonly now: () => number;
  /**
   * The cluster's ServiceCIDRs as last read: new cluster IPs come only from ranges the cluster
   * has ready. Without it, `ranges` as configured.
   */
  readonly cidrs?: { readonly current: ServiceCidrState };
  /**
   * The stored Services that carry an allocation id, read from the cluster: what tells a
   * re-invocation of a `generateName` Service from a copy. Without it, berth cannot tell, and
   * the copy's rule (its values are taken: 409) applies.
   */
  readonly carriers?: AllocationCarriers;
}

/**
 * The ranges a write plans with: the ready ones first (a family's dynamic picks come from its
 * first range), ranges already found full after them, then the ones berth keeps but gives
 * nothing new from.
 */
function rangesOf(
  deps: ServiceAdmissionDeps,
  full: ReadonlySet<string> = new Set(),
): ServiceRanges {
  const state = deps.cidrs?.current;
  if (!state) return deps.ranges;
  const ready = state.allocatable.filter((r) => !full.has(r.name));
  const exhausted = state.allocatable.filter((r) => full.has(r.name));
  const kept = state.ranges.filter((r) => !state.allocatable.includes(r));
  return { clusterIps: [...ready, ...exhausted, ...kept], nodePorts: deps.ranges.nodePorts };
}

/** Attempts when an admission of the same Service, or its settle step, rewrites the record. */
const RECORD_ATTEMPTS = 3;

/** The admission handler for `services`. */
export function serviceAdmission(deps: ServiceAdmissionDeps): AdmissionHandler {
  return async (request) => {
    const full = new Set<string>();
    for (let attempt = 1; ; attempt++) {
      try {
        if (request.operation === 'DELETE') return await onDelete(deps, request);
        return await onWrite(deps, request, full);
      } catch (error) {
        if (fellBack(deps, error, full)) continue;
        if (error instanceof OwnerVersionConflictError) {
          if (attempt < RECORD_ATTEMPTS) continue;
          return contended(request);
        }
        if (error instanceof ServiceFieldError || error instanceof MalformedServiceError) {
          return deny(error.statusCode, error.message);
        }
        if (error instanceof PlannedAllocationError) {
          return deny(error.failure.statusCode, describe(error.failure, error.fields));
        }
        throw error;
      }
    }
  };
}

/**
 * A dynamic cluster IP found its range full while the family has another ready one (a followed
 * ServiceCIDR): the write is planned again with that range last. Nothing was allocated.
 */
function fellBack(deps: ServiceAdmissionDeps, error: unknown, full: Set<string>): boolean {
  if (!(error instanceof PlannedAllocationError)) return false;
  const failure = error.failure;
  if (!(failure instanceof RangeFullError) || failure.range.kind !== 'clusterIP') return false;
  const others = (deps.cidrs?.current.allocatable ?? []).filter(
    (r) => r.family === failure.range.family && r.name !== failure.range.name && !full.has(r.name),
  );
  if (others.length === 0) return false;
  full.add(failure.range.name);
  return true;
}

/**
 * A new cluster IP (one the stored Service does not already carry) from a range the cluster does
 * not have ready is refused with what is wrong: the apiserver would refuse the Service anyway.
 */
function refusedClusterIp(
  deps: ServiceAdmissionDeps,
  plan: ServicePlan,
  old: Service | undefined,
): string | undefined {
  const state = deps.cidrs?.current;
  if (!state) return undefined;
  const kept = new Set([...(old?.spec.clusterIPs ?? []), old?.spec.clusterIP ?? '']);
  for (const request of plan.requests) {
    if (request.range.kind !== 'clusterIP') continue;
    if (request.value !== undefined && kept.has(request.value)) continue;
    const refusal = refusalFor(state, request.range, request.value);
    if (!refusal) continue;
    const field = plan.fields.get(request.slot) ?? 'spec.clusterIPs';
    return request.value === undefined
      ? `${field}: failed to allocate a serviceIP: ${refusal.detail}`
      : `${field}: Invalid value: ${JSON.stringify(request.value)}: ${refusal.detail}`;
  }
  return undefined;
}

/**
 * The Service's record kept changing under this request (other writes of the same Service, its
 * settle step). Contention is not a fault: a write is refused with the apiserver's own 409, for
 * the client to retry; a DELETE is let through, because a DELETE must never be blocked, and what
 * it could not give back is freed by the repair pass once the Service is gone.
 */
function contended(request: AdmissionRequest): AdmissionVerdict {
  const field = `metadata.annotations[${ALLOCATION_ID_ANNOTATION}]`;
  if (request.operation === 'DELETE') {
    return allow(undefined, [
      `${field}: the Service's allocations changed concurrently; the repair pass frees them`,
    ]);
  }
  return deny(
    409,
    `${field}: Operation cannot be fulfilled: the Service's allocations changed concurrently; retry`,
  );
}

/** The object an admission is about: what identifies it as an owner. */
function ownerOf(request: AdmissionRequest, service: Service): Owner {
  const name = service.metadata.name || request.name || '';
  return {
    kind: 'Service',
    namespace: request.namespace ?? service.metadata.namespace ?? 'default',
    name,
    // A CREATE with generateName: the apiserver names the object after admission, so until berth
    // learns that name the owner is the request that creates it.
    ...(name === ''
      ? { generateName: service.metadata.generateName ?? '', request: request.uid }
      : {}),
  };
}

/** The identity fields of an owner that berth stores, for their bounds. */
function identityOf(owner: Owner, service: Service) {
  return {
    namespace: owner.namespace,
    name: owner.name,
    generateName: service.metadata.generateName ?? '',
  };
}

/**
 * Whether `stored` is the object the apiserver named for a record written without a name (a
 * CREATE with generateName): exactly the recorded values. Cluster IPs and node ports are
 * exclusive, so no other object can carry them: another Service carrying the annotation (stored
 * while berth was not in its path) carries values of its own, and is never the owner. Its name is
 * not checked against the recorded generateName: the values already say which object it is.
 */
function serviceNamedFrom(
  record: OwnerRecord,
  owner: Owner,
  stored: Service,
  ranges: ServiceRanges,
): boolean {
  return namedFrom(record.owner, owner, () => {
    const plan = storedPlan(stored, ranges);
    return (
      plan !== undefined &&
      plan.requests.length === record.claims.length &&
      carriesRecorded(record, plan)
    );
  });
}

async function onWrite(
  deps: ServiceAdmissionDeps,
  request: AdmissionRequest,
  full: ReadonlySet<string>,
): Promise<AdmissionVerdict> {
  const ranges = rangesOf(deps, full);
  const service = parseService(request.object);
  const old =
    request.operation === 'UPDATE' && request.oldObject
      ? parseService(request.oldObject)
      : undefined;
  const owner = ownerOf(request, service);
  const oversized = oversizedIdentity('Service', identityOf(owner, service));
  if (oversized !== undefined) return deny(422, oversized);
  const plan = planService(service, old, ranges);
  const refused = refusedClusterIp(deps, plan, old);
  if (refused !== undefined) return deny(422, refused);
  if (plan.requests.length > MAX_TASK_CLAIMS) {
    return deny(
      422,
      `spec.ports: Too many: ${plan.requests.length} values to allocate (cluster IPs, node ports, health check node port): must have at most ${MAX_TASK_CLAIMS}; split the ports over several Services`,
    );
  }
  const dryRun = request.dryRun === true;

  const known = old
    ? await storedIdentity(deps, old, owner, !dryRun)
    : await reinvocation(deps, service, owner, plan);
  if (plan.requests.length === 0) {
    // ExternalName or headless now: whatever the Service held is given back, once committed.
    if (known?.record && !dryRun) await giveBack(deps, known.id, known.record);
    return allow(servicePatch(service, plan, [], known?.id ?? ''));
  }
  // A CREATE that is not a re-invocation makes its id up: there is no record to read. A named
  // Service gets an id that names it, and its CREATE writes no owner record, only its claims: the
  // object will carry the id and the values (what the kube-apiserver's own repair relies on), and
  // the blocks say who holds what. A generateName one has no name yet, so it is recorded.
  const unrecorded = !known && owner.name !== '';
  const id =
    known?.id ??
    (unrecorded
      ? ownerNamingAllocationId(owner, deps.randomBytes)
      : newAllocationId(deps.randomBytes));
  const current = known ? known.record : 'none';
  // A recorded new owner is handed to the settle step at once, beside the allocation: should the
  // apiserver never store the object, its values are freed. An unrecorded one goes after, with
  // the claims its task must name. (Denied, it holds nothing.)
  const created = !dryRun && !known && !unrecorded ? track(deps, id, 'create') : undefined;
  try {
    const [{ grants, releasing }] = await Promise.all([
      deps.allocator.assign(id, owner, plan.requests, {
        dryRun,
        ...(current ? { current } : {}),
        ...(unrecorded ? { unrecorded } : {}),
        // An UPDATE's write commits only on top of the version it was admitted against.
        ...(old ? { base: old.metadata.resourceVersion ?? '*' } : {}),
      }),
      created,
    ]);
    if (!dryRun && unrecorded) {
      const claims = grants.flatMap((grant) => {
        const offset = grant.range.offsetOf(grant.value);
        return offset === undefined
          ? []
          : [{ slot: grant.slot, range: rangeKey(grant.range), offset }];
      });
      await track(deps, id, 'create', { namespace: owner.namespace, name: owner.name, claims });
    }
    if (!dryRun && releasing.length > 0) await track(deps, id, 'release');
    return allow(servicePatch(service, plan, grants, id));
  } catch (error) {
    if (error instanceof AllocationError) throw new PlannedAllocationError(error, plan.fields);
    throw error;
  }
}

interface Identity {
  readonly id: string;
  /** The record under `id`, read just now; undefined when there is none. */
  readonly record: OwnerRecord | undefined;
}

/**
 * A CREATE carrying an allocation id is a re-invocation only when that id is stored for this
 * very object (namespace and name) and every value on the object is the one recorded; a copied
 * annotation is not, and gets a fresh id.
 */
async function reinvocation(
  deps: ServiceAdmissionDeps,
  service: Service,
  owner: Owner,
  plan: ServicePlan,
): Promise<Identity | undefined> {
  const id = service.metadata.annotations?.[ALLOCATION_ID_ANNOTATION];
  if (!isAllocationId(id)) return undefined;
  const record =
    (await deps.allocator.holding(id)) ?? (await unrecordedRecord(deps, id, owner, plan));
  return record &&
    carriesRecorded(record, plan) &&
    (await isSameCreate(
      deps.carriers,
      { id, owner: record.owner, recordedAt: record.createdAt },
      owner,
      deps.now(),
    ))
    ? { id, record }
    : undefined;
}

/**
 * The record of an owner whose CREATE wrote none, rebuilt from what its object carries and the
 * blocks hold for it; undefined unless `id` names this very object (a copied annotation names
 * another).
 */
async function unrecordedRecord(
  deps: ServiceAdmissionDeps,
  id: string,
  owner: Owner,
  plan: ServicePlan | undefined,
): Promise<OwnerRecord | undefined> {
  if (!plan || !namesOwner(id, owner)) return undefined;
  return deps.allocator.recorded(
    id,
    owner,
    plan.requests.filter((request) => request.value !== undefined),
  );
}

function carriesRecorded(record: OwnerRecord, plan: ServicePlan): boolean {
  return plan.requests.every((request) => {
    const claim = record.claims.find((c) => c.slot === request.slot);
    return (
      request.value !== undefined &&
      claim !== undefined &&
      request.range.offsetOf(request.value) === claim.offset
    );
  });
}

/**
 * The identity of a stored Service (UPDATE, DELETE): the id it carries, when that id's record is
 * this object's, or, with no record, when the id names this object (a named Service's CREATE
 * writes none); otherwise (the annotation was copied while berth was not in the path) the one
 * derived from its uid, so it can never act on the other object's values. A record written
 * without a name (generateName) learns the stored object's name here (`learn`: not a dry run),
 * unless the settle step taught it already.
 */
async function storedIdentity(
  deps: ServiceAdmissionDeps,
  stored: Service,
  owner: Owner,
  learn: boolean,
): Promise<Identity | undefined> {
  const carried = storedAllocationId(stored.metadata);
  if (carried === undefined) return undefined;
  const record =
    (await deps.allocator.holding(carried)) ??
    (await unrecordedRecord(deps, carried, owner, storedPlan(stored, rangesOf(deps))));
  if (record && serviceNamedFrom(record, owner, stored, rangesOf(deps))) {
    const named = learn
      ? await deps.allocator.learnName(carried, record, owner)
      : { ...record, owner };
    return named && sameObject(named.owner, owner) ? { id: carried, record: named } : undefined;
  }
  if (record ? sameObject(record.owner, owner) : namesOwner(carried, owner)) {
    return { id: carried, record };
  }
  const own = stored.metadata.uid ? allocationIdForUid(stored.metadata.uid) : undefined;
  if (own === undefined || own === carried) return undefined;
  const ownRecord = await deps.allocator.holding(own);
  return {
    id: own,
    record: ownRecord && sameObject(ownRecord.owner, owner) ? ownRecord : undefined,
  };
}

/**
 * The values a stored Service carries, as requests; undefined for one berth cannot read (stored
 * while berth was not in its path): its values, if any, are the repair pass's to sort out, and
 * its DELETE or UPDATE is never refused for it.
 */
function storedPlan(stored: Service, ranges: ServiceRanges): ServicePlan | undefined {
  try {
    return planService(stored, undefined, ranges);
  } catch (error) {
    if (error instanceof ServiceFieldError || error instanceof MalformedServiceError) {
      return undefined;
    }
    throw error;
  }
}

async function onDelete(
  deps: ServiceAdmissionDeps,
  request: AdmissionRequest,
): Promise<AdmissionVerdict> {
  if (request.dryRun || !request.oldObject) return allow();
  const old = parseService(request.oldObject);
  const owner = ownerOf(request, old);
  // A name Kubernetes would never have stored was never recorded.
  if (oversizedIdentity('Service', identityOf(owner, old)) !== undefined) return allow();
  const known = await storedIdentity(deps, old, owner, true);
  // Only what is recorded (or, unrecorded, held) under this object's own id is given back.
  if (known?.record) await giveBack(deps, known.id, known.record);
  return allow();
}

/** Everything `id` holds starts its way out; the settle step frees it once the write commits. */
async function giveBack(
  deps: ServiceAdmissionDeps,
  id: string,
  known?: OwnerRecord,
): Promise<void> {
  const record = await deps.allocator.giveBack(id, known);
  if (record?.releasing?.length) await track(deps, id, 'release');
}

function track(
  deps: ServiceAdmissionDeps,
  id: string,
  reason: SettleReason,
  unrecorded?: SettleTask['unrecorded'],
): Promise<void> {
  return deps.settler.track({
    id,
    reason,
    admittedAt: deps.now(),
    attempt: 0,
    ...(unrecorded ? { unrecorded } : {}),
  });
}

/** An allocation failure with the plan's slot → field map, so the denial can name the field. */
class PlannedAllocationError extends Error {
  readonly failure: AllocationError;
  readonly fields: ReadonlyMap<string, string>;
  constructor(failure: AllocationError, fields: ReadonlyMap<string, string>) {
    super(failure.message, { cause: failure });
    this.name = 'PlannedAllocationError';
    this.failure = failure;
    this.fields = fields;
  }
}

/** `<field>: <kube-apiserver text>`, the field first as every denial reads. */
function describe(error: AllocationError, fields: ReadonlyMap<string, string>): string {
  const field = (error.slot && fields.get(error.slot)) || 'spec';
  if (error instanceof RangeFullError) {
    return `${field}: failed to allocate a ${error.range.kind === 'clusterIP' ? 'serviceIP' : 'nodePort'}: range is full`;
  }
  if (error instanceof ValueAllocatedError || error instanceof ValueNotInRangeError) {
    const value = error.range.kind === 'clusterIP' ? JSON.stringify(error.value) : error.value;
    return `${field}: Invalid value: ${value}: ${error.message}`;
  }
  return `${field}: ${error.message}`;
}

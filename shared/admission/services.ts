/**
 * Service admission (contract section 6): cluster IPs and node ports with kube-apiserver
 * semantics, held in berth's store under the Service's allocation id.
 */

import type { ExclusiveAllocator } from '../allocation/allocator.js';
import {
  AllocationError,
  RangeFullError,
  ValueAllocatedError,
  ValueNotInRangeError,
} from '../allocation/errors.js';
import type { OwnerRecord } from '../allocation/store.js';
import { ServiceFieldError } from '../services/errors.js';
import {
  planService,
  type ServicePlan,
  type ServiceRanges,
  servicePatch,
} from '../services/plan.js';
import { MalformedServiceError, parseService, type Service } from '../services/service-spec.js';
import type { AdmissionHandler } from './dispatch.js';
import { ALLOCATION_ID_ANNOTATION, allocationIdForUid, newAllocationId } from './identity.js';
import { type AdmissionVerdict, allow, deny } from './response.js';
import type { AdmissionRequest } from './review.js';

/** What the Service handler needs. */
export interface ServiceAdmissionDeps {
  readonly allocator: ExclusiveAllocator;
  readonly ranges: ServiceRanges;
  readonly randomBytes: (size: number) => Uint8Array;
}

/** The id a stored Service's allocations live under: its annotation, else one derived from its uid. */
export function serviceAllocationId(service: Service): string | undefined {
  const annotated = service.metadata.annotations?.[ALLOCATION_ID_ANNOTATION];
  if (annotated) return annotated;
  return service.metadata.uid ? allocationIdForUid(service.metadata.uid) : undefined;
}

/** The admission handler for `services`. */
export function serviceAdmission(deps: ServiceAdmissionDeps): AdmissionHandler {
  return async (request) => {
    try {
      if (request.operation === 'DELETE') return await onDelete(deps, request);
      return await onWrite(deps, request);
    } catch (error) {
      if (error instanceof ServiceFieldError || error instanceof MalformedServiceError) {
        return deny(error.statusCode, error.message);
      }
      if (error instanceof PlannedAllocationError) {
        return deny(error.failure.statusCode, describe(error.failure, error.fields));
      }
      throw error;
    }
  };
}

async function onWrite(
  deps: ServiceAdmissionDeps,
  request: AdmissionRequest,
): Promise<AdmissionVerdict> {
  const service = parseService(request.object);
  const old =
    request.operation === 'UPDATE' && request.oldObject
      ? parseService(request.oldObject)
      : undefined;
  const namespace = request.namespace ?? service.metadata.namespace ?? 'default';
  const plan = planService(service, old, deps.ranges);
  const dryRun = request.dryRun === true;

  const reinvoked = old ? undefined : await reinvocation(deps, service, namespace, plan);
  const known = old ? serviceAllocationId(old) : reinvoked?.id;
  if (plan.requests.length === 0) {
    // ExternalName or headless now: whatever the Service held is given back.
    if (known && !dryRun)
      await deps.allocator.release(known, reinvoked ? { current: reinvoked } : {});
    return allow(servicePatch(service, plan, [], known ?? ''));
  }
  const id = known ?? newAllocationId(deps.randomBytes);
  // A CREATE that is not a re-invocation has just made its id up: there is no record to read.
  const current = old ? undefined : (reinvoked ?? 'none');
  const owner = {
    kind: 'Service' as const,
    namespace,
    name: service.metadata.name ?? request.name ?? service.metadata.generateName ?? '',
  };
  try {
    const { grants } = await deps.allocator.assign(id, owner, plan.requests, {
      dryRun,
      ...(current ? { current } : {}),
    });
    return allow(servicePatch(service, plan, grants, id));
  } catch (error) {
    if (error instanceof AllocationError) throw new PlannedAllocationError(error, plan.fields);
    throw error;
  }
}

/**
 * A CREATE carrying an allocation id is a re-invocation only when that id is stored for this
 * namespace and every value on the object is the one recorded; a copied annotation is not.
 */
async function reinvocation(
  deps: ServiceAdmissionDeps,
  service: Service,
  namespace: string,
  plan: ServicePlan,
): Promise<OwnerRecord | undefined> {
  const id = service.metadata.annotations?.[ALLOCATION_ID_ANNOTATION];
  if (!id) return undefined;
  const record = await deps.allocator.holding(id);
  return record && matches(record, namespace, plan) ? record : undefined;
}

function matches(record: OwnerRecord, namespace: string, plan: ServicePlan): boolean {
  if (record.owner.kind !== 'Service' || record.owner.namespace !== namespace) return false;
  return plan.requests.every((request) => {
    const claim = record.claims.find((c) => c.slot === request.slot);
    return (
      request.value !== undefined &&
      claim !== undefined &&
      request.range.offsetOf(request.value) === claim.offset
    );
  });
}

async function onDelete(
  deps: ServiceAdmissionDeps,
  request: AdmissionRequest,
): Promise<AdmissionVerdict> {
  if (request.dryRun || !request.oldObject) return allow();
  const old = parseService(request.oldObject);
  const id = serviceAllocationId(old);
  if (!id) return allow();
  const record = await deps.allocator.holding(id);
  const namespace = request.namespace ?? old.metadata.namespace;
  // Only what is recorded under this id for this namespace is released.
  if (record?.owner.kind === 'Service' && record.owner.namespace === namespace)
    await deps.allocator.release(id);
  return allow();
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

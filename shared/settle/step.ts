/**
 * One look at one owner: read its record, read its object from the Kubernetes API, decide
 * (`policy.ts`), write. Every write is conditional on the record version read, so two looks at
 * one owner (a queue's duplicate delivery, the repair pass finishing one) never free twice.
 */
import type { V1Service } from '@kubernetes/client-node';
import type { ExclusiveAllocator } from '../allocation/allocator.js';
import { claimKey, rangeKey } from '../allocation/allocator.js';
import { type OwnerRecord, OwnerVersionConflictError } from '../allocation/store.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { readService } from '../repair/live.js';
import type { ServiceRanges } from '../services/plan.js';
import type { Owner } from '../vocabulary/owner.js';
import { decideSettle, type ObjectReading, type SettleTiming } from './policy.js';
import type { SettleOutcome, SettleTask } from './task.js';

/** What a look needs. */
export interface SettleStepDeps {
  readonly allocator: Pick<ExclusiveAllocator, 'holding' | 'settle' | 'learnName'>;
  readonly cluster: Pick<ClusterApi, 'getService' | 'listServices'>;
  readonly ranges: ServiceRanges;
  readonly timing: SettleTiming;
  /** Epoch ms. */
  readonly now: () => number;
}

/** Attempts when the record keeps changing under the look (a concurrent admission). */
const ATTEMPTS = 3;

/** Looks at one owner once. Kubernetes and store failures propagate: the caller retries. */
export async function settleStep(deps: SettleStepDeps, task: SettleTask): Promise<SettleOutcome> {
  for (let attempt = 1; ; attempt++) {
    const record = (await deps.allocator.holding(task.id)) ?? unrecordedOwner(task);
    if (!record) return { freed: 0, kept: 0 };
    // The reading is as of no earlier than now: an object absent then may be stored until its
    // request's deadline, so the window is judged at the time taken before the read, never after.
    const readAt = deps.now();
    const { reading, named } = await readObject(deps, record);
    const decision = decideSettle(record, reading, task, readAt, deps.timing);
    if (await deps.allocator.settle(record, decision)) {
      if (named) await learnName(deps, record.id, named);
      return {
        freed: decision.free.length,
        kept: decision.keep.length,
        ...(decision.recheckAfter === undefined ? {} : { recheckAfter: decision.recheckAfter }),
      };
    }
    // The record changed since it was read: an admission of the same owner wrote it. Look again.
    if (attempt >= ATTEMPTS) return { freed: 0, kept: 0, recheckAfter: deps.timing.delaySeconds };
  }
}

/**
 * The record a CREATE that wrote none stands for (version 0, never stored), from its task; once
 * the owner has a record (a later change wrote one), that record is read instead.
 */
function unrecordedOwner(task: SettleTask): OwnerRecord | undefined {
  if (task.reason !== 'create' || !task.unrecorded) return undefined;
  const { namespace, name, claims } = task.unrecorded;
  return {
    id: task.id,
    owner: { kind: 'Service', namespace, name },
    claims: claims.map((claim) => ({ ...claim })),
    version: 0,
    createdAt: task.admittedAt,
  };
}

/** The owner's object as read, and the name to learn for an owner recorded without one. */
interface Look {
  readonly reading: ObjectReading;
  readonly named?: Owner;
}

/**
 * The owner's object as stored: the Service with the record's namespace and name whose
 * allocation id is the record's (another Service of the same name is another object). A record
 * without a name (generateName) is looked for by its id among the namespace's Services: should
 * several carry it (one stored while berth was not in the path), a value any of them carries is
 * kept; when only one does, with exactly the recorded values, it is the owner, whose name the
 * record learns.
 */
async function readObject(deps: SettleStepDeps, record: OwnerRecord): Promise<Look> {
  const { namespace, name } = record.owner;
  const services = name
    ? [await deps.cluster.getService(namespace, name)]
    : await servicesOf(deps, namespace);
  const found = services.flatMap((service) => {
    if (!service) return [];
    const { owner } = readService(service, deps.ranges);
    return owner.id === record.id ? [{ service, owner }] : [];
  });
  const first = found[0];
  if (!first) return { reading: { present: false } };
  const carries = new Set(
    found.flatMap(({ owner }) =>
      owner.values.map((value) => claimKey({ range: rangeKey(value.range), offset: value.offset })),
    ),
  );
  const resourceVersion = first.service.metadata?.resourceVersion;
  const reading: ObjectReading = {
    present: true,
    terminating: found.some(({ owner }) => owner.terminating),
    ...(resourceVersion === undefined || found.length > 1 ? {} : { resourceVersion }),
    carries,
  };
  const named =
    name === '' && found.length === 1 ? namedOwner(record, first.service, carries) : undefined;
  return { reading, ...(named ? { named } : {}) };
}

/**
 * The owner `service` is, when it is the one the apiserver named for `record`: it carries exactly
 * the recorded values (exclusive, so no other object can carry them).
 */
function namedOwner(
  record: OwnerRecord,
  service: V1Service,
  carries: ReadonlySet<string>,
): Owner | undefined {
  const name = service.metadata?.name;
  if (!name) return undefined;
  const exactly =
    carries.size === record.claims.length &&
    record.claims.every((claim) => carries.has(claimKey(claim)));
  return exactly ? { kind: 'Service', namespace: record.owner.namespace, name } : undefined;
}

/** Writes the learned name; a record that keeps changing learns it at a later look or admission. */
async function learnName(deps: SettleStepDeps, id: string, owner: Owner): Promise<void> {
  try {
    await deps.allocator.learnName(id, undefined, owner);
  } catch (error) {
    if (!(error instanceof OwnerVersionConflictError)) throw error;
  }
}

async function servicesOf(deps: SettleStepDeps, namespace: string): Promise<V1Service[]> {
  const services: V1Service[] = [];
  for await (const service of deps.cluster.listServices({
    fieldSelector: `metadata.namespace=${namespace}`,
  })) {
    services.push(service);
  }
  return services;
}

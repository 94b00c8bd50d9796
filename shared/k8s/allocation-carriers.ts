/**
 * Which stored objects carry an allocation id: what tells a webhook re-invocation, whose object
 * the apiserver has not stored yet, from a copy of a stored object: a re-invoked CREATE keeps its
 * first allocation, a copy gets a fresh one (or a 409 for the values it asks for).
 */

import { ALLOCATION_ID_ANNOTATION } from '../vocabulary/labels.js';
import { mayBeReinvocation, type Owner, type OwnerKind, sameObject } from '../vocabulary/owner.js';
import type { ClusterApi } from './cluster-api.js';

/** A stored object that carries an allocation id. */
export interface Carrier {
  readonly name: string;
  readonly uid: string;
}

/** Reads the stored objects that carry an allocation id. */
export interface AllocationCarriers {
  /** The stored objects of `kind` in `namespace` whose allocation-id annotation is `id`. */
  carrying(kind: OwnerKind, namespace: string, id: string): Promise<readonly Carrier[]>;
}

type Listed = {
  readonly metadata?: {
    readonly name?: string;
    readonly uid?: string;
    readonly annotations?: Readonly<Record<string, string>>;
  };
};

/**
 * The cluster's own answer, listed from the API (strongly consistent reads, as the apiserver
 * serves a list without a resourceVersion). Annotations cannot be selected on, so the namespace
 * is listed whole; berth asks only for objects created with generateName, while a record has not
 * learned its name.
 */
export function clusterCarriers(
  cluster: Pick<ClusterApi, 'listPods' | 'listServices'>,
): AllocationCarriers {
  return {
    async carrying(kind, namespace, id) {
      const options = { fieldSelector: `metadata.namespace=${namespace}` };
      const objects: AsyncIterable<Listed> =
        kind === 'Pod' ? cluster.listPods(options) : cluster.listServices(options);
      const found: Carrier[] = [];
      for await (const object of objects) {
        const metadata = object.metadata;
        const annotations = metadata?.annotations;
        if (annotations && Object.hasOwn(annotations, ALLOCATION_ID_ANNOTATION)) {
          if (annotations[ALLOCATION_ID_ANNOTATION] === id) {
            found.push({ name: metadata?.name ?? '', uid: metadata?.uid ?? '' });
          }
        }
      }
      return found;
    },
  };
}

/** What a CREATE's identity is decided from: the record carried, and when it was written. */
export interface CarriedRecord {
  readonly id: string;
  readonly owner: Owner;
  /** Epoch ms of the record's first write. */
  readonly recordedAt: number;
}

/**
 * Whether the object a CREATE admits now is the one `record` was written for: the same named
 * object, the same request seen again, or the same `generateName` CREATE called again after a
 * later webhook changed it (a re-invocation: no stored object carries the id yet, so this one
 * cannot be a copy of one). At `now`, epoch ms.
 */
export async function isSameCreate(
  carriers: AllocationCarriers | undefined,
  record: CarriedRecord,
  owner: Owner,
  now: number,
): Promise<boolean> {
  if (sameObject(record.owner, owner)) return true;
  if (!mayBeReinvocation(record.owner, record.recordedAt, owner, now)) return false;
  return noStoredCarrier(carriers, owner.kind, owner.namespace, record.id);
}

/**
 * Whether the cluster answered that no stored object of `kind` in `namespace` carries `id`.
 * False when it cannot tell (no cluster, or the list failed): the caller treats the object as a
 * copy, never as the same object (a second allocation leaks until it is freed; one value held
 * by two objects would not be).
 */
async function noStoredCarrier(
  carriers: AllocationCarriers | undefined,
  kind: OwnerKind,
  namespace: string,
  id: string,
): Promise<boolean> {
  if (carriers === undefined) return false;
  try {
    return (await carriers.carrying(kind, namespace, id)).length === 0;
  } catch {
    return false;
  }
}

/**
 * Who an allocation belongs to: one Kubernetes object, a Service or a pod, as admission saw it.
 * The same rules tell Services and pods apart from their copies, so they are written once here;
 * what differs by kind (the evidence that a stored object is a record's) stays with each kind.
 */

import { COMMIT_WINDOW_MS } from './commit-window.js';

/** The kinds of object berth allocates for. */
export type OwnerKind = 'Service' | 'Pod';

/**
 * The object an allocation belongs to, as the webhook saw it at admission (a CREATE has no uid
 * yet, so the object is known by namespace and name, or, before the apiserver names it, by the
 * request that creates it).
 */
export interface Owner {
  readonly kind: OwnerKind;
  readonly namespace: string;
  /** Empty when the object is created with generateName and has no name yet. */
  readonly name: string;
  /**
   * The object's `metadata.generateName`: a Service's only while it has no name (absent once
   * named), a pod's always ('' when it was created with a name), since a pod's release matches
   * a record written before the apiserver named it by its generateName.
   */
  readonly generateName?: string;
  /**
   * While it has no name: the AdmissionReview `request.uid` of the call that created it, the only
   * thing that tells the same request seen again from a copy of the stored object.
   */
  readonly request?: string;
}

/**
 * Whether `record` (an owner as stored) is `owner`: same kind, namespace, name and generateName,
 * and an owner not yet named (generateName) only as the request that created it, seen again. A
 * copy of the stored object carries its annotations, values and generateName too, under another
 * request.
 */
export function sameObject(record: Owner, owner: Owner): boolean {
  return (
    record.kind === owner.kind &&
    record.namespace === owner.namespace &&
    record.name === owner.name &&
    (record.generateName ?? '') === (owner.generateName ?? '') &&
    (owner.name !== '' || (record.request !== undefined && record.request === owner.request))
  );
}

/**
 * Whether `owner`, an object the apiserver has not named yet, may be the request that wrote
 * `record` (at `recordedAt`, epoch ms) called again after a later webhook changed it
 * (`reinvocationPolicy: IfNeeded`): same kind, namespace and generateName, neither named, and
 * still within the request's lifetime at `now`. The apiserver sends a re-invocation under a new
 * `request.uid`, so nothing in the request tells it from a copy of a stored object that carries
 * berth's annotations: only that no stored object carries the allocation id yet can (berth's first
 * patch is on the re-invoked object, and on nothing stored while the request is in flight).
 */
export function mayBeReinvocation(
  record: Owner,
  recordedAt: number,
  owner: Owner,
  now: number,
): boolean {
  return (
    record.kind === owner.kind &&
    record.namespace === owner.namespace &&
    record.name === '' &&
    owner.name === '' &&
    (record.generateName ?? '') === (owner.generateName ?? '') &&
    now - recordedAt < COMMIT_WINDOW_MS
  );
}

/**
 * Whether `named`, a stored and named object, is the one the apiserver named for `record`, an
 * owner written without a name (a CREATE with generateName): same kind and namespace, and
 * `carriesRecorded`, the kind's own evidence that it holds what was recorded (asked only once
 * the rest holds: reading it may cost a parse). Nothing else can tell: the name was made after
 * admission, and a copy of the object carries its annotations too.
 */
export function namedFrom(record: Owner, named: Owner, carriesRecorded: () => boolean): boolean {
  return (
    record.kind === named.kind &&
    record.name === '' &&
    named.name !== '' &&
    record.namespace === named.namespace &&
    carriesRecorded()
  );
}

/**
 * How much of a generateName the apiserver keeps: it appends 5 random characters to at most 58
 * of it, so that the name fits 63 (`MaxGeneratedNameLength` in kubernetes/apiserver
 * pkg/storage/names/generate.go).
 */
const GENERATED_PREFIX_LENGTH = 58;

/** Whether `name` is one the apiserver could have made from `generateName`. */
export function isGeneratedName(name: string, generateName: string): boolean {
  const prefix = generateName.slice(0, GENERATED_PREFIX_LENGTH);
  return name.length > prefix.length && name.startsWith(prefix);
}

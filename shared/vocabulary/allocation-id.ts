/**
 * Allocation ids: the key an object's allocations live under, carried on the object as
 * `berth.dev/allocation-id`. Every id has one shape (20 base32 characters), however it was made,
 * so a value of any other shape on an object is never taken for one.
 */
import { createHash } from 'node:crypto';
import { ALLOCATION_ID_ANNOTATION } from './labels.js';
import { annotationOf, type JsonObject } from './opaque.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * A new allocation id: 20 base32 characters (100 bits) from a byte source, short enough that 32
 * of them keep a DynamoDB block item under 1 KB.
 */
export function newAllocationId(randomBytes: (size: number) => Uint8Array): string {
  const bytes = randomBytes(20);
  let id = '';
  for (const byte of bytes) id += ALPHABET[byte & 31];
  return id;
}

/**
 * The characters of an owner-naming id that name the owner: 75 of its 100 bits, so that naming
 * another object takes a second preimage of 75 bits (a Service given a name that collides could
 * otherwise take a copied id, and with it another Service's values); the other 25 bits are random,
 * so successive objects of one name get different ids.
 */
const OWNER_DIGEST_LENGTH = 15;

/**
 * What of an owner an owner-naming id is made from: the object as known by name (any kind, so
 * that a holder lookup can ask of a kind it only read).
 */
interface NamedOwner {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

function ownerDigest(owner: NamedOwner): string {
  const bytes = createHash('sha256')
    .update(`${owner.kind}/${owner.namespace}/${owner.name}`)
    .digest();
  let digest = '';
  for (const byte of bytes.subarray(0, OWNER_DIGEST_LENGTH)) digest += ALPHABET[byte & 31];
  return digest;
}

/**
 * An id that names its owner: 15 characters from the digest of its kind, namespace and name,
 * then 5 random ones, the shape of every other id. A Service created with such
 * an id needs no owner record to be told from a copy under another name: the id says whose it is,
 * and the store's blocks say what it holds.
 */
export function ownerNamingAllocationId(
  owner: NamedOwner,
  randomBytes: (size: number) => Uint8Array,
): string {
  return ownerDigest(owner) + newAllocationId(randomBytes).slice(OWNER_DIGEST_LENGTH);
}

/** Whether `id` names `owner` (made by `ownerNamingAllocationId` for it). */
export function namesOwner(id: string, owner: NamedOwner): boolean {
  return owner.name !== '' && id.startsWith(ownerDigest(owner));
}

const ALLOCATION_ID_SHAPE = /^[a-z2-7]{20}$/;

/**
 * Whether a value has the shape of the ids berth makes. Anything else on an object (empty, over
 * long, hand-written) is treated as no id at all: it never reaches the store as a key.
 */
export function isAllocationId(value: unknown): value is string {
  return typeof value === 'string' && ALLOCATION_ID_SHAPE.test(value);
}

/** The allocation id an opaque object carries, when it has berth's shape. */
export function carriedAllocationId(object: JsonObject | null | undefined): string | undefined {
  const id = annotationOf(object, ALLOCATION_ID_ANNOTATION);
  return isAllocationId(id) ? id : undefined;
}

/**
 * The id of an object that carries no allocation-id annotation (created while berth was not in
 * its path), derived from its uid so the repair pass and later webhook calls agree on it.
 */
export function allocationIdForUid(uid: string): string {
  // The digest's first bytes, as many as a random id takes: an id of berth's one shape, which
  // settle tasks and repair insist on.
  return newAllocationId((size) => createHash('sha256').update(uid).digest().subarray(0, size));
}

/**
 * The id a stored object's allocations live under: its annotation when it has berth's shape,
 * else one derived from its uid (an object created while berth was not in its path); undefined
 * with neither.
 */
export function storedAllocationId(metadata: {
  readonly annotations?: Readonly<Record<string, string>>;
  readonly uid?: string;
}): string | undefined {
  const annotated = metadata.annotations?.[ALLOCATION_ID_ANNOTATION];
  if (isAllocationId(annotated)) return annotated;
  return metadata.uid ? allocationIdForUid(metadata.uid) : undefined;
}

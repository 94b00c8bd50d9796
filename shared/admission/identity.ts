import { createHash } from 'node:crypto';

/** The annotations and label berth puts on the objects it allocates for. */

/** Stable id of an object's allocations; a re-invoked webhook that sees it does not allocate again. */
export const ALLOCATION_ID_ANNOTATION = 'berth.dev/allocation-id';

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
 * The id of an object that carries no allocation-id annotation (created while berth was not in
 * its path), derived from its uid so the repair pass and later webhook calls agree on it.
 */
export function allocationIdForUid(uid: string): string {
  return newAllocationId(() => createHash('sha256').update(uid).digest());
}

/** Reads an annotation from an opaque object's metadata. */
export function annotationOf(
  object: Readonly<Record<string, unknown>> | null | undefined,
  key: string,
): string | undefined {
  const metadata = object?.metadata as { annotations?: Record<string, unknown> } | undefined;
  const value = metadata?.annotations?.[key];
  return typeof value === 'string' ? value : undefined;
}

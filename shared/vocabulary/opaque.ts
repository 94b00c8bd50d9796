/**
 * Readers of opaque Kubernetes objects (an AdmissionReview's `object`, a listed pod as JSON):
 * berth reads a few fields of objects it never parses whole, and each read must survive any
 * shape a client could send.
 */

/** An object as JSON: only its own fields are read, never trusted to have any. */
export type JsonObject = Readonly<Record<string, unknown>>;

/**
 * The value `record` holds under `key` itself, never one it inherits: a key from a user (a
 * namespace, a port or cluster name) may be `constructor` or `__proto__`, which a plain
 * `record[key]` answers with Object.prototype's members.
 */
export function ownValueOf<V>(
  record: Readonly<Record<string, V>> | null | undefined,
  key: string,
): V | undefined {
  return record != null && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The JSON object at `path` inside an opaque object (e.g. `metadata`), when there is one. */
export function objectAt(
  object: JsonObject | null | undefined,
  ...path: readonly string[]
): JsonObject | undefined {
  let value: unknown = object;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = ownValueOf(value as JsonObject, key);
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

/** The string at `path` inside an opaque object (e.g. `metadata`, `name`), when it is one. */
export function stringAt(
  object: JsonObject | null | undefined,
  ...path: readonly string[]
): string | undefined {
  const last = path.at(-1);
  if (last === undefined) return undefined;
  const value = ownValueOf(objectAt(object, ...path.slice(0, -1)), last);
  return typeof value === 'string' ? value : undefined;
}

/** Reads an annotation from an opaque object's metadata. */
export function annotationOf(
  object: JsonObject | null | undefined,
  key: string,
): string | undefined {
  return stringAt(object, 'metadata', 'annotations', key);
}

/**
 * The one RFC 6902 JSON Patch applier (RFC 6901 pointers, `~1` and `~0` escapes): how the
 * loopback apiserver applies a PATCH, how the simulated cluster stores what admission patched,
 * and how the benches and tests read an AdmissionResponse's patch.
 */

/** A JSON value. */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** One operation as an AdmissionResponse carries it. */
export interface PatchOperation {
  readonly op: string;
  readonly path: string;
  readonly value?: unknown;
  readonly from?: string;
}

/** Decodes an AdmissionResponse's base64 patch; none when the response carries none. */
export function decodePatch(base64: string | undefined): PatchOperation[] {
  return base64
    ? (JSON.parse(Buffer.from(base64, 'base64').toString('utf8')) as PatchOperation[])
    : [];
}

function asObject(value: Json | undefined): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
}

/** An RFC 6902 operation that cannot be applied to the document. */
export class JsonPatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonPatchError';
  }
}

function parsePointer(pointer: unknown): string[] {
  if (typeof pointer !== 'string') throw new JsonPatchError('path is not a string');
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new JsonPatchError(`bad pointer ${pointer}`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/**
 * Applies RFC 6902 operations (add, remove, replace, move, copy, test) to a JSON copy of
 * `document`, so a Date comes back as its string; throws `JsonPatchError` when an operation
 * cannot apply, and nothing of the patch applies then, as on the apiserver.
 */
export function applyPatch<T>(document: T, operations: readonly unknown[]): T {
  let doc = JSON.parse(JSON.stringify(document ?? null)) as Json;
  for (const raw of JSON.parse(JSON.stringify(operations)) as Json[]) {
    const op = asObject(raw);
    if (!op) throw new JsonPatchError('operation is not an object');
    const path = parsePointer(op.path);
    switch (op.op) {
      case 'test': {
        const actual = resolve(doc, path);
        if (actual === undefined || !deepEqual(actual, op.value ?? null)) {
          throw new JsonPatchError(`testing value ${String(op.path)} failed`);
        }
        break;
      }
      case 'add':
        doc = add(doc, path, structuredClone(op.value ?? null));
        break;
      case 'remove':
        doc = remove(doc, path);
        break;
      case 'replace':
        if (resolve(doc, path) === undefined)
          throw new JsonPatchError(`missing ${String(op.path)}`);
        doc = add(remove(doc, path), path, structuredClone(op.value ?? null));
        break;
      case 'move': {
        const from = parsePointer(op.from);
        const value = resolve(doc, from);
        if (value === undefined) throw new JsonPatchError(`missing ${String(op.from)}`);
        doc = add(remove(doc, from), path, value);
        break;
      }
      case 'copy': {
        const value = resolve(doc, parsePointer(op.from));
        if (value === undefined) throw new JsonPatchError(`missing ${String(op.from)}`);
        doc = add(doc, path, structuredClone(value));
        break;
      }
      default:
        throw new JsonPatchError(`unknown op ${String(op.op)}`);
    }
  }
  return doc as T;
}

function resolve(doc: Json, path: readonly string[]): Json | undefined {
  let at: Json | undefined = doc;
  for (const token of path) {
    if (Array.isArray(at)) {
      const index = /^(0|[1-9]\d*)$/.test(token) ? Number(token) : -1;
      at = index >= 0 && index < at.length ? at[index] : undefined;
    } else {
      const object = asObject(at);
      if (!object || !Object.hasOwn(object, token)) return undefined;
      at = object[token];
    }
  }
  return at;
}

function add(doc: Json, path: readonly string[], value: Json): Json {
  if (path.length === 0) return value;
  const parent = resolve(doc, path.slice(0, -1));
  const last = path.at(-1) ?? '';
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : /^(0|[1-9]\d*)$/.test(last) ? Number(last) : -1;
    if (index < 0 || index > parent.length) throw new JsonPatchError(`bad index ${last}`);
    parent.splice(index, 0, value);
    return doc;
  }
  const object = asObject(parent);
  if (!object) throw new JsonPatchError(`missing parent of /${path.join('/')}`);
  object[last] = value;
  return doc;
}

function remove(doc: Json, path: readonly string[]): Json {
  if (path.length === 0) throw new JsonPatchError('cannot remove the whole document');
  const parent = resolve(doc, path.slice(0, -1));
  const last = path.at(-1) ?? '';
  if (Array.isArray(parent)) {
    const index = /^(0|[1-9]\d*)$/.test(last) ? Number(last) : -1;
    if (index < 0 || index >= parent.length) throw new JsonPatchError(`bad index ${last}`);
    parent.splice(index, 1);
    return doc;
  }
  const object = asObject(parent);
  if (!object || !Object.hasOwn(object, last)) {
    throw new JsonPatchError(`missing /${path.join('/')}`);
  }
  delete object[last];
  return doc;
}

function deepEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => deepEqual(item, b[index] ?? null))
    );
  }
  const left = asObject(a);
  const right = asObject(b);
  if (!left || !right) return false;
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every(
      (key) => Object.hasOwn(right, key) && deepEqual(left[key] ?? null, right[key] ?? null),
    )
  );
}

/** RFC 6902 JSON patches as admission answers carry them, and RFC 6901 pointer escaping. */

/** One patch operation. */
export interface JsonPatchOperation {
  readonly op: 'add' | 'replace' | 'remove' | 'test';
  readonly path: string;
  readonly value?: unknown;
}

/** A whole patch. */
export type JsonPatch = readonly JsonPatchOperation[];

/** Escapes one pointer token: `~` → `~0`, `/` → `~1` (so `berth.dev/ports` → `berth.dev~1ports`). */
export function pointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** A JSON pointer from tokens. */
export function pointer(...tokens: ReadonlyArray<string | number>): string {
  return tokens.map((t) => `/${pointerToken(String(t))}`).join('');
}

/** The pointer of one of an object's annotations (`/metadata/annotations/berth.dev~1cordoned-at`). */
export function annotationPath(key: string): string {
  return pointer('metadata', 'annotations', key);
}

/**
 * Operations that set `metadata.<field>[key] = value` for every entry, creating the map, or the
 * whole `metadata` when `metadata` is undefined (the object has none), since an `add` to a
 * missing parent fails the whole patch.
 */
export function setMetadataEntries(
  metadata: Readonly<Record<string, unknown>> | undefined,
  field: 'annotations' | 'labels',
  entries: Readonly<Record<string, string>>,
): JsonPatchOperation[] {
  if (metadata === undefined) {
    return [{ op: 'add', path: pointer('metadata'), value: { [field]: { ...entries } } }];
  }
  const existing = metadata[field];
  if (existing === undefined || existing === null) {
    return [{ op: 'add', path: pointer('metadata', field), value: { ...entries } }];
  }
  return Object.entries(entries).map(([key, value]) => ({
    op: 'add',
    path: pointer('metadata', field, key),
    value,
  }));
}

/**
 * Prints manifests as YAML documents or as one JSON `v1/List`, both of which `kubectl apply -f -`
 * reads. The YAML emitter covers JSON values only, which is all a manifest is; any string that a
 * YAML 1.1 reader (sigs.k8s.io/yaml, kubectl) could take for something else is written as a
 * JSON string, which is valid YAML, so a printed manifest always reads back as the same object.
 */

/** Output format of `berth manifests`. */
export type ManifestFormat = 'yaml' | 'json';

/**
 * Plain scalars, conservatively: a leading letter, `_` or `/`, then only characters without
 * meaning to YAML. Everything else (digits first, `:`, `#`, spaces, quotes) is quoted.
 */
const PLAIN_STRING = /^[A-Za-z_/][A-Za-z0-9_./-]*$/;

/** Words YAML 1.1 reads as booleans or null (kubectl still uses a 1.1 reader). */
const RESERVED_WORDS = new Set(['true', 'false', 'yes', 'no', 'on', 'off', 'y', 'n', 'null']);

function scalar(value: null | boolean | number | string): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`cannot print ${value} in a manifest`);
    return String(value);
  }
  return PLAIN_STRING.test(value) && !RESERVED_WORDS.has(value.toLowerCase())
    ? value
    : JSON.stringify(value);
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Entries of an object as JSON.stringify sees them: undefined members are left out. */
function entriesOf(value: Readonly<Record<string, unknown>>): [string, unknown][] {
  return Object.entries(value).filter(([, member]) => member !== undefined);
}

function isScalar(value: unknown): value is null | boolean | number | string {
  return value === null || ['boolean', 'number', 'string'].includes(typeof value);
}

/** Lines of a value that stands on its own lines (a non-empty map or sequence). */
function block(value: unknown, indent: string): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item: unknown) => {
      const [first = '', ...rest] = nested(item, `${indent}  `);
      return [`${indent}- ${first.trimStart()}`, ...rest];
    });
  }
  if (isRecord(value)) {
    return entriesOf(value).flatMap(([key, member]) => {
      const inline = inlineForm(member);
      return inline === undefined
        ? [`${indent}${scalar(key)}:`, ...block(member, `${indent}  `)]
        : [`${indent}${scalar(key)}: ${inline}`];
    });
  }
  throw new TypeError(`cannot print a ${typeof value} in a manifest`);
}

/** A value as the item of a sequence: scalars inline, collections as a block. */
function nested(value: unknown, indent: string): string[] {
  const inline = inlineForm(value);
  return inline === undefined ? block(value, indent) : [`${indent}${inline}`];
}

/** The one-line form of scalars and empty collections; undefined for anything needing a block. */
function inlineForm(value: unknown): string | undefined {
  if (isScalar(value)) return scalar(value);
  if (Array.isArray(value) && value.length === 0) return '[]';
  if (isRecord(value) && entriesOf(value).length === 0) return '{}';
  if (Array.isArray(value) || isRecord(value)) return undefined;
  throw new TypeError(`cannot print a ${typeof value} in a manifest`);
}

/** One YAML document for a JSON value, ending in a newline. */
export function toYaml(value: unknown): string {
  return `${nested(value, '').join('\n')}\n`;
}

/** The manifests as text, ready for `kubectl apply -f -`. */
export function printManifests(objects: readonly object[], format: ManifestFormat): string {
  if (format === 'json') {
    return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 2)}\n`;
  }
  return objects.map((object) => `---\n${toYaml(object)}`).join('');
}

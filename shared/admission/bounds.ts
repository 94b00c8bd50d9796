/**
 * Bounds on what berth stores of an object: its namespace, name and generateName go into owner
 * records and settle tasks. Mutating admission runs before the apiserver validates an object, so
 * a value Kubernetes would refuse reaches berth first, and one larger than a DynamoDB item
 * (400 KB) would fail the write. Such a value is refused here, with Kubernetes' own limit.
 */

/** The longest namespace Kubernetes accepts: an RFC 1123 DNS label. */
const MAX_NAMESPACE = 63;

/** How much of a rejected value a denial quotes. */
const QUOTE_LIMIT = 64;

/** The longest name (and generateName) of each kind: pods are DNS subdomains, Services labels. */
export const MAX_NAME = { Pod: 253, Service: 63 } as const;

/** One identity field of an object as admission saw it. */
interface Field {
  readonly path: string;
  readonly value: string;
  readonly max: number;
  readonly fix: string;
}

function quoted(value: string): string {
  return JSON.stringify(value.length > QUOTE_LIMIT ? `${value.slice(0, QUOTE_LIMIT)}…` : value);
}

/**
 * The denial message for the first identity field longer than Kubernetes accepts, in the
 * apiserver's words with the length and the fix; undefined when all fit. Pure.
 */
export function oversizedIdentity(
  kind: keyof typeof MAX_NAME,
  identity: { readonly namespace: string; readonly name: string; readonly generateName?: string },
): string | undefined {
  const max = MAX_NAME[kind];
  const fields: Field[] = [
    {
      path: 'metadata.namespace',
      value: identity.namespace,
      max: MAX_NAMESPACE,
      fix: 'use a namespace that exists',
    },
    { path: 'metadata.name', value: identity.name, max, fix: 'shorten the name' },
    {
      path: 'metadata.generateName',
      value: identity.generateName ?? '',
      max,
      fix: 'shorten it: the apiserver keeps at most 58 characters of it',
    },
  ];
  const field = fields.find((f) => f.value.length > f.max);
  if (!field) return undefined;
  return `${field.path}: Invalid value: ${quoted(field.value)} (${field.value.length} characters): must be no more than ${field.max} characters; ${field.fix}`;
}

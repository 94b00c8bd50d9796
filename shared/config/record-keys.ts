/**
 * The config's maps keyed by names users choose, and each key's rule. One home for the rule,
 * because the schema's record never sees a `__proto__` key (zod drops it silently rather than
 * let it set the output's prototype): the checks across fields, which read the raw document,
 * report that key with the same words.
 */

/** A config map's key rule: the pattern every key matches, and the message when one does not. */
export interface RecordKeyRule {
  readonly pattern: RegExp;
  readonly message: string;
}

/** The rule of each top-level map keyed by a user's name. */
export const RECORD_KEY_RULES = {
  hostPortRanges: {
    pattern: /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/,
    message: 'range names are lower-case DNS labels',
  },
  // A namespace name is a DNS label (kubernetes pkg/apis/core/validation ValidateNamespaceName).
  hostPortQuotas: {
    pattern: /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/,
    message: 'namespace names are lower-case DNS labels',
  },
} as const satisfies Readonly<Record<string, RecordKeyRule>>;

/**
 * Config problems in plain words: the key path, what the value must be, and what it was. The
 * schema's own messages (ranges, CIDRs, selectors) already read that way and are kept; zod's
 * generic ones ("Invalid input: expected int, received number") are rewritten.
 */
import type { z } from 'zod';

/** The path as a user writes it: `scale.nodePool.name`, `serviceCIDRs[1]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => {
    if (typeof key === 'number') return `${text}[${key}]`;
    return text === '' ? String(key) : `${text}.${String(key)}`;
  }, '');
}

/** A value as a message quotes it, cut short. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  const cut = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return `the ${typeof value} ${cut}`;
}

const TYPE_WORDS: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  record: 'an object',
};

const GENERIC = /^(Invalid input|Invalid option|Too small|Too big|Invalid string|Invalid number)/;

/**
 * The issues worth reporting: where a value has the wrong type, what else zod says about the same
 * value (its length, its entries) follows from that and is left out.
 */
export function primaryIssues(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  const mistyped = new Set(
    issues.filter((issue) => issue.code === 'invalid_type').map((issue) => formatPath(issue.path)),
  );
  return issues.filter(
    (issue) => issue.code === 'invalid_type' || !mistyped.has(formatPath(issue.path)),
  );
}

/** One problem, one line (unknown keys: one line per key). */
export function describeIssue(issue: z.core.$ZodIssue): string {
  const path = formatPath(issue.path);
  const at = (message: string) => `${path || '(root)'}: ${message}`;
  const input = (issue as { input?: unknown }).input;
  // A key of a record that its key schema refused: that schema's own words, not zod's "Invalid
  // key in record".
  if (issue.code === 'invalid_key') {
    return at(issue.issues.map((inner) => inner.message).join('; '));
  }
  // The schema's own messages already say what to write; only zod's generic ones are rewritten.
  if (issue.code !== 'unrecognized_keys' && !GENERIC.test(issue.message)) return at(issue.message);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys
        .map(
          (key) => `${path ? `${path}.` : ''}${key}: unknown key; remove it or check its spelling`,
        )
        .join('\n');
    case 'invalid_type':
      if (input === undefined)
        return at(`required: ${TYPE_WORDS[issue.expected] ?? issue.expected}`);
      return at(`must be ${TYPE_WORDS[issue.expected] ?? issue.expected}, not ${shown(input)}`);
    case 'too_small':
      if (issue.origin === 'array')
        return at(
          issue.message.startsWith('Too small')
            ? `needs at least ${issue.minimum} entries`
            : issue.message,
        );
      if (issue.origin === 'number' || issue.origin === 'int')
        return at(
          `must be at least ${issue.minimum}${issue.inclusive === false ? ' (exclusive)' : ''}, not ${shown(input)}`,
        );
      return at(
        issue.message.startsWith('Too small')
          ? `must have at least ${issue.minimum} characters`
          : issue.message,
      );
    case 'too_big':
      if (issue.origin === 'number' || issue.origin === 'int')
        return at(`must be at most ${issue.maximum}, not ${shown(input)}`);
      return at(
        issue.message.startsWith('Too big')
          ? `must have at most ${issue.maximum} ${issue.origin === 'array' ? 'entries' : 'characters'}`
          : issue.message,
      );
    case 'invalid_value':
      return at(
        `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, not ${shown(input)}`,
      );
    case 'invalid_union':
      return at(
        issue.message.startsWith('Invalid input')
          ? `is not one of the accepted forms (${shown(input)})`
          : issue.message,
      );
    default:
      return at(issue.message);
  }
}

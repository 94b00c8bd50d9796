/**
 * A queue message's body read back: JSON, checked field by field, since a message may come from
 * an older berth or from anyone who can send to the queue. Every problem is named by its path.
 */
import type { z } from 'zod';

/** Parses `body` against `schema`, or throws `malformed(problems)`. */
export function parseQueueMessage<S extends z.ZodType>(
  body: string,
  schema: S,
  malformed: (problems: readonly string[]) => Error,
): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw malformed(['body is not JSON']);
  }
  const result = schema.safeParse(json);
  if (result.success) return result.data;
  throw malformed(
    result.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`),
  );
}

/** Front work as a queue message, read back field by field (`parseQueueMessage`). */
import { z } from 'zod';
import { parseQueueMessage } from '../aws/queue-message.js';
import { PORT_PROTOCOLS } from '../hostports/model.js';
import { isAllocationId } from '../vocabulary/allocation-id.js';
import { FRONT_KINDS } from './model.js';
import type { FrontWork } from './work.js';

const name = z.string().max(253);
const allocationId = z.string().refine(isAllocationId, 'not an allocation id');
const epochMs = z.number().int().nonnegative();

const bindWork = z.strictObject({
  kind: z.literal('bind'),
  cluster: z.string().min(1).max(100),
  namespace: name.min(1),
  pod: name,
  allocationId,
  node: name.min(1),
  nodeAddress: z.string().min(1).max(64),
  ports: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(15),
        front: z.enum(FRONT_KINDS),
        protocol: z.enum(PORT_PROTOCOLS),
        hostPort: z.number().int().min(1).max(65535),
      }),
    )
    .min(1)
    .max(99),
  boundAt: epochMs,
  resumed: z.number().int().positive().max(1_000).optional(),
});

const releaseWork = z.strictObject({
  kind: z.literal('release'),
  cluster: z.string().min(1).max(100),
  namespace: name.min(1),
  // The pod is looked up by name before anything is freed: a release names it.
  pod: name.min(1),
  allocationId,
  admittedAt: epochMs,
  attempt: z.number().int().nonnegative().max(1_000),
});

const frontWork = z.discriminatedUnion('kind', [bindWork, releaseWork]);

/** Raised for a message that is not front work (dropped, not retried). */
export class MalformedFrontWorkError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`not front work: ${problems.join('; ')}`);
    this.name = 'MalformedFrontWorkError';
  }
}

/** Front work as a message body. */
export function frontWorkBody(work: FrontWork): string {
  return JSON.stringify(work);
}

/** Parses a message body. */
export function parseFrontWork(body: string): FrontWork {
  return parseQueueMessage(body, frontWork, (problems) => new MalformedFrontWorkError(problems));
}

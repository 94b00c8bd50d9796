/**
 * A settle task: one owner whose values wait for the apiserver's commit. Small and
 * self-describing, because it travels through a queue (SQS in AWS) and may come back many times.
 */
import { z } from 'zod';
import { parseQueueMessage } from '../aws/queue-message.js';
import { type Offset, toOffset } from '../net/offset.js';
import { isAllocationId } from '../vocabulary/allocation-id.js';

/**
 * Why the owner is waiting:
 * - `create`: values were allocated for a CREATE; if the object never appears they are freed;
 * - `release`: values were given back (an UPDATE dropped them, or a DELETE); they are freed once
 *   the object no longer carries them.
 */
export type SettleReason = 'create' | 'release';

/** One owner to look at. */
export interface SettleTask {
  readonly id: string;
  /**
   * The cluster the owner lives in, where one deployment serves several; absent from the tasks
   * of a single-cluster deployment (and of admissions before it served several).
   */
  readonly cluster?: string;
  readonly reason: SettleReason;
  /** Epoch ms of the admission that asked for it. */
  readonly admittedAt: number;
  /** 0 for the first look; each re-check adds one (the backoff's step). */
  readonly attempt: number;
  /**
   * A CREATE that wrote no owner record (its id names its owner): the object to look for and the
   * values it claimed, which the look frees should the object never be stored.
   */
  readonly unrecorded?: {
    readonly namespace: string;
    readonly name: string;
    readonly claims: readonly {
      readonly slot: string;
      readonly range: string;
      readonly offset: Offset;
    }[];
  };
}

/**
 * The most values a task names, and so the most one Service may hold (Service admission refuses
 * more): two cluster IPs, a health check node port and a node port per port.
 */
export const MAX_TASK_CLAIMS = 256;

const settleTask = z.strictObject({
  id: z.string().refine(isAllocationId, 'not an allocation id'),
  cluster: z.string().min(1).max(100).optional(),
  reason: z.enum(['create', 'release']),
  admittedAt: z.number().int().nonnegative(),
  attempt: z.number().int().nonnegative().max(1_000),
  unrecorded: z
    .strictObject({
      namespace: z.string().min(1).max(253),
      name: z.string().min(1).max(253),
      claims: z
        .array(
          z.strictObject({
            slot: z.string().max(256),
            range: z.string().min(1).max(256),
            // A number, or past 2^53 (a /64's offsets) its decimal digits: JSON has no bigint.
            offset: z.union([
              z.number().int().nonnegative(),
              z
                .string()
                .regex(/^\d{1,40}$/)
                .transform((digits) => toOffset(BigInt(digits))),
            ]),
          }),
        )
        .max(MAX_TASK_CLAIMS),
    })
    .optional(),
});

/** Raised for a queue message that is not a settle task (it is dropped, not retried). */
export class MalformedSettleTaskError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`not a settle task: ${problems.join('; ')}`);
    this.name = 'MalformedSettleTaskError';
  }
}

/** A task as a queue message body: an offset past 2^53 goes as its decimal digits. */
export function settleTaskBody(task: SettleTask): string {
  return JSON.stringify(task, (_, value) => (typeof value === 'bigint' ? String(value) : value));
}

/** Parses a queue message body. */
export function parseSettleTask(body: string): SettleTask {
  return parseQueueMessage(body, settleTask, (problems) => new MalformedSettleTaskError(problems));
}

/** A delay queue of settle tasks. */
export interface SettleQueue {
  /** Delivers `task` to the settle step after `delaySeconds`, at least once. */
  submit(task: SettleTask, delaySeconds: number): Promise<void>;
}

/** What one look did. */
export interface SettleOutcome {
  /** Values freed. */
  readonly freed: number;
  /** Values held again because the change that gave them back was refused. */
  readonly kept: number;
  /** Seconds until the next look, when something is left to decide. */
  readonly recheckAfter?: number;
}

/**
 * What the settle step does with one owner, decided from its record and one reading of its
 * object. Pure: `step.ts` reads and writes.
 *
 * The rule it serves: a value its object still carries, or may yet carry, is never freed. So
 * - a value given back is freed once the object is gone, or stored without it and no write that
 *   added it can still commit: an UPDATE that allocated it (or took it back) admitted against
 *   the very version read may still be on its way to etcd, until its deadline;
 * - one the object still carries waits: a terminating object (finalizers) until it is gone, a
 *   live one until the change that dropped it commits, or, once no apiserver request can still be
 *   in flight, it is held again (the change was refused);
 * - values allocated for a CREATE whose object never appears are freed once no apiserver request
 *   can still commit it.
 */
import { claimKey } from '../allocation/allocator.js';
import type { Claim, OwnerRecord } from '../allocation/store.js';
import { backoff, type SettleTiming } from '../config/settle-schedule.js';
import type { SettleTask } from './task.js';

// The schedule of looks is the config's too (it bounds `settle.delaySeconds`): one definition.
export { backoff, type SettleTiming, settleTiming } from '../config/settle-schedule.js';

/** The object as the settle step read it from the Kubernetes API. */
export type ObjectReading =
  | { readonly present: false }
  | {
      readonly present: true;
      /** `deletionTimestamp` set: a finalizer keeps it, and it still carries what it carries. */
      readonly terminating: boolean;
      /** `claimKey`s of the values it carries. */
      readonly carries: ReadonlySet<string>;
      /** Its resourceVersion: an admitted UPDATE can still commit only on top of it. */
      readonly resourceVersion?: string;
    };

/** What to do now, and whether to look again. */
export interface SettleDecision {
  /** Values to free (the object does not carry them). */
  readonly free: readonly Claim[];
  /** Given-back values the live object still carries long after: the change was refused. */
  readonly keep: readonly Claim[];
  /** Seconds until the next look; absent when nothing is left to decide. */
  readonly recheckAfter?: number;
}

/** Decides one look at one owner. `now` is epoch ms. */
export function decideSettle(
  record: OwnerRecord,
  reading: ObjectReading,
  task: SettleTask,
  now: number,
  timing: SettleTiming,
): SettleDecision {
  const windowMs = timing.commitWindowSeconds * 1000;
  const releasing = record.releasing ?? [];
  const carried = (claim: Claim) => reading.present && reading.carries.has(claimKey(claim));

  // The object is there: its CREATE committed. What it gave back since is a release task's.
  if (task.reason === 'create' && reading.present) return { free: [], keep: [] };
  if (task.reason === 'create') {
    // Not there yet: the apiserver may still be committing it, until the window closes.
    const waited = now - task.admittedAt;
    if (waited < windowMs) {
      return {
        free: [],
        keep: [],
        recheckAfter: Math.min(
          backoff(task.attempt, timing, waited),
          Math.ceil((windowMs - waited) / 1000),
        ),
      };
    }
    return { free: [...record.claims, ...releasing], keep: [] };
  }

  // Stored without it, but added by an UPDATE admitted against this very version, whose write
  // may still commit until its deadline: not yet.
  const inFlight = (claim: Claim) =>
    reading.present &&
    !carried(claim) &&
    claim.addedOn !== undefined &&
    (claim.addedOn === '*' || claim.addedOn === reading.resourceVersion) &&
    now - (claim.claimedAt ?? 0) < windowMs;
  const free = releasing.filter((claim) => !carried(claim) && !inFlight(claim));
  const waiting = releasing.filter(carried);
  const terminating = reading.present && reading.terminating;
  const refused = terminating ? [] : waiting.filter((claim) => now - claim.since >= windowMs);
  const left = waiting.length - refused.length + releasing.filter(inFlight).length;
  return {
    free,
    keep: refused,
    ...(left > 0 ? { recheckAfter: backoff(task.attempt, timing, now - task.admittedAt) } : {}),
  };
}

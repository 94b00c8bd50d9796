/**
 * When the settle step looks at an owner whose values wait for the apiserver's commit, and so how
 * long `settle.delaySeconds` may be. It lives with the config because the config's schema bounds
 * that key by it; the settle policy (shared/settle/policy.ts) decides each look with the same
 * schedule.
 */
import { COMMIT_WINDOW_MS } from '../vocabulary/commit-window.js';

/** What berth promises: a value given back is free again within this of its commit (p99). */
export const FREED_AFTER_COMMIT_SECONDS = 30;

/** What berth promises: a value of a CREATE whose object never appears is free within this. */
export const FREED_AFTER_NEVER_STORED_SECONDS = 120;

/** Timing of the settle step, in seconds. */
export interface SettleTiming {
  /** First look after the admission (`settle.delaySeconds`). */
  readonly delaySeconds: number;
  /** How long after an admission its write may still commit (`COMMIT_WINDOW_MS`). */
  readonly commitWindowSeconds: number;
  /**
   * Longest wait between two looks while the change is young: a value is freed at most this long
   * after its object commits the change (a finalizer lifted, say), within `FREED_AFTER_COMMIT_SECONDS`.
   */
  readonly promptDelaySeconds: number;
  /** How long after the admission looks stay prompt. */
  readonly promptForSeconds: number;
  /**
   * Longest wait between two looks after that: an object a finalizer holds for long is looked
   * at less often, so one stuck for a day costs hundreds of looks, not thousands.
   */
  readonly maxDelaySeconds: number;
}

/** The defaults; `delaySeconds` comes from the config. */
export function settleTiming(delaySeconds: number): SettleTiming {
  return {
    delaySeconds,
    commitWindowSeconds: COMMIT_WINDOW_MS / 1000,
    promptDelaySeconds: 20,
    promptForSeconds: 600,
    maxDelaySeconds: 300,
  };
}

/**
 * Seconds until the next look, `sinceAdmissionMs` after the admission: doubling from
 * `delaySeconds`, capped at `promptDelaySeconds` while the change is young (10, 20, 20, …) and at
 * `maxDelaySeconds` after (by then the doubling is far past it: 300, 300, …).
 */
export function backoff(attempt: number, timing: SettleTiming, sinceAdmissionMs: number): number {
  const delay = timing.delaySeconds * 2 ** Math.min(attempt + 1, 20);
  const cap =
    sinceAdmissionMs < timing.promptForSeconds * 1000
      ? timing.promptDelaySeconds
      : timing.maxDelaySeconds;
  return Math.max(1, Math.min(delay, cap));
}

/** The longest the schedule takes to free a value once nothing holds it any more, in seconds. */
export interface SettleBounds {
  /**
   * From a commit to the look that sees it, while the change is young: the widest gap between
   * two looks, the first counted from the review (which the commit follows).
   */
  readonly afterCommit: number;
  /** From the review to the look that frees a CREATE whose object never appeared. */
  readonly neverStored: number;
}

/** What `timing`'s looks promise, walking the schedule the settle policy follows. */
export function settleBounds(timing: SettleTiming): SettleBounds {
  let afterCommit = timing.delaySeconds;
  for (let attempt = 0, at = timing.delaySeconds; at < timing.promptForSeconds; attempt++) {
    const gap = backoff(attempt, timing, at * 1000);
    afterCommit = Math.max(afterCommit, gap);
    at += gap;
  }
  // A CREATE's looks stop short of the commit window's end, and the first past it frees.
  let neverStored = timing.delaySeconds;
  for (let attempt = 0; neverStored < timing.commitWindowSeconds; attempt++) {
    const left = Math.ceil(timing.commitWindowSeconds - neverStored);
    neverStored += Math.min(backoff(attempt, timing, neverStored * 1000), left);
  }
  return { afterCommit, neverStored };
}

/** Whether `delaySeconds` keeps both release promises (the `FREED_AFTER_*` bounds) by default. */
function keepsPromises(delaySeconds: number): boolean {
  const bounds = settleBounds(settleTiming(delaySeconds));
  return (
    bounds.afterCommit <= FREED_AFTER_COMMIT_SECONDS &&
    bounds.neverStored <= FREED_AFTER_NEVER_STORED_SECONDS
  );
}

/**
 * The largest `settle.delaySeconds` that keeps both release promises (the config's cap): past the
 * prompt cap, the first look is the widest gap a commit can wait for.
 */
export const MAX_SETTLE_DELAY_SECONDS = (() => {
  let delay = 1;
  while (delay < FREED_AFTER_NEVER_STORED_SECONDS && keepsPromises(delay + 1)) delay++;
  return delay;
})();

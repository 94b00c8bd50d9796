/**
 * The values a server allocated since it started, counted from its admission decisions: what the
 * web view's "allocations per second" plots. Net growth of the ranges is not that: a minute with
 * as many releases as allocations grows nothing and still allocated.
 */
import type { AdmissionDecision } from '../admission/decision.js';

/** Counts every value an allowed, stored (not dry-run) CREATE or UPDATE was given. */
export class AllocationCounter {
  #count = 0;

  /** Hears one decision. */
  hear(decision: AdmissionDecision): void {
    const changes = decision.operation === 'CREATE' || decision.operation === 'UPDATE';
    if (decision.allowed && !decision.dryRun && changes) this.#count += decision.values.length;
  }

  /** Values allocated so far. */
  get count(): number {
    return this.#count;
  }
}

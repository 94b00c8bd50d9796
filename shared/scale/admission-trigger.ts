/**
 * The scale-up trigger as admissions meet it, on every host: each game-server pod admitted adds
 * one to the cluster's trigger store (`ScaleTriggerStore`, store.ts) and each one deleted takes
 * one away, and the admission that exhausts the last pass's slack claims the triggered pass and
 * asks for it: an asynchronous invoke of the scale function in AWS, the pass in process on
 * `berth serve`. The store, not the process, keeps the count, so many Lambda containers ask once
 * between them.
 */
import type { ScaleTriggerStore } from './store.js';
import { passWanted, TRIGGER_DEBOUNCE_MS } from './trigger.js';

/** The trigger's dependencies: its store, how a pass is asked for, the clock, where faults go. */
export interface AdmissionTriggerDeps {
  readonly store: ScaleTriggerStore;
  /** Asks for a triggered pass; called at most once a debounce per cluster. */
  readonly ask: () => Promise<void>;
  readonly now: () => number;
  /** Hears a count, claim or ask that failed: the scheduled pass still comes. */
  readonly failed: (error: unknown) => void;
}

/** Counts game servers admitted and deleted, and asks for a pass when they exhaust the slack. */
export class AdmissionTrigger {
  readonly #deps: AdmissionTriggerDeps;

  constructor(deps: AdmissionTriggerDeps) {
    this.#deps = deps;
  }

  /**
   * One game server admitted (`+1`) or deleted (`-1`). Never rejects: a trigger's fault must not
   * fail an admission.
   */
  async counted(change: 1 | -1): Promise<void> {
    const { store, ask, now, failed } = this.#deps;
    try {
      const state = await store.admitted(change);
      const at = now();
      if (change < 0 || !passWanted(state, at)) return;
      if (await store.claim(at, TRIGGER_DEBOUNCE_MS)) await ask();
    } catch (error) {
      failed(error);
    }
  }
}

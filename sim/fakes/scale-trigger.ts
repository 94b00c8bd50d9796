/** The scale-up trigger's shared count kept in the test's process. */
import {
  NO_PASS_YET,
  type ScaleTriggerStore,
  type TriggerState,
} from '../../shared/scale/store.js';

/** A trigger store in this process: what the DynamoDB item keeps, as plain fields. */
export class InProcessScaleTrigger implements ScaleTriggerStore {
  #slack = NO_PASS_YET.slack;
  #passAtMs = NO_PASS_YET.passAtMs;
  #claimedAtMs = NO_PASS_YET.passAtMs;
  #admitted = 0;
  #base = 0;

  async passed(slack: number, atMs: number): Promise<void> {
    this.#slack = slack;
    this.#passAtMs = atMs;
    this.#base = this.#admitted;
  }

  async admitted(count: number): Promise<TriggerState> {
    this.#admitted += count;
    return {
      slack: this.#slack,
      passAtMs: Math.max(this.#passAtMs, this.#claimedAtMs),
      admitted: this.#admitted - this.#base,
    };
  }

  async claim(atMs: number, debounceMs: number): Promise<boolean> {
    const cut = atMs - debounceMs;
    if (this.#passAtMs > cut || this.#claimedAtMs > cut) return false;
    this.#claimedAtMs = atMs;
    return true;
  }
}

/**
 * Simulated time for benchmarks whose tasks run concurrently: many Lambda invocations at once,
 * each free to sleep (a budget wait, a backoff) without holding the others back. A task sleeps
 * on the clock; the clock moves to the earliest sleeper only once every task is blocked on it,
 * so time passes as it would for concurrent work, never as the sum of everyone's sleeps.
 *
 * Only for tasks with no real I/O (in-memory stores, the EC2 fake): "blocked" is told by letting
 * every queued promise job run first, which real I/O would outlast.
 */

/** A sleeper: when it wakes, and its place among those waking at the same instant. */
interface Timer {
  readonly at: number;
  readonly order: number;
  readonly wake: () => void;
}

/** Lets every promise job queued so far, and those they queue, run. */
function drainPromiseJobs(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class VirtualClock {
  #now: number;
  /** Sleepers, the earliest first (ties in the order they slept). */
  readonly #timers: Timer[] = [];
  #slept = 0;

  constructor(start: number) {
    this.#now = start;
  }

  /** The simulated time, epoch milliseconds. */
  readonly now = (): number => this.#now;

  /** Resolves when the clock reaches now + `ms`. */
  readonly sleep = (ms: number): Promise<void> =>
    new Promise((wake) => {
      const timer = { at: this.#now + Math.max(0, ms), order: this.#slept++, wake };
      let low = 0;
      let high = this.#timers.length;
      while (low < high) {
        const mid = (low + high) >> 1;
        const other = this.#timers[mid] as Timer;
        if (other.at < timer.at || (other.at === timer.at && other.order < timer.order))
          low = mid + 1;
        else high = mid;
      }
      this.#timers.splice(low, 0, timer);
    });

  /** Starts `task` when the clock reaches `at` (at once if it has); its outcome is the task's. */
  at<T>(at: number, task: () => Promise<T>): Promise<T> {
    return this.sleep(at - this.#now).then(task);
  }

  /**
   * Runs every task until all of them are finished or asleep past `until`, waking sleepers in
   * time order; the clock then reads `until`.
   */
  async runUntil(until: number): Promise<void> {
    for (;;) {
      await drainPromiseJobs();
      const next = this.#timers[0];
      if (!next || next.at > until) break;
      this.#timers.shift();
      this.#now = Math.max(this.#now, next.at);
      next.wake();
    }
    this.#now = Math.max(this.#now, until);
  }

  /** Whether any task is still asleep. */
  get pending(): boolean {
    return this.#timers.length > 0;
  }
}

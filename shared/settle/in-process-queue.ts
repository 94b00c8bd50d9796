/**
 * The settle queue of `berth serve`: timers in the same process, running the very step the
 * settle function runs in AWS. A task lost with the process (a restart, a kill -9) is found again
 * from the store by the next start (recovery.ts), and by the repair pass.
 */
import type { SettleOutcome, SettleQueue, SettleTask } from './task.js';

/** Hears what each look did, for the server's log. */
export interface SettleLog {
  settled(task: SettleTask, outcome: SettleOutcome): void;
  failed(task: SettleTask, error: unknown): void;
}

/** A failed look is tried again after this long. */
const RETRY_SECONDS = 5;

/** Timers that run `step` for each task, and run it again while it asks for another look. */
export class InProcessSettleQueue implements SettleQueue {
  readonly #step: (task: SettleTask) => Promise<SettleOutcome>;
  readonly #log: SettleLog;
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #running = new Set<Promise<void>>();
  #closed = false;

  constructor(step: (task: SettleTask) => Promise<SettleOutcome>, log: SettleLog) {
    this.#step = step;
    this.#log = log;
  }

  async submit(task: SettleTask, delaySeconds: number): Promise<void> {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      const run = this.#run(task).finally(() => this.#running.delete(run));
      this.#running.add(run);
    }, delaySeconds * 1000);
    // Waiting tasks never keep the process alive: the next start finds what they would have done.
    timer.unref();
    this.#timers.add(timer);
  }

  /** Tasks waiting for their timer. */
  get waiting(): number {
    return this.#timers.size;
  }

  /** Stops taking tasks, drops the waiting ones and lets running looks finish. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    await Promise.allSettled([...this.#running]);
  }

  async #run(task: SettleTask): Promise<void> {
    let next: number | undefined;
    try {
      const outcome = await this.#step(task);
      this.#log.settled(task, outcome);
      next = outcome.recheckAfter;
    } catch (error) {
      this.#log.failed(task, error);
      next = RETRY_SECONDS;
    }
    if (next !== undefined) await this.submit({ ...task, attempt: task.attempt + 1 }, next);
  }
}

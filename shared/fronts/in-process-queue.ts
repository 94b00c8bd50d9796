/**
 * The fronts queue of `berth serve` and of the simulator: timers in the same process. Work due
 * at once is gathered for `windowMs` and handed over as one batch, as SQS's batching window does
 * in AWS; a failed item is tried again after a pause, a bounded number of times (the fronts pass
 * finds what is left).
 */
import type { FrontQueue, FrontWork, FrontWorkOutcome } from './work.js';

/** Hears what became of each item, for the server's log and the benchmark. */
export interface FrontQueueLog {
  handled(work: FrontWork, outcome: FrontWorkOutcome): void;
}

/** Timer effects, injected so the simulator can run on virtual time. */
export interface QueueTimers {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

const REAL_TIMERS: QueueTimers = {
  setTimeout: (run, ms) => {
    const timer = setTimeout(run, ms);
    timer.unref();
    return timer;
  },
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** A failed item is tried again after this long... */
const RETRY_MS = 5_000;
/** ...this many times in all. */
const MAX_TRIES = 5;

/** In-process batching queue over a batch handler (the worker). */
export class InProcessFrontQueue implements FrontQueue {
  readonly #handle: (batch: readonly FrontWork[]) => Promise<FrontWorkOutcome[]>;
  readonly #log: FrontQueueLog | undefined;
  readonly #timers: QueueTimers;
  readonly #windowMs: number;
  readonly #pending = new Set<unknown>();
  readonly #running = new Set<Promise<void>>();
  readonly #tries = new WeakMap<FrontWork, number>();
  #batch: FrontWork[] = [];
  #closed = false;

  constructor(options: {
    readonly handle: (batch: readonly FrontWork[]) => Promise<FrontWorkOutcome[]>;
    readonly log?: FrontQueueLog;
    readonly timers?: QueueTimers;
    /** How long work due at once is gathered (default 1 s, SQS's shortest batching window). */
    readonly windowMs?: number;
  }) {
    this.#handle = options.handle;
    this.#log = options.log;
    this.#timers = options.timers ?? REAL_TIMERS;
    this.#windowMs = options.windowMs ?? 1_000;
  }

  async submit(work: FrontWork, delaySeconds: number): Promise<void> {
    this.#after(delaySeconds * 1000, () => this.#gather(work));
  }

  /** Stops taking work, drops what waits, and lets running batches finish. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#pending) this.#timers.clearTimeout(timer);
    this.#pending.clear();
    this.#batch = [];
    await Promise.allSettled([...this.#running]);
  }

  #after(ms: number, run: () => void): void {
    if (this.#closed) return;
    const timer = this.#timers.setTimeout(() => {
      this.#pending.delete(timer);
      run();
    }, ms);
    this.#pending.add(timer);
  }

  #gather(work: FrontWork): void {
    this.#batch.push(work);
    if (this.#batch.length > 1) return;
    this.#after(this.#windowMs, () => {
      const batch = this.#batch;
      this.#batch = [];
      const run = this.#run(batch).finally(() => this.#running.delete(run));
      this.#running.add(run);
    });
  }

  async #run(batch: readonly FrontWork[]): Promise<void> {
    const outcomes = await this.#handle(batch).catch((error: unknown) =>
      batch.map((): FrontWorkOutcome => ({ kind: 'failed', error })),
    );
    batch.forEach((work, i) => {
      const outcome = outcomes[i] ?? { kind: 'failed', error: new Error('no outcome') };
      this.#log?.handled(work, outcome);
      if (outcome.kind !== 'failed') return;
      const tries = (this.#tries.get(work) ?? 1) + 1;
      if (tries > MAX_TRIES) return;
      this.#tries.set(work, tries);
      this.#after(RETRY_MS, () => this.#gather(work));
    });
  }
}

/**
 * At most `limit` pieces of work at once, as an apiserver has many requests in flight: `add`
 * waits for a free slot, `drain` for every piece to finish. The first failure is kept and thrown
 * by the next `add` or `drain`, so a run stops on it instead of going on without it.
 */
export class InFlight {
  readonly #limit: number;
  readonly #running = new Set<Promise<void>>();
  #failure: { readonly error: unknown } | undefined;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Starts `work` once fewer than `limit` run; resolves when it has started. */
  async add(work: () => Promise<void>): Promise<void> {
    while (this.#running.size >= this.#limit) await Promise.race(this.#running);
    this.#throwIfFailed();
    const running: Promise<void> = work()
      .catch((error: unknown) => {
        this.#failure ??= { error };
      })
      .finally(() => this.#running.delete(running));
    this.#running.add(running);
  }

  /** Resolves once nothing runs; throws the first failure, if any. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running);
    this.#throwIfFailed();
  }

  #throwIfFailed(): void {
    if (this.#failure) throw this.#failure.error;
  }
}

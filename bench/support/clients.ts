/** Runs one operation from N concurrent clients until a count or a deadline is reached. */

/** What a run of operations measured. */
export interface ClientRun {
  /** Operations that completed without error. */
  readonly completed: number;
  readonly errors: number;
  /** Wall time from the first start to the last finish. */
  readonly wallMs: number;
  /**
   * Until the first client ran out of work every client was busy: the steady-state window.
   * Throughput over it is not diluted by the ramp-down tail, where slow operations (a starving
   * compare-and-swap loop) would otherwise count against their implementation twice.
   */
  readonly saturatedMs: number;
  readonly saturatedCompleted: number;
  /** Latency of every completed operation, ms. */
  readonly latenciesMs: number[];
  /** Sum of what the operations reported (conflicts, retries). */
  readonly retries: number;
  /** The first error seen, for the report. */
  readonly firstError?: string;
}

/** How to run. */
export interface ClientRunOptions {
  readonly concurrency: number;
  /** Operations to issue in total. */
  readonly count: number;
  /** No new operation starts after this many ms (in-flight ones finish). */
  readonly timeLimitMs: number;
}

/**
 * Each client issues operations back to back; an operation resolves to the retries it needed.
 * Operations are taken from one shared counter, so a slow client does not hold the others back.
 */
export async function runClients(
  options: ClientRunOptions,
  operation: (index: number) => Promise<number>,
): Promise<ClientRun> {
  const latenciesMs: number[] = [];
  let issued = 0;
  let errors = 0;
  let retries = 0;
  let firstError: string | undefined;
  let saturatedMs: number | undefined;
  let saturatedCompleted = 0;
  const started = performance.now();
  const deadline = started + options.timeLimitMs;
  const client = async () => {
    while (issued < options.count && performance.now() < deadline) {
      const index = issued++;
      const t0 = performance.now();
      try {
        // Awaited before adding: `retries += await x` would read `retries` before the await and
        // lose the other clients' updates made meanwhile.
        const needed = await operation(index);
        retries += needed;
        latenciesMs.push(performance.now() - t0);
      } catch (error) {
        errors++;
        firstError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
    }
    if (saturatedMs === undefined) {
      saturatedMs = performance.now() - started;
      saturatedCompleted = latenciesMs.length;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  return {
    completed: latenciesMs.length,
    errors,
    wallMs: performance.now() - started,
    saturatedMs: saturatedMs ?? 0,
    saturatedCompleted,
    latenciesMs,
    retries,
    ...(firstError ? { firstError } : {}),
  };
}

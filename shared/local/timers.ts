/**
 * The scheduled passes of the local stack: each on its own timer, never overlapping itself (a
 * slow pass makes the next tick skip, as the lease does in AWS), stopped together.
 */

/** One pass to run every `intervalSeconds`; 0 turns it off. */
export interface TimedPass {
  readonly name: string;
  readonly intervalSeconds: number;
  readonly run: () => Promise<unknown>;
}

/** Where results and failures go. */
export interface PassLog {
  result(name: string, result: unknown): void;
  failure(name: string, error: unknown): void;
}

/**
 * Starts the timers, each pass running once at start (an operator sees at once whether a pass
 * works, not one interval later); the returned function stops them and waits for passes under way.
 */
export function startPassTimers(passes: readonly TimedPass[], log: PassLog): () => Promise<void> {
  const running = new Map<string, Promise<void>>();
  const tick = (pass: TimedPass) => {
    if (running.has(pass.name)) return;
    const run = pass
      .run()
      .then(
        (result) => log.result(pass.name, result),
        (error: unknown) => log.failure(pass.name, error),
      )
      .finally(() => running.delete(pass.name));
    running.set(pass.name, run);
  };
  const enabled = passes.filter((pass) => pass.intervalSeconds > 0);
  for (const pass of enabled) tick(pass);
  const timers = enabled.map((pass) => setInterval(() => tick(pass), pass.intervalSeconds * 1000));
  return async () => {
    for (const timer of timers) clearInterval(timer);
    await Promise.all(running.values());
  };
}

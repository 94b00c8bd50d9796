/**
 * The ENI benchmark's comparison on two axes at once: mutating EC2 calls against the addresses a
 * pool holds idle on average. A run is on the frontier when no other run is at least as good on
 * both and better on one (Pareto dominance); fewer calls bought with more idle addresses, or the
 * other way round, is a trade, not a win. Pure, so it is tested apart from the simulation.
 */

/** What the frontier reads of a run. */
export interface FrontierRun {
  readonly name: string;
  readonly mutatingCalls: number;
  readonly idleIps: { readonly average: number };
}

/** Whether `a` dominates `b`: no more calls, no more idle addresses, and fewer of one. */
export function dominates(a: FrontierRun, b: FrontierRun): boolean {
  const calls = a.mutatingCalls - b.mutatingCalls;
  const idle = a.idleIps.average - b.idleIps.average;
  return calls <= 0 && idle <= 0 && (calls < 0 || idle < 0);
}

/**
 * The runs no other run dominates, fewest calls first; runs tied on both axes all stay.
 * Each other run comes with the frontier run that dominates it with the fewest calls.
 */
export function frontier<T extends FrontierRun>(
  runs: readonly T[],
): { readonly front: T[]; readonly dominated: { readonly run: T; readonly by: T }[] } {
  const front = runs
    .filter((run) => !runs.some((other) => dominates(other, run)))
    .sort((a, b) => a.mutatingCalls - b.mutatingCalls || a.idleIps.average - b.idleIps.average);
  const dominated = runs.flatMap((run) => {
    const by = front.find((other) => dominates(other, run));
    return by ? [{ run, by }] : [];
  });
  return { front, dominated };
}

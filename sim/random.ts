/**
 * The simulator's numbers: a seeded random source, the draws and the percentiles it reports.
 */

/** A seeded uniform random source in [0, 1) (mulberry32): the same seed replays the same day. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A Poisson draw (Knuth's method: the means of a simulated minute are small). */
export function poisson(mean: number, random: () => number): number {
  const limit = Math.exp(-mean);
  let count = 0;
  for (let product = random(); product > limit; product *= random()) count++;
  return count;
}

/** The p-th percentile (0–100) of samples sorted ascending, at index ⌊p·n/100⌋; 0 for none. */
export function percentileOfSorted(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

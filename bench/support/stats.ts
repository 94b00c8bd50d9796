/** Latency statistics for the benchmarks. */

/** The p-th percentile (0–100) by nearest rank; NaN for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** The median of a list; NaN for none. */
export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

/** Rounds for display and for the results file, keeping NaN and integers as they are. */
export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

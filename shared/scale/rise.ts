/**
 * The net rise of game servers within a horizon: what the free slots must absorb between a
 * shortfall being seen and the nodes asked for it being Ready. Arrivals alone overstate it: at a
 * steady rate as many sessions end as start, and their slots are taken again, so a buffer sized
 * from the arrival rate holds a provisioning time of arrivals the whole day for nothing. The
 * level (game servers bound or pending) rises only by what the free slots really pay: a burst, a
 * wave, the climb of the day, noise. Each pass samples the level; the rise is the level now less
 * the lowest sample within the horizon, and the day's largest rise (a sliding-window maximum in
 * a few entries) is the reserve the buffer keeps (demand.ts). Pure.
 */
import type { Sample } from './store.js';

/**
 * The rise of `level` at `nowMs` over the lowest sample within `horizonMs` before it; 0 when no
 * sample falls in the horizon (a first pass, or a gap longer than the horizon).
 */
export function riseWithin(
  levels: readonly Sample[],
  level: number,
  nowMs: number,
  horizonMs: number,
): number {
  let lowest: number | undefined;
  for (const sample of levels) {
    if (sample.atMs < nowMs - horizonMs || sample.atMs >= nowMs) continue;
    lowest = Math.min(lowest ?? sample.count, sample.count);
  }
  return lowest === undefined ? 0 : Math.max(0, level - lowest);
}

/**
 * A sliding-window maximum kept in few entries: `peaks` (oldest and largest first) with `entry`
 * added and the entries older than `windowMs` forgotten. The first entry is the window's largest;
 * an entry as large as earlier ones ends their reign, since it outlives them.
 */
export function withPeak(
  peaks: readonly Sample[],
  entry: Sample | undefined,
  nowMs: number,
  windowMs: number,
): Sample[] {
  const kept = peaks.filter((peak) => peak.atMs > nowMs - windowMs);
  if (entry) {
    while ((kept.at(-1)?.count ?? Number.POSITIVE_INFINITY) <= entry.count) kept.pop();
    kept.push(entry);
  }
  return kept;
}

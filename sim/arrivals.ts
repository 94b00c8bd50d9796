/**
 * Game sessions arriving over time, each with its length: the one arrivals generator of every
 * simulated day and benchmark workload. A Poisson rate that may follow the time of day, drawn
 * step by step (a count per step, each session at a whole millisecond within it) or in
 * continuous time (thinning), and bursts (a tournament round, a streamer's raid). Seeded by the
 * `random` handed in, drawn in a fixed order (a session's instant, then its length), so a day
 * replays and a source drawn after the others leaves theirs as they were.
 */
import { poisson } from './random.js';

/** One session: when it is asked for, and how long it plays. */
export interface Arrival {
  readonly atMs: number;
  readonly sessionMs: number;
}

/** How long a session plays, drawn from `random`. */
export type SessionLength = (random: () => number) => number;

/** Sessions at `perMinute(t)` a minute from `fromMs` until `toMs`, drawn every `stepMs`. */
export interface ArrivalRate {
  readonly fromMs: number;
  readonly toMs: number;
  readonly stepMs: number;
  readonly perMinute: (atMs: number) => number;
}

/** `count` bursts, each of `minSize`..`maxSize` sessions within `withinMs`, starting in `0..spanMs`. */
export interface ArrivalBursts {
  readonly count: number;
  readonly minSize: number;
  readonly maxSize: number;
  readonly spanMs: number;
  readonly withinMs: number;
}

const MINUTE_MS = 60_000;

/** The sessions of a rate, in arrival order. */
export function poissonArrivals(
  rate: ArrivalRate,
  length: SessionLength,
  random: () => number,
): Arrival[] {
  const out: Arrival[] = [];
  for (let t = rate.fromMs; t < rate.toMs; t += rate.stepMs) {
    const count = poisson((rate.perMinute(t) * rate.stepMs) / MINUTE_MS, random);
    for (let i = 0; i < count; i++) {
      out.push({ atMs: t + Math.floor(random() * rate.stepMs), sessionMs: length(random) });
    }
  }
  return out;
}

/** The sessions of some bursts, burst by burst (not sorted). */
export function burstArrivals(
  bursts: ArrivalBursts,
  length: SessionLength,
  random: () => number,
): Arrival[] {
  const out: Arrival[] = [];
  const { count, minSize, maxSize, spanMs, withinMs } = bursts;
  for (let b = 0; b < count; b++) {
    const at = Math.floor(random() * spanMs);
    const size = minSize + Math.floor(random() * (maxSize - minSize + 1));
    for (let i = 0; i < size; i++) {
      out.push({ atMs: at + Math.floor(random() * withinMs), sessionMs: length(random) });
    }
  }
  return out;
}

/** A rate in continuous time, at most `peakPerMinute`: drawn by thinning (Lewis and Shedler). */
export type ThinnedRate = Omit<ArrivalRate, 'stepMs'> & { readonly peakPerMinute: number };

/**
 * The sessions of a rate in continuous time, in arrival order: candidates at the peak rate
 * (exponential gaps), each kept with probability `perMinute(t) / peakPerMinute`.
 */
export function thinnedArrivals(
  rate: ThinnedRate,
  length: SessionLength,
  random: () => number,
): Arrival[] {
  const out: Arrival[] = [];
  const meanGapMs = MINUTE_MS / rate.peakPerMinute;
  for (let t = rate.fromMs; ; ) {
    t += -Math.log(1 - random()) * meanGapMs;
    if (t >= rate.toMs) return out;
    if (random() * rate.peakPerMinute <= rate.perMinute(t)) {
      out.push({ atMs: t, sessionMs: length(random) });
    }
  }
}

/** Sessions of `minMs`..`maxMs`, uniform in whole milliseconds. */
export function uniformLength(minMs: number, maxMs: number): SessionLength {
  return (random) => minMs + Math.floor(random() * (maxMs - minMs));
}

/** Sessions of exponential length around `meanMs`, at least `floorMs` (a match has a minimum). */
export function exponentialLength(meanMs: number, floorMs: number): SessionLength {
  return (random) => Math.max(floorMs, -Math.log(1 - random()) * meanMs);
}

/**
 * Sessions of a log-normal length (median `medianMs`, log-scale spread `sigma`), within
 * `minMs`..`maxMs`: heavy-tailed, as match lengths are (most short, a few very long). One normal
 * draw per session (Box-Muller, two uniforms), so the order of draws stays fixed.
 */
export function logNormalLength(
  medianMs: number,
  sigma: number,
  minMs: number,
  maxMs: number,
): SessionLength {
  return (random) => {
    const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return Math.round(Math.min(maxMs, Math.max(minMs, medianMs * Math.exp(sigma * normal))));
  };
}

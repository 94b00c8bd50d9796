/**
 * A workload of weeks for the scale benchmark, and recorded traces in its place. A single day
 * with a cosine and random bursts rewards whoever is tuned to that day; an operator's buffer has
 * to hold through the hour, the weekday, a patch day and growth. So the weeks carry:
 * - a daily cycle (trough at 05:00) and a weekly one (busier Friday to Sunday);
 * - growth, linear week over week;
 * - recurring events a calendar knows: a nightly tournament at 20:00 and a weekly patch day
 *   (Wednesday: a maintenance lull from 09:00, then the players coming back at once);
 * - random bursts no calendar predicts (a streamer's raid: `size` sessions within a minute);
 * - heavy-tailed session lengths (log-normal: most matches short, a few very long).
 * Drawn by the one arrivals generator (`sim/arrivals.ts`), seeded, in a fixed order.
 *
 * A trace is a CSV, `arrival_seconds,session_seconds`, one game session a row, arrival in
 * seconds from the trace's start, up to four weeks (`parseTrace`).
 */
import {
  type Arrival,
  burstArrivals,
  logNormalLength,
  poissonArrivals,
} from '../../sim/arrivals.js';
import { seededRandom } from '../../sim/random.js';
import { HOUR, MAIN_SCENARIO, MINUTE, type Scenario, SECOND } from './day.js';

export const DAY = 24 * HOUR;
export const WEEK = 7 * DAY;
/** The longest trace the benchmark runs. */
export const MAX_TRACE_MS = 4 * WEEK;

/** What the weeks are made of (see the module comment). Week 1 starts on a Monday at 00:00. */
export const WEEKS_WORKLOAD = {
  weeks: 4,
  /** Arrivals per minute: `base + peak * (1 - cos(2π (t - trough) / 24h)) / 2`, in week 1. */
  basePerMinute: 1,
  peakPerMinute: 8,
  troughAtMs: 5 * HOUR,
  /** The rate's multiplier, Monday to Sunday. */
  weekday: [1, 0.95, 0.95, 1, 1.15, 1.35, 1.3],
  /** Added to the rate per week since the first (0.05: week 4 runs at 1.15x week 1). */
  growthPerWeek: 0.05,
  /** Every night at `atMs` past midnight, `perMinute` more arrivals for `durationMs`. */
  tournament: { atMs: 20 * HOUR, durationMs: 10 * MINUTE, perMinute: 6 },
  /**
   * On `weekday` (0 = Monday) the game is patched: from `atMs` the rate falls to `lull` times
   * for `lullMs`, then runs at `rush` times for `rushMs` as players come back.
   */
  patchDay: { weekday: 2, atMs: 9 * HOUR, lullMs: 2 * HOUR, lull: 0.1, rushMs: HOUR, rush: 2.5 },
  /** Bursts no calendar predicts, anywhere in the weeks. */
  bursts: { perWeek: 4, minSize: 10, maxSize: 40 },
  sessions: { medianMs: 15 * MINUTE, sigma: 0.6, minMs: 3 * MINUTE, maxMs: 3 * HOUR },
} as const;

/** The seeds every run of the weeks uses. */
export const WEEKS_SEEDS: readonly number[] = [20261201, 20261202, 20261203];

/** The rate multiplier the calendar gives at `t` (ms since week 1's Monday 00:00). */
function calendar(t: number): number {
  const w = WEEKS_WORKLOAD;
  const at = Math.max(0, t);
  const day = Math.floor(at / DAY);
  const ofDay = at - day * DAY;
  const weekday = w.weekday[day % 7] ?? 1;
  const growth = 1 + w.growthPerWeek * Math.floor(at / WEEK);
  const { patchDay: p } = w;
  const patch =
    day % 7 !== p.weekday || ofDay < p.atMs
      ? 1
      : ofDay < p.atMs + p.lullMs
        ? p.lull
        : ofDay < p.atMs + p.lullMs + p.rushMs
          ? p.rush
          : 1;
  return weekday * growth * patch;
}

/** Arrivals per minute at `t` (ms since week 1's Monday 00:00; before it, as at its start). */
export function weeksRate(t: number): number {
  const w = WEEKS_WORKLOAD;
  const at = Math.max(0, t);
  const ofDay = at % DAY;
  const daily =
    w.basePerMinute +
    (w.peakPerMinute * (1 - Math.cos((2 * Math.PI * (ofDay - w.troughAtMs)) / DAY))) / 2;
  const tournament =
    ofDay >= w.tournament.atMs && ofDay < w.tournament.atMs + w.tournament.durationMs
      ? w.tournament.perMinute
      : 0;
  return (daily + tournament) * calendar(t);
}

/** The scenario a run of `durationMs` simulates: main's cluster and config, its own length. */
export function weeksScenario(name: string, seed: number, durationMs: number): Scenario {
  const { bursts, sessions } = WEEKS_WORKLOAD;
  return {
    ...MAIN_SCENARIO,
    name,
    description: `${Math.round(durationMs / DAY)} days: daily and weekly cycles, growth, a nightly tournament, a weekly patch day, bursts of ${bursts.minSize}-${bursts.maxSize}, log-normal sessions (median ${sessions.medianMs / MINUTE} min)`,
    seed,
    durationMs,
    game: { ...MAIN_SCENARIO.game, minSessionMs: sessions.minMs, maxSessionMs: sessions.maxMs },
    bursts: {
      count: Math.round((bursts.perWeek * durationMs) / WEEK),
      minSize: bursts.minSize,
      maxSize: bursts.maxSize,
    },
    // Room for week 4's weekend peak with every scaler's buffer on top.
    scale: { ...MAIN_SCENARIO.scale, maxNodes: 120 },
  };
}

/** The weeks' sessions for `sc` (made by `weeksScenario`), warm-up included, in arrival order. */
export function weeksArrivals(sc: Scenario): Arrival[] {
  const random = seededRandom(sc.seed);
  const { medianMs, sigma, minMs, maxMs } = WEEKS_WORKLOAD.sessions;
  const length = logNormalLength(medianMs, sigma, minMs, maxMs);
  const out = [
    ...poissonArrivals(
      { fromMs: -sc.warmUpMs, toMs: sc.durationMs, stepMs: sc.stepMs, perMinute: weeksRate },
      length,
      random,
    ),
    ...burstArrivals(
      { ...sc.bursts, spanMs: sc.durationMs - HOUR, withinMs: MINUTE },
      length,
      random,
    ),
  ];
  return out.sort((a, b) => a.atMs - b.atMs);
}

/** A trace that cannot be read, naming the row, the field and the fix. */
export class TraceError extends Error {
  override readonly name = 'TraceError';
}

const HEADER = 'arrival_seconds,session_seconds';

/**
 * The sessions of a trace (see the module comment), in arrival order. `source` names the file
 * in errors.
 */
export function parseTrace(text: string, source: string): Arrival[] {
  const lines = text.split(/\r?\n/);
  const header = lines[0]?.trim();
  if (header !== HEADER) {
    throw new TraceError(
      `${source} line 1: the header is ${JSON.stringify(header ?? '')}; a trace starts with the line ${HEADER}`,
    );
  }
  const out: Arrival[] = [];
  lines.slice(1).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '') return;
    const where = `${source} line ${index + 2}`;
    const fields = line.split(',');
    if (fields.length !== 2) {
      throw new TraceError(
        `${where}: ${JSON.stringify(line)} has ${fields.length} fields; each row is arrival_seconds,session_seconds, e.g. 12.5,900`,
      );
    }
    const [arrival, session] = fields.map((field) => Number(field.trim())) as [number, number];
    if (!Number.isFinite(arrival) || arrival < 0 || arrival * SECOND >= MAX_TRACE_MS) {
      throw new TraceError(
        `${where}: arrival_seconds ${JSON.stringify(fields[0])} is not a number of seconds from 0 to ${MAX_TRACE_MS / SECOND} (four weeks); cut the trace or shift it to start at 0`,
      );
    }
    if (!Number.isFinite(session) || session <= 0) {
      throw new TraceError(
        `${where}: session_seconds ${JSON.stringify(fields[1])} is not a positive number of seconds; give the session's length, e.g. 900`,
      );
    }
    out.push({ atMs: Math.round(arrival * SECOND), sessionMs: Math.round(session * SECOND) });
  });
  if (out.length === 0) {
    throw new TraceError(`${source}: no sessions after the header; one row a game session`);
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}

/** The whole days a trace's arrivals span, at least one. */
export function traceDurationMs(trace: readonly Arrival[]): number {
  const last = trace.at(-1)?.atMs ?? 0;
  return Math.max(1, Math.ceil((last + 1) / DAY)) * DAY;
}

/**
 * The sessions of a simulated game day, by scenario: when each game server is asked for and how
 * long its session lasts. Pure and seeded, so a run replays.
 */
import { type Arrival, exponentialLength, poissonArrivals } from './arrivals.js';

/**
 * The named days `berth sim --scenario` knows: `steady` arrivals, matchmaking `waves`,
 * `node-failure`, a steady day whose fullest node fails 40% of the way through, and
 * `subnet-dry`, a steady day whose subnet other tenants fill from 30% to 60% of the way through,
 * and `agones-fleet`, a steady day of an Agones fleet with a Ready buffer, each session an
 * allocation (sim/fleet-day.ts).
 */
export const SCENARIOS = ['steady', 'waves', 'node-failure', 'subnet-dry', 'agones-fleet'] as const;
/** One of `SCENARIOS`. */
export type Scenario = (typeof SCENARIOS)[number];

/** What a day is made of. */
export interface GameDayOptions {
  readonly scenario: Scenario;
  readonly hours: number;
  /** Sessions started a minute, on average over the day. */
  readonly sessionsPerMinute: number;
  /** Mean session length (exponential, at least a minute). */
  readonly meanSessionMinutes: number;
  readonly random: () => number;
}

const MINUTE_MS = 60_000;

/**
 * How busy minute `m` of the day is, relative to the average: flat for `steady`; for `waves`,
 * matchmaking waves at the top of every quarter hour (three times the average for two minutes)
 * over a quieter base, the same sessions a day.
 */
export function arrivalFactor(scenario: Scenario, minute: number): number {
  if (scenario !== 'waves') return 1;
  // Two minutes at 3 and thirteen at 9/13 average to 1 over each quarter hour.
  return minute % 15 < 2 ? 3 : 9 / 13;
}

/** The day's sessions, in start order: arrivals a minute at the scenario's rate. */
export function gameDay(options: GameDayOptions): Arrival[] {
  const rate = {
    fromMs: 0,
    toMs: Math.round(options.hours * 60) * MINUTE_MS,
    stepMs: MINUTE_MS,
    perMinute: (atMs: number) =>
      options.sessionsPerMinute * arrivalFactor(options.scenario, atMs / MINUTE_MS),
  };
  const length = exponentialLength(options.meanSessionMinutes * MINUTE_MS, MINUTE_MS);
  return poissonArrivals(rate, length, options.random).sort((a, b) => a.atMs - b.atMs);
}

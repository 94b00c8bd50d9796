import { describe, expect, it } from 'vitest';
import { arrivalFactor, gameDay } from '../../sim/game-day.js';
import { seededRandom } from '../../sim/random.js';
import { latencyOf } from '../../sim/run.js';

describe('gameDay', () => {
  it('keeps the average rate in waves: three times it for two minutes a quarter hour, less between', () => {
    const quarter = Array.from({ length: 15 }, (_, minute) => arrivalFactor('waves', minute));
    expect(quarter.reduce((a, b) => a + b, 0)).toBeCloseTo(15, 10);
    expect(quarter.slice(0, 2)).toEqual([3, 3]);
    expect(arrivalFactor('steady', 7)).toBe(1);
  });

  it('replays the same day for the same seed, with about the asked sessions, each at least a minute', () => {
    const day = (seed: number) =>
      gameDay({
        scenario: 'waves',
        hours: 4,
        sessionsPerMinute: 10,
        meanSessionMinutes: 20,
        random: seededRandom(seed),
      });
    expect(day(7)).toEqual(day(7));
    const sessions = day(7);
    expect(sessions.length).toBeGreaterThan(2_200);
    expect(sessions.length).toBeLessThan(2_600);
    for (const session of sessions) expect(session.sessionMs).toBeGreaterThanOrEqual(60_000);
    expect(sessions.map((s) => s.atMs)).toEqual(
      [...sessions.map((s) => s.atMs)].sort((a, b) => a - b),
    );
  });
});

describe('latencyOf', () => {
  it('answers the median, the 99th percentile and the longest, and zeros for none', () => {
    const durations = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(latencyOf(durations)).toEqual({ p50: 51, p99: 100, max: 100 });
    expect(latencyOf([])).toEqual({ p50: 0, p99: 0, max: 0 });
  });
});

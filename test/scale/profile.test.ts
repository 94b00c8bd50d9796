import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_PROFILE,
  forecastRise,
  PROFILE_SLOT_MS,
  WEEK_SLOTS,
  withRise,
} from '../../shared/scale/profile.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const T0 = Date.UTC(2099, 0, 5); // a Monday, 00:00

/** The profile after one pass a minute from `fromMs` to `toMs`, each seeing `riseAt(t)`. */
function passes(fromMs: number, toMs: number, riseAt: (t: number) => number) {
  let profile = EMPTY_PROFILE;
  for (let t = fromMs; t < toMs; t += MINUTE) profile = withRise(profile, t, riseAt(t));
  return profile;
}

describe('the week profile', () => {
  it("forecasts tonight's tournament from last night's, before it starts", () => {
    const tournament = (t: number) =>
      (t - T0) % DAY >= 20 * HOUR && (t - T0) % DAY < 20 * HOUR + 10 * MINUTE ? 30 : 2;
    const profile = passes(T0, T0 + DAY + 19 * HOUR + 50 * MINUTE, tournament);
    const now = T0 + DAY + 19 * HOUR + 50 * MINUTE;
    // Ten minutes ahead reaches 20:00: the rise is held before it comes.
    expect(forecastRise(profile, now, now + 10 * MINUTE)).toBe(30);
    // Earlier in the evening nothing is forecast beyond the day's noise.
    expect(forecastRise(profile, now - HOUR, now - 50 * MINUTE)).toBe(2);
  });

  it("forecasts a weekly rush from last week's, not from yesterday's calm", () => {
    const rush = (t: number) => {
      const ofWeek = (t - T0) % WEEK;
      return ofWeek >= 2 * DAY + 11 * HOUR && ofWeek < 2 * DAY + 12 * HOUR ? 80 : 3;
    };
    const profile = passes(T0, T0 + WEEK + 2 * DAY + 10 * HOUR + 55 * MINUTE, rush);
    const now = T0 + WEEK + 2 * DAY + 10 * HOUR + 55 * MINUTE;
    expect(forecastRise(profile, now, now + 10 * MINUTE)).toBe(80);
    // The day after the rush, yesterday's rise is forecast for the same hour.
    const thursday = T0 + 3 * DAY + 11 * HOUR;
    const afterRush = passes(T0, thursday, rush);
    expect(forecastRise(afterRush, thursday, thursday + 5 * MINUTE)).toBe(80);
  });

  it('keeps the last past occurrence of the slot under way until a later slot files it', () => {
    let profile = passes(T0, T0 + WEEK, () => 5);
    // Last week's 5 stays forecast for this slot while today's is still being measured.
    profile = withRise(profile, T0 + WEEK, 1);
    expect(forecastRise(profile, T0 + WEEK, T0 + WEEK)).toBe(5);
    profile = withRise(profile, T0 + WEEK + PROFILE_SLOT_MS, 1);
    expect(profile.slots.filter((slot) => slot === 1)).toHaveLength(1);
  });

  it('never forecasts more than was seen, and stays a week long (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ gapMs: fc.integer({ min: 1, max: 3 * HOUR }), rise: fc.nat(200) }), {
          maxLength: 200,
        }),
        fc.integer({ min: 0, max: 2 * WEEK }),
        (samples, spanMs) => {
          let profile = EMPTY_PROFILE;
          let t = T0;
          let most = 0;
          for (const { gapMs, rise } of samples) {
            t += gapMs;
            profile = withRise(profile, t, rise);
            most = Math.max(most, rise);
          }
          expect(profile.slots).toHaveLength(WEEK_SLOTS);
          expect(forecastRise(profile, t, t + spanMs)).toBeLessThanOrEqual(most);
        },
      ),
    );
  });
});

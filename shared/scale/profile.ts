/**
 * The week as the scale pass learns it: the largest net rise of game servers (rise.ts) each
 * quarter-hour of the week saw the last time it came, so the buffer can hold what the calendar
 * brings before it comes (a nightly tournament, a patch day's rush) instead of keeping the day's
 * largest rise free all day. A forecast for a span is the largest rise the same quarter-hours saw
 * yesterday and a week ago; what a forecast missed is a surprise, and only surprises are kept as
 * the standing reserve (demand.ts). With nothing learned yet every rise is a surprise, so a
 * cluster's first day keeps its largest rise as before. 672 numbers, a few KB in the scale
 * memory item. Pure.
 */
import type { RiseProfile } from './store.js';

/** One slot of the profile: a quarter of an hour. */
export const PROFILE_SLOT_MS = 15 * 60_000;
const DAY_SLOTS = 96;
/** Slots in a week: the profile's length. */
export const WEEK_SLOTS = 7 * DAY_SLOTS;

/** A profile that has seen nothing. */
export const EMPTY_PROFILE: RiseProfile = { slots: Array<number>(WEEK_SLOTS).fill(0) };

const slotOf = (atMs: number) => Math.floor(atMs / PROFILE_SLOT_MS);
const weekIndex = (slot: number) => ((slot % WEEK_SLOTS) + WEEK_SLOTS) % WEEK_SLOTS;

/**
 * The profile with a rise measured at `atMs`: the slot under way keeps its largest; a new slot
 * first files the one before under its place in the week (so the array always holds the last
 * past occurrence of every slot, the current one's included).
 */
export function withRise(profile: RiseProfile, atMs: number, rise: number): RiseProfile {
  const slot = slotOf(atMs);
  const { current } = profile;
  if (current?.slot === slot) {
    return { ...profile, current: { slot, count: Math.max(current.count, rise) } };
  }
  const slots = [...profile.slots];
  if (current !== undefined && current.slot < slot) slots[weekIndex(current.slot)] = current.count;
  return { slots, current: { slot, count: rise } };
}

/**
 * The largest rise forecast for `[fromMs, toMs]`: what the same slots saw yesterday and a week
 * ago, whichever is larger (a daily event is in yesterday, a weekly one in last week).
 */
export function forecastRise(profile: RiseProfile, fromMs: number, toMs: number): number {
  let most = 0;
  for (let slot = slotOf(fromMs); slot <= slotOf(toMs); slot++) {
    const lastWeek = profile.slots[weekIndex(slot)] ?? 0;
    const yesterday = profile.slots[weekIndex(slot - DAY_SLOTS)] ?? 0;
    most = Math.max(most, lastWeek, yesterday);
  }
  return most;
}

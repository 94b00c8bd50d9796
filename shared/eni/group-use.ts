/**
 * What each node group has needed, learned by the pass: per instance type, the most addresses one
 * node of the type held at once on each of the last days, and in each UTC hour of them. Pure.
 *
 * A pool of a type that needed `peak` addresses on an earlier day of the last week is given a
 * floor of `peak + minIdle`: it grows to the floor in one call when it first grows (a new node
 * gets its group's day in one assign) and is never trimmed below it. This is the VPC CNI's
 * MINIMUM_IP_TARGET, which its guide asks the operator to set per node group "slightly higher
 * than" the pods a node runs (aws/amazon-vpc-cni-k8s `docs/eni-and-ip-target.md`), learned
 * instead of set: a group whose load moves (a new game mode, a smaller instance type) needs no
 * one to retune it, and a week without a peak lets the floor come down.
 *
 * A new pool's first growth goes only as far as its group needed in the same UTC hour (its
 * opening, `openingFor`); the next growth that falls due goes to the floor, in one call. A node
 * that joins in the group's quiet hours then holds the day's peak only from the hour its own
 * pods come near its opening: one call more for that node, and none for a node whose hour needs
 * its whole floor anyway.
 */

import type { DayPeak, GroupUse } from './model.js';

/** Days a peak is remembered: a week, so a weekend's or a patch day's peak counts every week. */
export const GROUP_MEMORY_DAYS = 7;

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** The UTC day of `now` (epoch ms). */
export const dayOf = (now: number): number => Math.floor(now / DAY_MS);

/** The UTC hour of the day of `now` (0–23). */
export const hourOf = (now: number): number => Math.floor((now % DAY_MS) / HOUR_MS);

/** Whether `peak` is still remembered on the day of `now`. */
const remembered = (peak: DayPeak, now: number) => dayOf(now) - peak.day < GROUP_MEMORY_DAYS;

/** Whether `peak` is of a day before the day of `now`, and remembered. */
const earlier = (peak: DayPeak, now: number) => peak.day < dayOf(now) && remembered(peak, now);

/**
 * `use` with today's peaks, and this hour's, raised to what the pass `seen` (the most addresses
 * in use on one node of each type) and forgotten days dropped; `use` itself when nothing changes,
 * so the pass writes only a change.
 */
export function withUse(use: GroupUse, seen: ReadonlyMap<string, number>, now: number): GroupUse {
  const today = dayOf(now);
  const hour = hourOf(now);
  let changed = false;
  const byType: Record<string, readonly DayPeak[]> = {};
  for (const type of new Set([...Object.keys(use.byType), ...seen.keys()])) {
    const days = (use.byType[type] ?? []).filter((peak) => remembered(peak, now));
    if (days.length !== (use.byType[type] ?? []).length) changed = true;
    const inUse = seen.get(type) ?? 0;
    const current = days.find((peak) => peak.day === today);
    const hours = current?.byHour ?? [];
    if (inUse > (current?.inUse ?? 0) || inUse > (hours[hour] ?? 0)) {
      changed = true;
      const byHour = Array.from({ length: 24 }, (_, h) =>
        h === hour ? Math.max(inUse, hours[h] ?? 0) : (hours[h] ?? 0),
      );
      const peak = { day: today, inUse: Math.max(inUse, current?.inUse ?? 0), byHour };
      byType[type] = [...days.filter((p) => p.day !== today), peak];
    } else if (days.length > 0) {
      byType[type] = days;
    }
  }
  return changed ? { byType, version: use.version } : use;
}

/**
 * The most addresses one node of `type` held at once on a remembered day before today; 0 when
 * none is. Today's peak counts from tomorrow: a floor that rose with every pass would rewrite
 * every pool of the group each pass of a busy morning, and chase the day it is meant to foresee.
 */
export function groupPeak(use: GroupUse, type: string, now: number): number {
  return Math.max(
    0,
    ...(use.byType[type] ?? []).filter((peak) => earlier(peak, now)).map((p) => p.inUse),
  );
}

/**
 * The most addresses one node of `type` held at once in the UTC hour of `now` on a remembered day
 * before today; a day recorded without its hours counts its whole peak. 0 when none is.
 */
export function hourPeak(use: GroupUse, type: string, now: number): number {
  const hour = hourOf(now);
  return Math.max(
    0,
    ...(use.byType[type] ?? [])
      .filter((peak) => earlier(peak, now))
      .map((peak) => (peak.byHour ? (peak.byHour[hour] ?? 0) : peak.inUse)),
  );
}

/**
 * A new pool's opening: its group's most in this hour with `minIdle` on top, at most the floor;
 * the floor itself when the hour has nothing learned (an hour the pass never saw foretells no
 * quiet), none without a floor.
 */
export function openingFor(hourPeak: number, floor: number, minIdle: number): number {
  if (floor === 0) return 0;
  return hourPeak === 0 ? floor : Math.min(floor, hourPeak + minIdle);
}

/** A pool's floor from its group's peak: the peak and `minIdle` on top, none without a peak. */
export function floorFor(peak: number, minIdle: number): number {
  return peak === 0 ? 0 : peak + minIdle;
}

/**
 * A subnet found short of /28s or of addresses within this long holds no floors: its other nodes
 * may be waiting for what a floor would hold, so its free space goes to the nodes that need it now.
 */
export const SHORTAGE_MEMORY_MS = 3_600_000;

/**
 * The floor a pool keeps at `now`: its own, unless its subnet was marked short until
 * `shortUntil` (the later of its marks, epoch ms) within SHORTAGE_MEMORY_MS.
 */
export function heldFloor(floor: number | undefined, shortUntil: number, now: number): number {
  return floor && shortUntil + SHORTAGE_MEMORY_MS <= now ? floor : 0;
}

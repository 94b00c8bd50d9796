/**
 * Measured session lengths: what the drain choice and forced node lifetimes need to know about
 * how long an allocated game server will go on. A game server's session is counted from its
 * allocation where the fleet records it (Agones' `agones.dev/last-allocated`: a server may wait
 * Ready for hours first), else from its pod's creation, to the first pass that no longer sees it,
 * for the servers that were allocated when last seen (a ready one ending was moved or scaled down, not played out). The memory follows
 * a bounded sample of allocated servers (`SESSION_TRACKED`), so its size does not grow with the
 * fleet, and keeps the latest `SESSION_SAMPLES` lengths. Pure.
 */
import type { SessionMemory, TrackedSession } from './store.js';

/** When a game server's session began: its allocation when known, else its pod's creation. */
export function sessionStartMs(gs: {
  readonly allocatedAtMs?: number;
  readonly createdAtMs?: number;
}): number | undefined {
  return gs.allocatedAtMs ?? gs.createdAtMs;
}

/** Allocated game servers followed at once; new ones join as followed ones end. */
export const SESSION_TRACKED = 64;
/** Session lengths kept, newest last. */
export const SESSION_SAMPLES = 64;

/** Before any pass. */
export const EMPTY_SESSIONS: SessionMemory = { tracked: {}, lengthsMs: [] };

/** An allocated game server as the measurement reads it. */
export interface LiveSession {
  readonly id: string;
  readonly createdAtMs: number;
}

/**
 * The sessions after a pass that saw `allocated` at `nowMs`: followed servers no longer allocated
 * have ended (their length: creation to the last pass that saw them), and new ones are followed
 * while there is room, oldest first (they end first, so samples come sooner).
 */
export function withSessions(
  memory: SessionMemory,
  allocated: readonly LiveSession[],
  nowMs: number,
): SessionMemory {
  const live = new Map(allocated.map((s) => [s.id, s]));
  const tracked: Record<string, TrackedSession> = {};
  const ended: number[] = [];
  for (const [id, session] of Object.entries(memory.tracked)) {
    if (live.has(id)) tracked[id] = { ...session, lastSeenMs: nowMs };
    else ended.push(Math.max(0, session.lastSeenMs - session.createdAtMs));
  }
  const newcomers = allocated
    .filter((s) => !Object.hasOwn(tracked, s.id))
    .sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
  for (const s of newcomers) {
    if (Object.keys(tracked).length >= SESSION_TRACKED) break;
    tracked[s.id] = { createdAtMs: s.createdAtMs, lastSeenMs: nowMs };
  }
  return { tracked, lengthsMs: [...memory.lengthsMs, ...ended].slice(-SESSION_SAMPLES) };
}

/**
 * Expected time left of a session `ageMs` old: the mean of `length - age` over the measured
 * lengths longer than its age (the mean residual life). A session older than every measured one
 * is an outlier whose end nothing predicts: it is given a whole mean session more. With no
 * measurement at all, `fallbackMs - age` (at least 0).
 */
export function expectedRemainingMs(
  ageMs: number,
  lengthsMs: readonly number[],
  fallbackMs: number,
): number {
  if (lengthsMs.length === 0) return Math.max(0, fallbackMs - ageMs);
  const longer = lengthsMs.filter((length) => length > ageMs);
  const from = longer.length > 0 ? longer.map((length) => length - ageMs) : lengthsMs;
  return from.reduce((sum, ms) => sum + ms, 0) / from.length;
}

/** The longest session to plan for: the longest measured, or `fallbackMs` before any. */
export function longestSessionMs(lengthsMs: readonly number[], fallbackMs: number): number {
  return lengthsMs.length === 0 ? fallbackMs : Math.max(...lengthsMs);
}

/**
 * What the scale pass remembers from one pass to the next, kept in DynamoDB (one item per
 * cluster, `ScaleMemoryStore`) because every Lambda invocation starts blank: when the current
 * surplus was first seen (cordons wait for it to last), the game servers that arrived in each
 * recent pass (the demand buffer's arrival rate) and the busiest passes of the day (its burst
 * reserve), the week's rises by quarter-hour (its forecast, profile.ts), the growth still
 * awaiting its nodes and the provisioning times observed (the buffer's horizon), and the removals
 * of the last hour (the hourly disruption budget). Pure: `rememberPass` folds one pass into the
 * memory.
 */
import { riseHorizonMs } from './demand.js';
import type { ScaleAction, ScalePlan } from './plan.js';
import { EMPTY_PROFILE, forecastRise, withRise } from './profile.js';
import { riseWithin, withPeak } from './rise.js';
import type { ClusterSnapshot } from './snapshot.js';
import type { ScaleMemory } from './store.js';

/** Provisioning times kept: enough to ride out one slow launch, few enough to follow change. */
export const PROVISION_SAMPLES = 5;

const HOUR_MS = 3_600_000;

/**
 * How long the memory keeps arrivals (the demand window, and the longer burst window), and what
 * the horizon of a rise is made of (demand.ts, `riseHorizonMs`).
 */
export interface ArrivalWindows {
  readonly demandWindowMs: number;
  readonly burstWindowMs: number;
  readonly defaultProvisionMs: number;
  readonly reactionMs: number;
}

/**
 * The memory with this pass's arrivals: the game servers created since the last pass (counted
 * from their creation times, so a pod created and gone between two passes is not seen: sessions
 * last minutes, passes one), the passes older than the demand window forgotten, and the burst
 * window's busiest pass kept. The first pass has no earlier one to count from: it sees a level,
 * not arrivals. The level (every game server listed) is sampled too, and its rise within the
 * horizon filed in the week's profile; what of it the profile did not forecast is kept in the
 * burst window's largest rises (rise.ts), the reserve. `level` replaces the count of game servers
 * where the plan reads demand elsewhere: a multi-session fleet's matches (plan.ts,
 * `demandLevel`).
 */
export function withArrivals(
  memory: ScaleMemory,
  gameServerCreatedAtMs: readonly number[],
  nowMs: number,
  windows: ArrivalWindows,
  level: number = gameServerCreatedAtMs.length,
): ScaleMemory {
  const since = memory.lastPassAtMs;
  const arrived =
    since === undefined
      ? undefined
      : { atMs: nowMs, count: gameServerCreatedAtMs.filter((at) => at > since).length };
  const priorPeak =
    memory.burstPeaks.find((entry) => entry.atMs > nowMs - windows.burstWindowMs)?.count ?? 0;
  const peaks = withPeak(memory.burstPeaks, arrived, nowMs, windows.burstWindowMs);
  const levels = memory.levels ?? [];
  const rise = riseWithin(levels, level, nowMs, riseHorizonMs(memory, windows));
  // Only what the week's profile did not forecast stands in the reserve (profile.ts).
  const profile = memory.riseProfile ?? EMPTY_PROFILE;
  const surprise = { atMs: nowMs, count: Math.max(0, rise - forecastRise(profile, nowMs, nowMs)) };
  return {
    ...memory,
    ...(since === undefined ? {} : { previousPassAtMs: since }),
    lastPassAtMs: nowMs,
    arrivals: [...memory.arrivals, ...(arrived ? [arrived] : [])].filter(
      (entry) => entry.atMs > nowMs - windows.demandWindowMs,
    ),
    burstPeaks: peaks,
    priorPeak,
    levels: [...levels, { atMs: nowMs, count: level }].filter(
      (entry) => entry.atMs > nowMs - windows.demandWindowMs,
    ),
    risePeaks: withPeak(memory.risePeaks ?? [], surprise, nowMs, windows.burstWindowMs),
    riseProfile: withRise(profile, nowMs, rise),
  };
}

/** What one pass's plan saw and did, as the memory keeps it. */
export interface PassOutcome {
  readonly nowMs: number;
  /** Ready nodes, and when the last of them became Ready (when the Node says). */
  readonly readyNodes: number;
  readonly lastReadyAtMs?: number;
  /** Whether the plan saw a surplus worth a cordon (before the wait for it to last). */
  readonly surplus: boolean;
  /** The node count growth asked for in this pass, if it grew. */
  readonly grewTo?: number;
  /** Removals this pass started. */
  readonly removalsStarted: number;
}

/**
 * What the memory keeps of a pass: its Ready nodes, whether it saw a surplus, and, of its
 * actions, those `done` (carried out without failure): the growth asked and the removals started.
 */
export function passOutcome(
  snapshot: ClusterSnapshot,
  plan: ScalePlan,
  nowMs: number,
  done: readonly ScaleAction[],
): PassOutcome {
  const ready = snapshot.nodes.filter((node) => node.ready);
  const readyTimes = ready.flatMap((node) =>
    node.readyAtMs === undefined ? [] : [node.readyAtMs],
  );
  const grew = done.find((action) => action.type === 'grow');
  const removed = new Set(
    done.flatMap((action) => (action.type === 'delete' ? [action.node] : [])),
  );
  return {
    nowMs,
    readyNodes: ready.length,
    ...(readyTimes.length > 0 ? { lastReadyAtMs: Math.max(...readyTimes) } : {}),
    surplus: plan.tally.surplus,
    ...(grew?.to !== undefined ? { grewTo: grew.to } : {}),
    removalsStarted: plan.actions.filter(
      (action) => action.type === 'delete' && !action.resume && removed.has(action.node),
    ).length,
  };
}

/** The memory after a pass's plan was carried out. */
export function rememberPass(memory: ScaleMemory, pass: PassOutcome): ScaleMemory {
  const { nowMs } = pass;
  let growth = memory.growth;
  let provisionMs = memory.provisionMs;
  if (growth && pass.readyNodes >= growth.toNodes) {
    const readyAt = Math.min(nowMs, pass.lastReadyAtMs ?? nowMs);
    provisionMs = [...provisionMs, Math.max(0, readyAt - growth.atMs)].slice(-PROVISION_SAMPLES);
    growth = undefined;
  }
  // A newer growth waits for the larger size, timed from its own ask: its nodes are the last to
  // come, and timing them from an earlier ask would add the gap between the asks to every
  // sample (a chain of asks a pass apart, on a steep rise, read 7 minutes for 3).
  if (pass.grewTo !== undefined) {
    growth = { atMs: nowMs, toNodes: pass.grewTo };
  }
  const { surplusSinceMs: _, growth: __, ...rest } = memory;
  return {
    ...rest,
    ...(pass.surplus ? { surplusSinceMs: memory.surplusSinceMs ?? nowMs } : {}),
    ...(growth ? { growth } : {}),
    provisionMs,
    removalsMs: [
      ...memory.removalsMs.filter((at) => at > nowMs - HOUR_MS),
      ...Array.from({ length: pass.removalsStarted }, () => nowMs),
    ],
  };
}

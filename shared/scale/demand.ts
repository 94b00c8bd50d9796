/**
 * The buffer that follows demand. A free slot is worth keeping when a game server will take it
 * before a node asked for now could: between a shortfall being seen (the next pass, or sooner when
 * admissions trigger one: `reactionMs`) and the nodes it asks for being Ready (the provisioning
 * time). What the free slots must absorb in that horizon is the net rise of game servers, not
 * their arrivals: sessions that end give their slots back (rise.ts). So:
 *
 *     buffer = max(bufferGameServers, reserve + forecast, wave)
 *
 * - `forecast`: the largest rise the week's profile (profile.ts) saw yesterday or a week ago in
 *   the quarter-hours from now until nodes asked for now could absorb it (a provisioning time and
 *   a horizon ahead): a nightly tournament or a patch day's rush is held before it comes, and
 *   only around it;
 * - `reserve`: the largest net rise of game servers within one horizon that the burst window
 *   (`scale.demand.burstWindowSeconds`, a day) saw and no forecast did: a streamer's raid comes
 *   in a minute, before any node can be Ready, so its slots are kept for the day it may recur in.
 *   Added to the forecast, not folded into it: a raid can come during a tournament, and a
 *   forecast from a smaller day (growth, a Friday after a Thursday) falls short by what it missed;
 * - `wave`: when the latest pass's arrivals more than double anything the burst window saw before
 *   (and the mean over the demand window, `scale.demand.windowSeconds`), that is a new regime,
 *   not a burst: the buffer covers its rate over a provisioning time and a pass, on top of the
 *   reserve, at once;
 * - the provisioning time is the longest of the last few observed (growth asked → its last node
 *   Ready, per node pool: a pass manages one pool), `scale.demand.provisionSeconds` until one is
 *   observed.
 * Pure. bench/scale.ts measured the choices: the mean arrival rate over a provisioning time and a
 * pass, plus the day's busiest pass, kept 60-90 slots free at the main day's peak where 30-40
 * covered every rise (117 node-hours against 108); the busiest pass alone as the rate kept 15
 * pods waiting on the large fleet's bursts; the mean alone let a 10x wave keep 400 waiting. Over
 * its weeks, the day's largest rise as the reserve kept pods waiting at the tournaments and patch
 * days and nowhere else; the forecast in place of the reserve let random raids through; the
 * forecast on top of the day's surprises kept fewest waiting at fewer node-hours than either.
 */
import { forecastRise } from './profile.js';
import type { ScaleMemory } from './store.js';

/** A pass this many times busier than anything the burst window saw is a wave. */
const WAVE_FACTOR = 2;

/** How the buffer was sized, for the pass's notes and the benchmark. */
export interface DemandBuffer {
  /** Free slots to keep. */
  readonly slots: number;
  /** Game servers a second arriving (the window's mean, or a wave's latest pass). */
  readonly arrivalsPerSecond: number;
  /** The burst window's largest net rise of game servers within one horizon that no forecast saw. */
  readonly riseReserve: number;
  /** The largest rise the week's profile forecasts before nodes asked for now are Ready. */
  readonly forecast: number;
  /** Whether the latest pass was taken for a wave (a new regime) and its rate followed. */
  readonly wave: boolean;
  readonly provisionSeconds: number;
  /** Whether the provisioning time was observed (else the configured one). */
  readonly observed: boolean;
}

/** The settings of the demand buffer. */
export interface DemandPolicy {
  readonly followDemand: boolean;
  readonly bufferSlots: number;
  readonly passIntervalMs: number;
  readonly defaultProvisionMs: number;
  /** How soon a shortfall is acted on: the pass interval, or a triggered pass's (trigger.ts). */
  readonly reactionMs: number;
}

/** The provisioning time to plan for: the longest observed of late, else the configured one. */
export function provisionMsOf(memory: ScaleMemory, defaultProvisionMs: number): number {
  return memory.provisionMs.length > 0 ? Math.max(...memory.provisionMs) : defaultProvisionMs;
}

/** The span a rise is measured over: a provisioning time and the reaction to a shortfall. */
export function riseHorizonMs(
  memory: ScaleMemory,
  policy: Pick<DemandPolicy, 'defaultProvisionMs' | 'reactionMs'>,
): number {
  return provisionMsOf(memory, policy.defaultProvisionMs) + policy.reactionMs;
}

/** The free slots to keep, given what the memory saw. */
export function demandBuffer(memory: ScaleMemory, policy: DemandPolicy): DemandBuffer {
  const provisionMs = provisionMsOf(memory, policy.defaultProvisionMs);
  const counts = memory.arrivals.map((entry) => entry.count);
  const mean =
    counts.length > 0 ? counts.reduce((sum, count) => sum + count, 0) / counts.length : 0;
  const latest = counts.at(-1) ?? 0;
  const wave = latest > WAVE_FACTOR * Math.max(memory.priorPeak ?? 0, mean, 1);
  const arrivalsPerSecond = (wave ? latest : mean) / (policy.passIntervalMs / 1000);
  const riseReserve = memory.risePeaks?.[0]?.count ?? 0;
  // What the week's profile forecasts until nodes asked for at the span's end could be Ready.
  const now = memory.lastPassAtMs ?? 0;
  const forecast = memory.riseProfile
    ? forecastRise(memory.riseProfile, now, now + provisionMs + riseHorizonMs(memory, policy))
    : 0;
  const waveSlots = wave
    ? Math.ceil((arrivalsPerSecond * (provisionMs + policy.passIntervalMs)) / 1000 + riseReserve)
    : 0;
  return {
    slots: policy.followDemand
      ? Math.max(policy.bufferSlots, riseReserve + forecast, waveSlots)
      : policy.bufferSlots,
    arrivalsPerSecond,
    riseReserve,
    forecast,
    wave,
    provisionSeconds: provisionMs / 1000,
    observed: memory.provisionMs.length > 0,
  };
}

/**
 * The buffer that follows demand. A free slot is worth keeping when a game server will arrive
 * before a node asked for now could take it. A shortfall is seen by a pass and filled by nodes
 * that are Ready a provisioning time later, so the slots must cover the arrivals of one pass
 * interval and one provisioning time at the sustained rate, and the day's largest burst on top:
 *
 *     buffer = max(bufferGameServers,
 *                  ceil(rate × (provisioning + pass interval) + max(0, peak − mean)))
 *
 * - `mean`: game servers a pass, averaged over the demand window (`scale.demand.windowSeconds`);
 * - `peak`: the busiest pass of the burst window (`scale.demand.burstWindowSeconds`, a day): a
 *   tournament round or a streamer's raid comes in one minute, before any pass can react, so its
 *   slots are kept for the day it may recur in;
 * - `rate` is the mean, except when the latest pass more than doubles anything the burst window
 *   saw before (and the mean): that is a new regime, a wave, not a burst, and the buffer follows
 *   its rate at once;
 * - the provisioning time is the longest of the last few observed (growth asked → its last node
 *   Ready, per node pool: a pass manages one pool), `scale.demand.provisionSeconds` until one is
 *   observed.
 * Pure. bench/scale.ts measured the choices: the busiest pass alone as the rate kept 15 pods
 * waiting on the large fleet's bursts; the mean alone let a 10× wave keep 400 waiting.
 */
import type { ScaleMemory } from './memory.js';

/** A pass this many times busier than anything the burst window saw is a wave. */
const WAVE_FACTOR = 2;

/** How the buffer was sized, for the pass's notes and the benchmark. */
export interface DemandBuffer {
  /** Free slots to keep. */
  readonly slots: number;
  /** Game servers a second the buffer follows (the window's mean, or a wave's latest pass). */
  readonly arrivalsPerSecond: number;
  /** Slots kept for the day's largest burst, beyond the mean. */
  readonly burstReserve: number;
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
}

/** The free slots to keep, given what the memory saw. */
export function demandBuffer(memory: ScaleMemory, policy: DemandPolicy): DemandBuffer {
  const observed = memory.provisionMs.length > 0;
  const provisionMs = observed ? Math.max(...memory.provisionMs) : policy.defaultProvisionMs;
  const counts = memory.arrivals.map((entry) => entry.count);
  const mean =
    counts.length > 0 ? counts.reduce((sum, count) => sum + count, 0) / counts.length : 0;
  const latest = counts.at(-1) ?? 0;
  const wave = latest > WAVE_FACTOR * Math.max(memory.priorPeak ?? 0, mean, 1);
  const perPass = wave ? latest : mean;
  const arrivalsPerSecond = perPass / (policy.passIntervalMs / 1000);
  const burstReserve = Math.max(0, (memory.burstPeaks[0]?.count ?? 0) - mean);
  const horizonSeconds = (provisionMs + policy.passIntervalMs) / 1000;
  const following = Math.ceil(arrivalsPerSecond * horizonSeconds + burstReserve);
  return {
    slots: policy.followDemand ? Math.max(policy.bufferSlots, following) : policy.bufferSlots,
    arrivalsPerSecond,
    burstReserve,
    wave,
    provisionSeconds: provisionMs / 1000,
    observed,
  };
}

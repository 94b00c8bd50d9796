/**
 * The buffer that follows demand. A free slot is worth keeping when a game server will arrive
 * before a node asked for now could take it. A shortfall is seen by a pass and filled by nodes
 * that are Ready a provisioning time later, so the slots must cover the arrivals of one pass
 * interval (until the next pass sees them) and one provisioning time:
 *
 *     buffer = max(bufferGameServers,
 *                  ceil(arrivals per second × (provisioning seconds + pass interval seconds)))
 *
 * - the arrival rate is the busiest pass of the demand window (`scale.demand.windowSeconds`):
 *   matchmaking comes in waves, and the slots for the next wave must be there before it starts;
 * - the provisioning time is the longest of the last few observed (growth asked → its last node
 *   Ready, per node pool: a pass manages one pool), `scale.demand.provisionSeconds` until one is
 *   observed.
 * Pure.
 */
import type { ScaleMemory } from './memory.js';

/** How the buffer was sized, for the pass's notes and the benchmark. */
export interface DemandBuffer {
  /** Free slots to keep. */
  readonly slots: number;
  /** Game servers a second, at the busiest pass of the window. */
  readonly arrivalsPerSecond: number;
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
  const busiest = Math.max(0, ...memory.arrivals.map((entry) => entry.count));
  const arrivalsPerSecond = busiest / (policy.passIntervalMs / 1000);
  const horizonSeconds = (provisionMs + policy.passIntervalMs) / 1000;
  const following = Math.ceil(arrivalsPerSecond * horizonSeconds);
  return {
    slots: policy.followDemand ? Math.max(policy.bufferSlots, following) : policy.bufferSlots,
    arrivalsPerSecond,
    provisionSeconds: provisionMs / 1000,
    observed,
  };
}

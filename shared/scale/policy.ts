/**
 * The scale pass's policy as data: every threshold and grace period the plan and the loop use,
 * in one typed table apart from the code that applies them.
 */
import type { ScaleConfig } from '../config/schema.js';

/** Thresholds and grace periods of one scale pass. */
export interface ScalePolicy {
  /** CPU requested by one game server: the size of one slot. */
  readonly slotMillis: number;
  /** Free slots to keep (after pending game servers are placed). */
  readonly bufferSlots: number;
  readonly minNodes: number;
  readonly maxNodes: number;
  /** A berth cordon this old, on a node without game servers, lets the node be removed. */
  readonly shutdownDelayMs: number;
  /**
   * A registered node that is not Ready yet, younger than this, is booting: its slots count as
   * capacity that is coming, so growth is not ordered twice. Older and still not Ready, it is
   * broken and counts for nothing.
   */
  readonly bootGraceMs: number;
  /**
   * Scale-down hysteresis: a node is cordoned only while the slots left stay above the buffer by
   * this many new nodes' worth. Growth reacts to a shortfall at once; shrinking waits for a clear
   * surplus, so cordon and uncordon do not chase each other around the buffer.
   */
  readonly cordonHeadroomNodes: number;
  /** Lease lifetime: longer than any pass, short enough that a dead holder blocks one pass. */
  readonly leaseTtlMs: number;
  /** Node and pool calls in flight at once. */
  readonly concurrency: number;
}

/** What the config does not set: named here so they are visible and tested. */
export const SCALE_POLICY_DEFAULTS = {
  /** EKS nodes are usually Ready within 2–4 minutes of registering. */
  bootGraceMs: 10 * 60_000,
  /**
   * Half a node: in bench/scale.ts it turns 78 cordons / 58 uncordons a day into 10 / 1 and 63
   * waiting pods into none, for 4% more node-hours; a whole node costs 6% more again for nothing.
   */
  cordonHeadroomNodes: 0.5,
  /** A pass lists, plans and acts in seconds; two minutes covers slow AWS calls. */
  leaseTtlMs: 2 * 60_000,
  concurrency: 4,
} as const;

/** The policy for a validated `scale` config section. */
export function scalePolicy(
  config: ScaleConfig,
  overrides: Partial<
    Pick<ScalePolicy, 'bootGraceMs' | 'cordonHeadroomNodes' | 'leaseTtlMs' | 'concurrency'>
  > = {},
): ScalePolicy {
  return {
    slotMillis: config.gameServerCpuMillis,
    bufferSlots: config.bufferGameServers,
    minNodes: config.minNodes,
    maxNodes: config.maxNodes,
    shutdownDelayMs: config.shutdownDelaySeconds * 1000,
    ...SCALE_POLICY_DEFAULTS,
    ...overrides,
  };
}

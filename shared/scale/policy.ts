/**
 * The scale pass's policy as data: every threshold and grace period the plan and the loop use,
 * in one typed table apart from the code that applies them.
 */
import type { ScaleConfig } from '../config/schema.js';
import { karpenterNodePoolOf } from '../node-pool/node-pool.js';
import { AGONES_SESSION_READY_LABEL } from '../vocabulary/labels.js';
import { type DrainPolicy, drainPolicy } from './drain.js';

/** Thresholds and grace periods of one scale pass. */
export interface ScalePolicy {
  /** CPU requested by one game server: the size of one slot. */
  readonly slotMillis: number;
  /** Free slots to keep (after pending game servers are placed). */
  readonly bufferSlots: number;
  /**
   * Multi-session servers (`scale.gameState.counter` set): the GameServer label their
   * matchmaker takes an Allocated server with room on only while `"true"`; set `"false"` on the
   * counted servers of a node as it is cordoned, `"true"` as it is uncordoned.
   */
  readonly sessionLabel?: string;
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
   * Scale-down damping by time: a surplus must last this long before a node is cordoned. Growth
   * reacts to a shortfall at once; shrinking waits for the surplus to persist, so cordon and
   * uncordon do not chase each other around the buffer.
   */
  readonly cordonAfterMs: number;
  /**
   * Optional damping by size: a node is cordoned only while the slots left stay above the buffer
   * by this many new nodes' worth. 0 by default: the buffer is what the user set.
   */
  readonly cordonHeadroomNodes: number;
  /** Removals started per pass and per hour: a node count, or a share of the managed nodes. */
  readonly removalsPerPass: NodeBudget;
  readonly removalsPerHour: NodeBudget;
  /**
   * How old a cordon must be before its node is removed, so that every game server admitted for
   * the node before berth's webhooks saw the cordon has committed and is seen by the look at its
   * pods (removal.ts).
   */
  readonly commitWindowMs: number;
  /** The buffer that follows demand (demand.ts). */
  readonly followDemand: boolean;
  readonly demandWindowMs: number;
  readonly burstWindowMs: number;
  readonly defaultProvisionMs: number;
  /** How often the pass runs: the span one pass's arrivals are counted over. */
  readonly passIntervalMs: number;
  /**
   * How soon a shortfall is acted on: the pass interval, or less where admissions trigger a
   * pass (trigger.ts); part of the horizon the demand buffer covers.
   */
  readonly reactionMs: number;
  /**
   * The buffer is held by placeholder pods (placeholders.ts) instead of growth: Karpenter
   * launches the nodes, for the placeholders it cannot place.
   */
  readonly placeholders: boolean;
  /** Lease lifetime: longer than any pass, short enough that a dead holder blocks one pass. */
  readonly leaseTtlMs: number;
  /** Node and pool calls in flight at once. */
  readonly concurrency: number;
  /** Draining by game state: evictions, the drain's cost, forced lifetimes (drain.ts). */
  readonly drain: DrainPolicy;
}

/** A node budget as the config writes it: a count, or `"P%"` of the managed nodes. */
export type NodeBudget = number | string;

/** What the config does not set: named here so they are visible and tested. */
export const SCALE_POLICY_DEFAULTS = {
  /** EKS nodes are usually Ready within 2–4 minutes of registering. */
  bootGraceMs: 10 * 60_000,
  /**
   * Past the webhook timeout (10 s at most) and the binding webhook's node cache (10 s): a
   * binding admitted before the cordon was visible has committed by then. Shorter than the
   * default shutdown delay, so by default the wait costs nothing.
   */
  commitWindowMs: 30_000,
  /** A pass lists, plans and acts in seconds; two minutes covers slow AWS calls. */
  leaseTtlMs: 2 * 60_000,
  concurrency: 4,
} as const;

/**
 * Nodes a budget allows among `managed` nodes: a count as written, a percentage rounded up (so
 * any positive share of a small fleet allows one node, as Karpenter's budgets round).
 */
export function budgetNodes(budget: NodeBudget, managed: number): number {
  if (typeof budget === 'number') return budget;
  return Math.ceil((managed * Number.parseInt(budget, 10)) / 100);
}

/** The policy for a validated `scale` config section. */
export function scalePolicy(
  config: ScaleConfig,
  overrides: Partial<
    Pick<
      ScalePolicy,
      'bootGraceMs' | 'commitWindowMs' | 'leaseTtlMs' | 'concurrency' | 'reactionMs'
    >
  > = {},
): ScalePolicy {
  // A pass interval of 0 (local: timer off) counts arrivals per minute, the AWS schedule's.
  const passIntervalMs = (config.intervalSeconds || 60) * 1000;
  return {
    slotMillis: config.gameServerCpuMillis,
    bufferSlots: config.bufferGameServers,
    minNodes: config.minNodes,
    maxNodes: config.maxNodes,
    shutdownDelayMs: config.shutdownDelaySeconds * 1000,
    cordonAfterMs: config.cordonAfterSeconds * 1000,
    cordonHeadroomNodes: config.cordonHeadroomNodes,
    removalsPerPass: config.disruptionBudget.nodesPerPass,
    removalsPerHour: config.disruptionBudget.nodesPerHour,
    followDemand: config.demand.enabled,
    demandWindowMs: config.demand.windowSeconds * 1000,
    burstWindowMs: config.demand.burstWindowSeconds * 1000,
    defaultProvisionMs: config.demand.provisionSeconds * 1000,
    passIntervalMs,
    reactionMs: passIntervalMs,
    placeholders: karpenterNodePoolOf(config.nodePool) !== undefined,
    drain: drainPolicy(config),
    ...(config.gameState.counter === undefined
      ? {}
      : { sessionLabel: config.gameState.sessionLabel ?? AGONES_SESSION_READY_LABEL }),
    ...SCALE_POLICY_DEFAULTS,
    ...overrides,
  };
}

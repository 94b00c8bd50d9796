/**
 * What draining a node costs, and when a node must start draining. Pure.
 *
 * - Cost: a cordoned node is removed once its last allocated game server ends (its ready ones
 *   are moved: eviction.ts), so the cheapest node to drain has the fewest allocated servers, then
 *   the fewest ready ones to move. A node whose allocated servers are expected to go on far
 *   longer than the other candidates' (from the measured session lengths: sessions.ts) is not
 *   cordoned at all: it would sit cordoned, paid for and useless, while a cheaper one drains.
 * - Forced lifetimes: Karpenter's `expireAfter` (EKS Auto Mode: at most 21 days) deletes a node
 *   at its deadline whatever runs there. A node is cordoned early enough that its longest
 *   expected session ends, and the node is removed, before the deadline; it is never uncordoned
 *   again.
 */
import type { ScaleConfig } from '../config/schema.js';
import type { KarpenterNodePool } from '../k8s/cluster-api.js';
import { expectedRemainingMs, longestSessionMs, sessionStartMs } from './sessions.js';
import type { GameServerView, NodeView } from './snapshot.js';
import type { SessionMemory } from './store.js';

/** The drain's thresholds, from `scale.drain` and `scale.protection`. */
export interface DrainPolicy {
  /** Ready game servers moved per pass; 0 moves none. */
  readonly evictionsPerPass: number;
  /** A node's forced lifetime from its creation; 0 means none. */
  readonly nodeLifetimeMs: number;
  /** The longest session assumed until sessions are measured. */
  readonly longestSessionMs: number;
  /**
   * A candidate whose expected drain time is above this many times the candidates' median
   * (and `costlySlackMs` more) is too costly to cordon.
   */
  readonly costlyFactor: number;
  readonly costlySlackMs: number;
  /** How autoscaler protection follows game state (protection.ts). */
  readonly protection: ScaleConfig['protection'];
  /** Protection patches per pass: a first pass over a large fleet is spread over a few. */
  readonly protectionsPerPass: number;
}

/** What the config does not set: named here so they are visible and tested. */
export const DRAIN_POLICY_DEFAULTS = {
  /** "Far above": three times the median, and ten minutes more, so short sessions never trip it. */
  costlyFactor: 3,
  costlySlackMs: 10 * 60_000,
  protectionsPerPass: 200,
} as const;

/** The drain policy of a validated `scale` section. */
export function drainPolicy(config: ScaleConfig): DrainPolicy {
  return {
    evictionsPerPass: config.drain.evictionsPerPass,
    nodeLifetimeMs: config.drain.nodeLifetimeSeconds * 1000,
    longestSessionMs: config.drain.longestSessionSeconds * 1000,
    protection: config.protection,
    ...DRAIN_POLICY_DEFAULTS,
  };
}

/** Cheapest to drain first: fewest allocated game servers, then fewest ready ones (0 on a tie). */
export function cheapestDrainFirst(a: NodeView, b: NodeView): number {
  return a.allocatedGameServers - b.allocatedGameServers || a.readyGameServers - b.readyGameServers;
}

/**
 * Expected ms until the last allocated game server on each node ends; empty until sessions have
 * been measured (a guess must not keep a node from being cordoned).
 */
export function expectedDrainMs(
  gameServers: readonly GameServerView[],
  sessions: SessionMemory,
  policy: DrainPolicy,
  nowMs: number,
): Map<string, number> {
  const drain = new Map<string, number>();
  if (sessions.lengthsMs.length === 0) return drain;
  for (const gs of gameServers) {
    if (gs.state !== 'allocated' || gs.deleting) continue;
    const startedAtMs = sessionStartMs(gs);
    const age = startedAtMs === undefined ? 0 : Math.max(0, nowMs - startedAtMs);
    const remaining = expectedRemainingMs(age, sessions.lengthsMs, policy.longestSessionMs);
    drain.set(gs.node, Math.max(drain.get(gs.node) ?? 0, remaining));
  }
  return drain;
}

/**
 * The candidates too costly to cordon, with why: those holding allocated game servers whose
 * expected drain is far above the median of the candidates that hold any.
 */
export function costlyDrains(
  candidates: readonly NodeView[],
  drainMs: ReadonlyMap<string, number>,
  policy: DrainPolicy,
): Map<string, string> {
  const busy = candidates
    .filter((n) => n.allocatedGameServers > 0)
    .map((n) => ({ name: n.name, ms: drainMs.get(n.name) ?? 0 }));
  const costly = new Map<string, string>();
  if (busy.length < 2) return costly;
  const sorted = busy.map((b) => b.ms).sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
  const limit = policy.costlyFactor * median + policy.costlySlackMs;
  for (const { name, ms } of busy) {
    if (ms > limit) {
      costly.set(
        name,
        `its allocated game servers are expected to run ${minutes(ms)} more, far above the median ${minutes(median)} of the other candidates: not cordoned`,
      );
    }
  }
  return costly;
}

const GO_DURATION_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * A Go duration (`time.ParseDuration`: `720h`, `1h30m`, `90s`) in ms; undefined for `Never`, an
 * empty text, or one that does not parse.
 */
export function parseGoDuration(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, value, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    ms += Number(value) * (GO_DURATION_UNITS[unit ?? ''] ?? 0);
  }
  return ms;
}

/**
 * The lifetime a Karpenter NodePool gives its nodes (`spec.template.spec.expireAfter`, or v1beta1's
 * `spec.disruption.expireAfter`), in ms; undefined when it has none (`Never`).
 */
export function nodePoolLifetimeMs(pool: KarpenterNodePool | undefined): number | undefined {
  const text = pool?.spec?.template?.spec?.expireAfter ?? pool?.spec?.disruption?.expireAfter;
  return text === undefined ? undefined : parseGoDuration(text);
}

/** The lifetime to plan for: the shorter of the configured one (when set) and the pool's. */
export function withPoolLifetime(policy: DrainPolicy, poolLifetimeMs?: number): DrainPolicy {
  if (poolLifetimeMs === undefined || poolLifetimeMs <= 0) return policy;
  const configured = policy.nodeLifetimeMs;
  return {
    ...policy,
    nodeLifetimeMs: configured > 0 ? Math.min(configured, poolLifetimeMs) : poolLifetimeMs,
  };
}

/** Timing a forced lifetime must leave room for, besides the longest session. */
export interface LifetimeMargins {
  /** The berth cordon must be this old before removal. */
  readonly shutdownDelayMs: number;
  readonly commitWindowMs: number;
  /** One pass sees the node drained, the next may be a pass later. */
  readonly passIntervalMs: number;
}

/**
 * When a node must be cordoned to be drained and removed before its forced deadline; undefined
 * when it has none (no lifetime set, or no creation time).
 */
export function cordonByMs(
  node: NodeView,
  policy: DrainPolicy,
  sessions: SessionMemory,
  margins: LifetimeMargins,
): number | undefined {
  if (policy.nodeLifetimeMs <= 0 || node.createdAtMs === undefined) return undefined;
  const deadline = node.createdAtMs + policy.nodeLifetimeMs;
  const longest = longestSessionMs(sessions.lengthsMs, policy.longestSessionMs);
  return (
    deadline -
    Math.max(longest, margins.shutdownDelayMs, margins.commitWindowMs) -
    2 * margins.passIntervalMs
  );
}

/** The nodes past their cordon-by time, with the reason to print. */
export function expiringNodes(
  nodes: readonly NodeView[],
  policy: DrainPolicy,
  sessions: SessionMemory,
  margins: LifetimeMargins,
  nowMs: number,
): Map<string, string> {
  const expiring = new Map<string, string>();
  for (const node of nodes) {
    const by = cordonByMs(node, policy, sessions, margins);
    if (by === undefined || nowMs < by || node.createdAtMs === undefined) continue;
    const deadline = new Date(node.createdAtMs + policy.nodeLifetimeMs).toISOString();
    expiring.set(
      node.name,
      `forced lifetime: the node is replaced at ${deadline}; cordoned so that its longest expected session (${minutes(longestSessionMs(sessions.lengthsMs, policy.longestSessionMs))}) ends before`,
    );
  }
  return expiring;
}

function minutes(ms: number): string {
  return `${Math.round(ms / 60_000)} min`;
}

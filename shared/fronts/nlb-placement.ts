/**
 * Where a new NLB-fronted game-server port goes: which Network Load Balancer of the pool, and
 * which listener port on it. Pure: the caller reads the pool, claims the answer with conditional
 * writes, and chooses again when a claim loses a race.
 *
 * - A load balancer holds at most `MAX_LISTENERS_PER_NLB` listeners, counting every listener it
 *   has (berth's or not) and the ones this answer adds.
 * - `balanced` puts each port on the load balancer with the fewest listeners (uniformly at random
 *   among the tied), so a pool that starts balanced (listener counts within one of each other)
 *   stays so while no load balancer runs out of listener ports; `fill-first` puts it on the first
 *   load balancer in pool order with room, so later ones stay empty for other uses.
 * - The listener port is drawn uniformly among the range's ports free on that load balancer:
 *   concurrent placements working from the same stale view then rarely pick the same port, and
 *   the loser of a conditional write has a whole range left to choose again from.
 */
import type { PortRange } from '../net/port-range.js';
import { MAX_LISTENERS_PER_NLB } from './elbv2.js';

/** How the pool's load balancers are filled. */
export type PlacementPolicy = 'balanced' | 'fill-first';

/** One load balancer of the pool, as the placement sees it. */
export interface PoolLoadBalancer {
  readonly arn: string;
  /** Every listener it has now, berth's or not. */
  readonly listeners: number;
  /** Listener ports taken on it (any port, in the range or not). */
  readonly takenPorts: ReadonlySet<number>;
}

/** What a placement is asked. */
export interface PlacementRequest {
  /** The pool, in its configured order (fill-first follows it). */
  readonly pool: readonly PoolLoadBalancer[];
  /** The listener ports berth hands out. */
  readonly range: PortRange;
  readonly policy: PlacementPolicy;
  /** Uniform in [0, 1), injected so tests and benchmarks control it. */
  readonly random: () => number;
  /** How many fronted ports the pod asks for (each gets a listener of its own). */
  readonly count: number;
}

/** One listener to create: a load balancer and a port on it. */
export interface ListenerSlot {
  readonly arn: string;
  readonly port: number;
}

/** Every port placed, in the order asked. */
export interface Placed {
  readonly kind: 'placed';
  readonly slots: readonly ListenerSlot[];
}

/** Why one load balancer can take no more listeners. */
export type LoadBalancerFull = 'listener-limit' | 'ports-exhausted';

/**
 * Not every port fits: nothing is placed (a pod gets all its fronts or none). `reason` is
 * `empty-pool` when no load balancer is configured, else what stopped the load balancers:
 * `listener-limit` (each at 50), `ports-exhausted` (each with every range port taken), or `both`.
 */
export interface PoolFull {
  readonly kind: 'pool-full';
  readonly reason: 'empty-pool' | LoadBalancerFull | 'both';
  /** Ports asked for. */
  readonly wanted: number;
  /** How many the pool could have taken. */
  readonly room: number;
  /** Why each load balancer stopped, in pool order. */
  readonly loadBalancers: readonly { readonly arn: string; readonly full: LoadBalancerFull }[];
}

/** What `placeListeners` answers. */
export type Placement = Placed | PoolFull;

/** A load balancer's state while a placement fills it. */
interface Candidate {
  readonly arn: string;
  listeners: number;
  /** The range's ports taken, sorted ascending; this placement's picks are added. */
  readonly taken: number[];
}

function freePorts(candidate: Candidate, range: PortRange): number {
  return range.size - candidate.taken.length;
}

function fullness(candidate: Candidate, range: PortRange): LoadBalancerFull | undefined {
  if (candidate.listeners >= MAX_LISTENERS_PER_NLB) return 'listener-limit';
  if (freePorts(candidate, range) <= 0) return 'ports-exhausted';
  return undefined;
}

function randomIndex(random: () => number, length: number): number {
  // Clamp: a source returning exactly 1 must not index past the end.
  return Math.min(length - 1, Math.floor(random() * length));
}

/** The k-th (from 0) free port of the range, skipping the sorted taken ones: one draw, no retry. */
function nthFreePort(range: PortRange, taken: readonly number[], k: number): number {
  let port = range.base + k;
  for (const t of taken) {
    if (t > port) break;
    port++;
  }
  return port;
}

function insertSorted(sorted: number[], value: number): void {
  let i = sorted.length;
  while (i > 0 && (sorted[i - 1] ?? 0) > value) i--;
  sorted.splice(i, 0, value);
}

/**
 * One candidate per ARN, in pool order: a load balancer listed twice (a stale view merged with a
 * fresh one) must not be handed the same port twice, so its two views merge, the busier count kept.
 */
function candidatesOf(pool: readonly PoolLoadBalancer[], range: PortRange): Candidate[] {
  const last = range.base + range.size - 1;
  const byArn = new Map<string, { listeners: number; taken: Set<number> }>();
  for (const lb of pool) {
    const seen = byArn.get(lb.arn) ?? { listeners: 0, taken: new Set<number>() };
    seen.listeners = Math.max(seen.listeners, lb.listeners);
    for (const port of lb.takenPorts) if (port >= range.base && port <= last) seen.taken.add(port);
    byArn.set(lb.arn, seen);
  }
  return [...byArn].map(([arn, seen]) => ({
    arn,
    listeners: seen.listeners,
    taken: [...seen.taken].sort((a, b) => a - b),
  }));
}

function choose(
  candidates: readonly Candidate[],
  policy: PlacementPolicy,
  random: () => number,
  range: PortRange,
): Candidate | undefined {
  const open = candidates.filter((c) => fullness(c, range) === undefined);
  if (policy === 'fill-first') return open[0];
  const fewest = Math.min(...open.map((c) => c.listeners));
  const tied = open.filter((c) => c.listeners === fewest);
  return tied.length === 0 ? undefined : tied[randomIndex(random, tied.length)];
}

/**
 * Places `count` listeners on the pool: every port placed, or none and why. Never past
 * `MAX_LISTENERS_PER_NLB` on a load balancer counting the new listeners, never a taken port, never
 * one (load balancer, port) twice. Throws a RangeError for a count that is not a whole number.
 */
export function placeListeners(request: PlacementRequest): Placement {
  const { pool, range, policy, random, count } = request;
  if (!Number.isInteger(count) || count < 0) {
    throw new RangeError(`a pod asks for a whole number of fronted ports, not ${count}`);
  }
  const candidates = candidatesOf(pool, range);
  const slots: ListenerSlot[] = [];
  while (slots.length < count) {
    const candidate = choose(candidates, policy, random, range);
    if (candidate === undefined) break;
    const port = nthFreePort(
      range,
      candidate.taken,
      randomIndex(random, freePorts(candidate, range)),
    );
    insertSorted(candidate.taken, port);
    candidate.listeners++;
    slots.push({ arn: candidate.arn, port });
  }
  if (slots.length === count) return { kind: 'placed', slots };
  const loadBalancers = candidates.map((c) => ({
    arn: c.arn,
    full: fullness(c, range) ?? 'listener-limit',
  }));
  const reasons = new Set(loadBalancers.map((lb) => lb.full));
  return {
    kind: 'pool-full',
    reason:
      loadBalancers.length === 0
        ? 'empty-pool'
        : reasons.size === 2
          ? 'both'
          : (loadBalancers[0]?.full ?? 'listener-limit'),
    wanted: count,
    room: slots.length,
    loadBalancers,
  };
}

/** One line for an event or a log saying why the pool had no room. */
export function describePoolFull(full: PoolFull): string {
  const { wanted, room } = full;
  const asked = `${wanted} NLB listener${wanted === 1 ? '' : 's'} asked, room for ${room}`;
  switch (full.reason) {
    case 'empty-pool':
      return `${asked}: no Network Load Balancer in the pool; add one to fronts.nlb.loadBalancers`;
    case 'listener-limit':
      return `${asked}: every Network Load Balancer of the pool has ${MAX_LISTENERS_PER_NLB} listeners (the AWS limit); add a load balancer to fronts.nlb.loadBalancers`;
    case 'ports-exhausted':
      return `${asked}: every port of fronts.nlb.listenerPorts is taken on each Network Load Balancer; widen the range`;
    case 'both':
      return `${asked}: each Network Load Balancer of the pool has ${MAX_LISTENERS_PER_NLB} listeners or every port of fronts.nlb.listenerPorts taken; add a load balancer`;
  }
}

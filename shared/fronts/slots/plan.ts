/**
 * What the fronts pass does to the slot chains this time, from what it read: which chains let
 * go of a node that is gone, which free chains go to a node's host port, which new chains to
 * claim when no free one is left, and which were left half-way by a pass that stopped. Pure.
 *
 * The first rule, here: a chain leaves a node's host port only once the node is gone from the
 * API (or has another address) and no live pod holds that host port there, so a game server
 * still answering behind it keeps its players; and it serves its next node only after its
 * target was deregistered (the pass does that between `release` and the next `assign`).
 */
import type { PortRange } from '../../net/port-range.js';
import { type PlacementPolicy, type PoolLoadBalancer, placeListeners } from '../nlb-placement.js';
import type { ListenerSlot } from '../work.js';
import type { SlotChain } from './store.js';

/** A game node as the pass read it. */
export interface SlotNode {
  readonly name: string;
  /** Its InternalIP; a node without one gets no chain (no target can reach it). */
  readonly address: string | undefined;
  readonly ready: boolean;
  /** Epoch ms its `Ready` condition last changed, when it says. */
  readonly readySince?: number;
}

/** Where a chain goes: a node's host port. */
export interface SlotSeat {
  readonly node: string;
  readonly address: string;
  readonly hostPort: number;
}

/** What the plan is made from. */
export interface SlotPlanInput {
  /** The game nodes in the API now. */
  readonly nodes: readonly SlotNode[];
  readonly chains: readonly SlotChain[];
  /** The host ports of `fronts.nlb.range`: every one is a slot on each game node. */
  readonly hostPorts: readonly number[];
  /** `<node>#<host port>` of every host port a live pod holds. */
  readonly heldHostPorts: ReadonlySet<string>;
  /** The pool, with every listener port taken on each (chains and foreign listeners alike). */
  readonly pool: readonly PoolLoadBalancer[];
  readonly listenerPorts: PortRange;
  readonly placement: PlacementPolicy;
  readonly random: () => number;
  /**
   * Free chains kept made beyond the seats (the pass keeps one node's seats), so a node that
   * joins needs only its registrations: its chains serve one registration delay after it joins.
   */
  readonly spare: number;
}

/** What the pass does. */
export interface SlotPlan {
  /** Chains whose node is gone: deregister the target, then free the chain. */
  readonly release: readonly SlotChain[];
  /**
   * Free chains given to a seat: register the seat's target behind each. A chain released or
   * left releasing is given out only after its deregistration in this pass.
   */
  readonly assign: readonly { readonly chain: SlotChain; readonly seat: SlotSeat }[];
  /**
   * New chains to claim, then make and register: for a seat each, then spares (no seat) until
   * `spare` chains are free.
   */
  readonly create: readonly { readonly slot: ListenerSlot; readonly seat?: SlotSeat }[];
  /** Chains a stopped pass left half-way: made, registered or deregistered now. */
  readonly unfinished: readonly SlotChain[];
  /** Seats left without a chain: the pool has no room (add a load balancer). */
  readonly unseated: number;
}

const seatKey = (node: string, hostPort: number) => `${node}#${hostPort}`;

/** The plan for one pass. */
export function planSlots(input: SlotPlanInput): SlotPlan {
  const nodes = new Map(input.nodes.map((node) => [node.name, node]));
  const release: SlotChain[] = [];
  const unfinished: SlotChain[] = [];
  const free: SlotChain[] = [];
  /** Chains free once this pass has deregistered their target: given out after the free ones. */
  const freeing: SlotChain[] = [];
  const seated = new Set<string>();
  for (const chain of input.chains) {
    const { holder } = chain;
    if (holder === undefined) {
      // Claimed chains are claimed for a seat; one without is free once made.
      if (chain.madeAt !== undefined) free.push(chain);
      else unfinished.push(chain);
      continue;
    }
    if (holder.releasingAt !== undefined) {
      unfinished.push(chain);
      if (chain.madeAt !== undefined) freeing.push(chain);
      continue;
    }
    const node = nodes.get(holder.node);
    const gone = node === undefined || node.address !== holder.address;
    if (gone && !input.heldHostPorts.has(seatKey(holder.node, holder.hostPort))) {
      release.push(chain);
      if (chain.madeAt !== undefined) freeing.push(chain);
      continue;
    }
    seated.add(seatKey(holder.node, holder.hostPort));
    if (chain.madeAt === undefined || holder.registeredAt === undefined) unfinished.push(chain);
  }

  // Ready nodes first, the longest Ready first: they already run game servers, or soon will.
  const order = [...input.nodes]
    .filter((node) => node.address !== undefined)
    .sort(
      (a, b) =>
        Number(b.ready) - Number(a.ready) ||
        (a.readySince ?? Number.POSITIVE_INFINITY) - (b.readySince ?? Number.POSITIVE_INFINITY) ||
        a.name.localeCompare(b.name),
    );
  const hostPorts = [...input.hostPorts].sort((a, b) => a - b);
  const seats: SlotSeat[] = [];
  for (const node of order) {
    for (const hostPort of hostPorts) {
      if (!seated.has(seatKey(node.name, hostPort))) {
        seats.push({ node: node.name, address: node.address ?? '', hostPort });
      }
    }
  }
  const reusable = [...free, ...freeing];
  const assign = reusable.slice(0, seats.length).flatMap((chain, i) => {
    const seat = seats[i];
    return seat === undefined ? [] : [{ chain, seat }];
  });
  const wanting = seats.slice(reusable.length);
  // Spares only once every seat has a chain: a seat waiting always goes first.
  const leftFree = Math.max(0, reusable.length - seats.length);
  const spares = wanting.length > 0 ? 0 : Math.max(0, input.spare - leftFree);
  const placed = placeAll(input, wanting.length + spares);
  const create = placed.map((slot, i) => {
    const seat = wanting[i];
    return seat === undefined ? { slot } : { slot, seat };
  });
  return {
    release,
    assign,
    create,
    unfinished,
    unseated: Math.max(0, wanting.length - placed.length),
  };
}

/** As many of `count` new listeners as the pool has room for. */
function placeAll(input: SlotPlanInput, count: number): ListenerSlot[] {
  if (count === 0) return [];
  const request = {
    pool: input.pool,
    range: input.listenerPorts,
    policy: input.placement,
    random: input.random,
  };
  let placement = placeListeners({ ...request, count });
  if (placement.kind === 'pool-full')
    placement = placeListeners({ ...request, count: placement.room });
  if (placement.kind === 'pool-full') return [];
  return placement.slots.map((s) => ({ loadBalancerArn: s.arn, port: s.port }));
}

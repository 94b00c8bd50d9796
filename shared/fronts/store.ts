/**
 * What berth keeps about public fronts, wherever it is kept (DynamoDB in AWS and locally, memory
 * in tests and the benchmark):
 * - listener slots: a (Network Load Balancer, listener port) is an exclusive value, claimed at
 *   the pod's CREATE admission and freed only once the pod is gone (the settle rules); at most
 *   `MAX_LISTENERS_PER_NLB` claimed per load balancer, enforced by the store's conditional write;
 * - the pool's members added at runtime, beside the config's;
 * - per endpoint subnet of the accelerator: its port mappings (read once, kept), the destinations
 *   live game servers want, and the destinations berth has allowed.
 */
import type { PortProtocol } from '../hostports/model.js';
import type { ListenerSlot } from './work.js';

/** Who holds a front value: the pod's allocation id and its name where known. */
export interface FrontOwner {
  readonly allocationId: string;
  readonly namespace: string;
  /** Empty until berth learns it (a pod created with generateName). */
  readonly pod: string;
}

/** One claimed listener slot and where its making stands. */
export interface ListenerSlotRecord {
  readonly slot: ListenerSlot;
  readonly owner: FrontOwner;
  /** The port's name in `berth.dev/ports`. */
  readonly portName: string;
  readonly protocol: PortProtocol;
  /** Epoch ms of the claim. */
  readonly claimedAt: number;
  /** `claimed` at CREATE; `bound` once its listener forwards to the game server. */
  readonly state: 'claimed' | 'bound';
  /** The target behind the listener, once bound. */
  readonly target?: { readonly ip: string; readonly port: number };
  /** Epoch ms the listener was in place, once bound. */
  readonly boundAt?: number;
  /**
   * Epoch ms its target was first seen healthy: the load balancer sends players to it. A bound
   * listener does not route yet: its target serves only once its registration completes.
   */
  readonly servingAt?: number;
  /**
   * Until when (epoch ms) a bind may be making the slot's listener: set before its
   * CreateListener, cleared when it is marked bound. The slot is not freed meanwhile.
   */
  readonly makingUntil?: number;
}

/**
 * How long a bind that began making a listener may still be calling ELBv2: longer than the fronts
 * function's 90-second timeout (`infra/berth-stack.ts`) and than an in-process worker's budget
 * waits, so that once it has passed, no listener of that bind can still appear.
 */
export const MAKING_LEASE_MS = 5 * 60_000;

/**
 * What freeing a slot found: freed now, not (or no longer) the owner's, or a bind still making
 * its listener (within its lease): freed later, once the listener can be taken down for good.
 */
export type SlotFree = 'freed' | 'not-held' | 'making';

/** A destination of the accelerator: an address and port of an endpoint subnet. */
export interface DestinationCell {
  readonly subnetId: string;
  readonly address: string;
  readonly port: number;
}

/** A destination a live game server wants. */
export interface WantedDestination extends DestinationCell {
  readonly owner: FrontOwner;
  /** Epoch ms it was wanted. */
  readonly wantedAt: number;
}

/** One subnet's destinations as berth knows them. */
export interface SubnetDestinations {
  readonly wanted: readonly WantedDestination[];
  /** Per address, the ports berth has allowed. */
  readonly allowed: ReadonlyMap<string, ReadonlySet<number>>;
}

/** The store. Every write is conditional where two writers could disagree. */
export interface FrontStore {
  /** Every slot of the cluster, across the pool. */
  listSlots(): Promise<ListenerSlotRecord[]>;
  /**
   * Claims every slot or none: fails `ListenerSlotTakenError` when one is held, and
   * `LoadBalancerFullError` when a load balancer would pass its listener limit.
   */
  claimSlots(records: readonly ListenerSlotRecord[]): Promise<void>;
  /**
   * Marks the owner's slot as having its listener made until `until` (`makingUntil`); false when
   * the slot is no longer the owner's, and no listener may be made for it.
   */
  beginMaking(slot: ListenerSlot, allocationId: string, until: number): Promise<boolean>;
  /**
   * Records the listener in place, and the making done; false when the slot is no longer the
   * owner's.
   */
  markBound(
    slot: ListenerSlot,
    allocationId: string,
    bound: {
      readonly target: { ip: string; port: number };
      readonly boundAt: number;
      readonly pod: string;
    },
  ): Promise<boolean>;
  /**
   * Records the bound slot's target serving since `at`; false when the slot is no longer the
   * owner's or not bound.
   */
  markServing(slot: ListenerSlot, allocationId: string, at: number): Promise<boolean>;
  /**
   * Frees the slot if the owner still holds it and no bind is making its listener at `now`;
   * answers which of the three it found.
   */
  freeSlot(slot: ListenerSlot, allocationId: string, now: number): Promise<SlotFree>;

  /** Load balancers added to the pool at runtime (the config's are not listed). */
  listPoolAdditions(): Promise<string[]>;
  addToPool(loadBalancerArn: string): Promise<void>;

  /** The subnet's port mappings as kept, or undefined before the first read. */
  getMappings(subnetId: string): Promise<string | undefined>;
  putMappings(subnetId: string, encoded: string): Promise<void>;
  /**
   * Records destinations live game servers want. The same owner's repeated want changes nothing;
   * another owner's takes the cell over, since a node's host port is bound to a new pod only
   * once its previous pod is gone.
   */
  want(destinations: readonly WantedDestination[]): Promise<void>;
  /** Forgets what the owner wanted; a cell another owner now wants is left alone. */
  unwant(allocationId: string, cells: readonly DestinationCell[]): Promise<void>;
  listDestinations(subnetId: string): Promise<SubnetDestinations>;
  /** Every subnet that has a wanted or an allowed destination. */
  listDestinationSubnets(): Promise<string[]>;
  recordAllowed(subnetId: string, address: string, ports: readonly number[]): Promise<void>;
  /** Records the address denied whole (every port of the range). */
  recordDenied(subnetId: string, address: string): Promise<void>;
}

/**
 * NLB slot chains (`fronts.nlb.mode: slots`): a listener on one of the pool's Network Load
 * Balancers, forwarding to a target group of its own whose one target is a game node's host port
 * of `fronts.nlb.range`. A host port on a node has at most one live holder (kube-scheduler's
 * NodePorts filter and the kubelet refuse a second), so a public port bound to (node address,
 * host port) leads to one live game server at most, whoever binds there: a binding is told the
 * chain's address with no ELB call, and no call is made when game servers come and go.
 *
 * A chain is made once (CreateTargetGroup, CreateListener) and kept: when its node goes, its
 * target is deregistered and the chain waits for the next node, which costs one RegisterTargets.
 * So a slot costs two ELB calls a node lifetime (register, deregister) once the pool is warm,
 * and listeners and target groups have no hourly price of their own (the load balancer has).
 */
import { createHash } from 'node:crypto';
import type { ListenerSlot } from '../work.js';

/** The node's host port behind a chain. */
export interface ChainHolder {
  readonly node: string;
  /** The node's InternalIP: the target's address. */
  readonly address: string;
  readonly hostPort: number;
  /** Epoch ms the chain was given to the node. */
  readonly assignedAt: number;
  /** Epoch ms RegisterTargets answered for it. */
  readonly registeredAt?: number;
  /** Epoch ms its target was first seen healthy: players reach the node's host port. */
  readonly servingAt?: number;
  /**
   * Epoch ms its node was found gone: the target is being deregistered, and the chain is told to
   * no binding from then on.
   */
  readonly releasingAt?: number;
}

/** One chain as the store keeps it. */
export interface SlotChain {
  readonly slot: ListenerSlot;
  /** Epoch ms the slot was claimed for the chain, before any ELB call. */
  readonly claimedAt: number;
  /** Epoch ms its target group and listener were both in place. */
  readonly madeAt?: number;
  /** Its target group, once made (set with `madeAt`). */
  readonly targetGroupArn?: string;
  /** The node's host port behind it, while it has one. */
  readonly holder?: ChainHolder;
  /** 1 when claimed, one more with every write: each write is conditioned on the one read. */
  readonly version: number;
}

/** The store of chains. Every write is conditioned on the version the writer read. */
export interface SlotChainStore {
  /** Every chain of the cluster. */
  listChains(): Promise<SlotChain[]>;
  /** The chain whose holder is the node's host port, if any: a binding's one read. */
  chainAt(node: string, hostPort: number): Promise<SlotChain | undefined>;
  /**
   * Writes `next` (its version one more than `previous`'s) if the chain is still as `previous`
   * (absent when undefined); false when another writer got there first, or when `next`'s holder
   * is another chain's already (one chain per node's host port).
   */
  write(previous: SlotChain | undefined, next: SlotChain): Promise<boolean>;
}

/** The next version of `chain` with `change` applied: what `write` is given. */
export function revised(chain: SlotChain, change: Partial<Omit<SlotChain, 'version'>>): SlotChain {
  return { ...chain, ...change, version: chain.version + 1 };
}

/** `<load balancer ARN>#<port>`: a chain's key among the pool's listeners. */
export function slotKey(slot: ListenerSlot): string {
  return `${slot.loadBalancerArn}#${slot.port}`;
}

/**
 * The chain's target group name: `berth-s` and 25 hex digits of the slot's hash (32 characters,
 * the limit), so a pass that crashed after CreateTargetGroup finds the one it made, and the
 * names never meet a game server's (`berth-` and 26 digits).
 */
export function chainGroupName(cluster: string, slot: ListenerSlot): string {
  const digest = createHash('sha256')
    .update(`${cluster}/chain/${slotKey(slot)}`)
    .digest('hex');
  return `berth-s${digest.slice(0, 25)}`;
}

/** Whether the chain may be told to a binding on `node` at `address`: made, held, not leaving. */
export function servesNode(
  chain: SlotChain | undefined,
  node: string,
  address: string,
): chain is SlotChain & { readonly holder: ChainHolder } {
  const holder = chain?.holder;
  return (
    chain?.madeAt !== undefined &&
    holder !== undefined &&
    holder.node === node &&
    holder.address === address &&
    holder.releasingAt === undefined
  );
}

/** How many chains serve each node (made, its target healthy, not leaving), by node name. */
export function servingSeatsByNode(chains: readonly SlotChain[]): Map<string, number> {
  const serving = new Map<string, number>();
  for (const { holder } of chains) {
    if (holder?.servingAt === undefined || holder.releasingAt !== undefined) continue;
    serving.set(holder.node, (serving.get(holder.node) ?? 0) + 1);
  }
  return serving;
}

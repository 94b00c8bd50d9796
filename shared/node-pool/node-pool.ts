/**
 * The node pool berth grows and shrinks, behind the few calls the scale pass makes (the Karpenter
 * `CloudProvider` shape, cut down). One adapter per `scale.nodePool.type`.
 */
import type { NodePoolConfig } from '../config/schema.js';

/** The pool's size as its cloud API reports it; absent fields are unknown (none, Karpenter). */
export interface PoolState {
  readonly desiredSize?: number;
  readonly minSize?: number;
  readonly maxSize?: number;
}

/** What a pool call did, or, when `applied` is false, what it would have asked for and why not. */
export interface PoolChange {
  readonly applied: boolean;
  readonly description: string;
}

/** The node whose instance is to go. */
export interface PoolNode {
  readonly name: string;
  /** `spec.providerID`, e.g. `aws:///us-east-1a/i-0abc`. */
  readonly providerId?: string;
}

/** Grows the pool and releases the instance behind a chosen node. */
export interface NodePool {
  readonly type: NodePoolConfig['type'];
  /** Reads the pool's current size. */
  describe(): Promise<PoolState>;
  /** Asks for `size` nodes in all; never shrinks the pool (a smaller size is a no-op). */
  growTo(size: number): Promise<PoolChange>;
  /**
   * Terminates the instance behind `node` and lowers the desired size by one, so it is not
   * replaced. Idempotent: an instance already terminating or gone is success.
   */
  releaseInstance(node: PoolNode): Promise<PoolChange>;
}

/**
 * Whether the scale pass deletes a drained node's Node object with this pool: every type but
 * `none`, which cordons and uncordons only and reports the removals it would make.
 */
export function deletesNodes(pool: Pick<NodePool, 'type'>): boolean {
  return pool.type !== 'none';
}

/**
 * The Karpenter NodePool that launches the pool's nodes: node pool `karpenter`'s, or the EKS Auto
 * Mode NodePool of `auto-mode` (Auto Mode runs Karpenter itself). Undefined for the others. Where
 * Karpenter launches the nodes, berth keeps the buffer with placeholder pods and reads the
 * NodePool's node lifetime.
 */
export function karpenterNodePoolOf(config: NodePoolConfig): string | undefined {
  return config.type === 'karpenter' || config.type === 'auto-mode' ? config.name : undefined;
}

/**
 * The `karpenter` pool. Karpenter launches nodes for pending pods on its own, and terminates a
 * node's instance when the Node object is deleted (its finalizer), so both calls here only say
 * so: the scale pass deleting the Node is the whole removal.
 */
import type { NodePool, PoolChange, PoolNode, PoolState } from './node-pool.js';

/** `NodePool` for a Karpenter NodePool. */
export class KarpenterNodePool implements NodePool {
  readonly type = 'karpenter';
  readonly #name: string;

  constructor(name: string) {
    this.#name = name;
  }

  async describe(): Promise<PoolState> {
    return {};
  }

  async growTo(size: number): Promise<PoolChange> {
    return {
      applied: false,
      description: `Karpenter NodePool ${this.#name} launches nodes for pending pods itself; berth does not ask for ${size}`,
    };
  }

  async releaseInstance(node: PoolNode): Promise<PoolChange> {
    return {
      applied: false,
      description: `Karpenter terminates the instance of ${node.name} once its Node object is deleted`,
    };
  }
}

/**
 * The `karpenter` and `auto-mode` pools. Karpenter launches nodes for pending pods on its own, and
 * terminates a node's instance when the Node object is deleted (its finalizer), so both calls here
 * only say so: the scale pass deleting the Node is the whole removal.
 */
import type { NodePool, PoolChange, PoolNode, PoolState } from './node-pool.js';

/**
 * `NodePool` for a Karpenter NodePool: a self-managed Karpenter's (`karpenter`), or one of EKS
 * Auto Mode's (`auto-mode`), whose Karpenter AWS runs and which behaves the same to berth.
 */
export class KarpenterNodePool implements NodePool {
  readonly type: 'karpenter' | 'auto-mode';
  readonly #name: string;

  constructor(name: string, type: 'karpenter' | 'auto-mode' = 'karpenter') {
    this.#name = name;
    this.type = type;
  }

  get #who(): string {
    return this.type === 'auto-mode' ? 'EKS Auto Mode' : 'Karpenter';
  }

  async describe(): Promise<PoolState> {
    return {};
  }

  async growTo(size: number): Promise<PoolChange> {
    return {
      applied: false,
      description: `${this.#who} NodePool ${this.#name} launches nodes for pending pods itself; berth does not ask for ${size}`,
    };
  }

  async releaseInstance(node: PoolNode): Promise<PoolChange> {
    return {
      applied: false,
      description: `${this.#who} terminates the instance of ${node.name} once its Node object is deleted`,
    };
  }
}

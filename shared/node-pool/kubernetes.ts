/**
 * The `kubernetes` pool: berth deletes the Node objects of the drained nodes it cordoned, and
 * something else (a cloud's own node lifecycle, an operator, a person) reclaims the machines and
 * provides new ones. Both pool calls only say so.
 */
import type { NodePool, PoolChange, PoolNode, PoolState } from './node-pool.js';

/** `NodePool` whose removals end with the Node object. */
export class KubernetesNodePool implements NodePool {
  readonly type = 'kubernetes';

  async describe(): Promise<PoolState> {
    return {};
  }

  async growTo(size: number): Promise<PoolChange> {
    return {
      applied: false,
      description: `node pool kubernetes: would ask for ${size} node(s); whatever provides this cluster's machines adds them`,
    };
  }

  async releaseInstance(node: PoolNode): Promise<PoolChange> {
    return {
      applied: false,
      description: `node pool kubernetes: the machine of ${node.name} is left to whatever reclaims it`,
    };
  }
}

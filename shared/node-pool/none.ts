/**
 * The `none` pool, the default: berth cordons and uncordons nodes only, and reports the removals
 * and instance changes it would have made (it never deletes a Node: `deletesNodes`).
 */
import type { NodePool, PoolChange, PoolNode, PoolState } from './node-pool.js';
import { instanceIdOf } from './provider-id.js';

/** `NodePool` that changes nothing outside Kubernetes. */
export class NoNodePool implements NodePool {
  readonly type = 'none';

  async describe(): Promise<PoolState> {
    return {};
  }

  async growTo(size: number): Promise<PoolChange> {
    return { applied: false, description: `node pool none: would ask for ${size} node(s)` };
  }

  async releaseInstance(node: PoolNode): Promise<PoolChange> {
    const instance = instanceIdOf(node.providerId);
    return {
      applied: false,
      description: `node pool none: would terminate ${instance ? `instance ${instance}` : `the instance of ${node.name}`} and decrement the desired size`,
    };
  }
}

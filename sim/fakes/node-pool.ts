/** The in-memory `NodePool` of the scale pass tests and the benches that run a scale pass. */
import type {
  NodePool,
  PoolChange,
  PoolNode,
  PoolState,
} from '../../shared/node-pool/node-pool.js';

/** One recorded pool call. */
export type PoolCall =
  | { readonly method: 'describe' }
  | { readonly method: 'growTo'; readonly size: number }
  | { readonly method: 'releaseInstance'; readonly node: PoolNode };

/** A pool with a desired size; instances are released by name, failures injectable. */
export class FakeNodePool implements NodePool {
  readonly type = 'asg';
  readonly calls: PoolCall[] = [];
  readonly released = new Set<string>();
  readonly failures: Partial<Record<'growTo' | 'releaseInstance', Error[]>> = {};
  desiredSize: number | undefined;

  constructor(desiredSize?: number) {
    this.desiredSize = desiredSize;
  }

  #fail(method: 'growTo' | 'releaseInstance'): void {
    const error = this.failures[method]?.shift();
    if (error) throw error;
  }

  async describe(): Promise<PoolState> {
    this.calls.push({ method: 'describe' });
    return this.desiredSize === undefined ? {} : { desiredSize: this.desiredSize };
  }

  async growTo(size: number): Promise<PoolChange> {
    this.calls.push({ method: 'growTo', size });
    this.#fail('growTo');
    const from = this.desiredSize ?? 0;
    if (size <= from) return { applied: false, description: `already ${from}` };
    this.desiredSize = size;
    return { applied: true, description: `desired ${from} → ${size}` };
  }

  async releaseInstance(node: PoolNode): Promise<PoolChange> {
    this.calls.push({ method: 'releaseInstance', node });
    this.#fail('releaseInstance');
    if (this.released.has(node.name)) return { applied: false, description: 'already gone' };
    this.released.add(node.name);
    if (this.desiredSize !== undefined) this.desiredSize -= 1;
    return { applied: true, description: `terminated ${node.name}` };
  }

  /** Calls that change the pool. */
  mutations(): PoolCall[] {
    return this.calls.filter((c) => c.method !== 'describe');
  }
}

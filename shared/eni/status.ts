/** Pool usage for `berth status` and `GET /v1/status`. */
import type { EniDeps } from './deps.js';
import { nodeView } from './handout/view.js';
import { poolStats } from './policy.js';

/** One pool's usage. */
export interface EniPoolStatus {
  readonly node: string;
  readonly instanceId: string;
  readonly instanceType: string;
  readonly subnetCidr: string;
  readonly draining: boolean;
  readonly enis: number;
  readonly capacity: number;
  readonly assigned: number;
  readonly idle: number;
  readonly ready: number;
  readonly cooling: number;
  readonly reserved: number;
  /**
   * Who hands the pool's addresses to containers: the node itself from its set (`node`, then
   * `assigned` counts what the node last reported its containers hold), or berth per pod.
   */
  readonly handout: 'node' | 'berth';
  /** When the node last reported its use (epoch ms), where it hands addresses out itself. */
  readonly reportedAt?: number;
}

/** Usage of every pool of the cluster, by node name. */
export async function eniPoolStatus(
  deps: Pick<EniDeps, 'store' | 'policy' | 'now'>,
): Promise<EniPoolStatus[]> {
  const out: EniPoolStatus[] = [];
  const now = deps.now();
  for await (const pool of deps.store.listPools()) {
    const state = await deps.store.loadNode(pool.node);
    const ips = nodeView(pool, state.ips);
    const stats = poolStats(pool, ips, now, deps.policy.cooldownMs, deps.policy.mode);
    out.push({
      node: pool.node,
      instanceId: pool.instanceId,
      instanceType: pool.instanceType,
      subnetCidr: pool.subnetCidr,
      draining: pool.draining,
      enis: state.enis.length,
      capacity: stats.capacity,
      assigned: stats.assigned,
      idle: stats.idle,
      ready: stats.ready,
      cooling: stats.cooling,
      reserved: stats.reserved,
      handout: pool.handout ?? 'berth',
      ...(pool.nodeUse ? { reportedAt: pool.nodeUse.reportedAt } : {}),
    });
  }
  return out;
}

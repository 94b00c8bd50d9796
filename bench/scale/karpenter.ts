/**
 * Karpenter v1 (a NodePool of the simulated node shape), as a baseline of the node scale benchmark.
 *
 * Sources: karpenter.sh docs, concepts/disruption (aws/karpenter-provider-aws
 * website/content/en/docs/concepts/disruption.md) and kubernetes-sigs/karpenter:
 * - provisioning: pending pods get new NodeClaims, packed after in-flight nodes (`./pending.ts`);
 * - "If a node has no running non-daemon pods, it is considered empty. `consolidateAfter` can be set
 *   to indicate how long Karpenter should wait after a pod schedules or is removed from the node
 *   before considering the node consolidatable"; the clock is the NodeClaim's `lastPodEventTime`,
 *   or its `Initialized` transition when no pod event happened yet, and a NodeClaim that is not
 *   initialized is never consolidatable (pkg/controllers/nodeclaim/disruption/consolidation.go);
 * - "Empty Node Consolidation - Delete any entirely empty nodes in parallel", as many as the budget
 *   allows (pkg/controllers/disruption/emptiness.go, `ComputeCommand`);
 * - budgets: "If undefined, Karpenter will default to one budget with `nodes: 10%`";
 *   `allowed_disruptions = roundup(total * percentage) - total_deleting - total_notready`, where the
 *   total counts only initialized nodes (pkg/controllers/disruption/helpers.go,
 *   `BuildDisruptionBudgetMapping`);
 * - "Nodes with `karpenter.sh/do-not-disrupt` pods will be excluded from Consolidation", so with
 *   every game server annotated, `WhenEmptyOrUnderutilized` has nothing to delete or replace but
 *   empty nodes; its `consolidateAfter` is 0 s (`shared/reference/peers-2026.md` §4).
 *
 * Simplifications: one instance type (no replacement by a cheaper one), the pass every 60 s
 * (Karpenter's disruption controller polls every 10 s) and one disruption command per pass, the
 * 15 s re-validation of an empty-node command (`consolidationTTL`) not modelled (nothing binds
 * between passes), a deleted node gone at once (so `total_deleting` is 0), no NodePool minimum.
 */
import { type Scaler, SECOND, type SimNode } from './day.js';
import { nodesForPendingPods } from './pending.js';

export interface KarpenterOptions {
  readonly consolidationPolicy: 'WhenEmpty' | 'WhenEmptyOrUnderutilized';
  readonly consolidateAfterMs: number;
  /** `karpenter.sh/do-not-disrupt: "true"` on every game server pod. */
  readonly gameServersDoNotDisrupt: boolean;
  /** The NodePool's one budget, `nodes: <percent>%`; Karpenter's default is 10. */
  readonly budgetNodesPercent?: number;
}

/** `consolidationPolicy: WhenEmpty`, `consolidateAfter: 30s`. */
export const KARPENTER_WHEN_EMPTY_30S: KarpenterOptions = {
  consolidationPolicy: 'WhenEmpty',
  consolidateAfterMs: 30 * SECOND,
  gameServersDoNotDisrupt: false,
};

/** The default policy, `WhenEmptyOrUnderutilized` with `consolidateAfter: 0s`, game servers do-not-disrupt. */
export const KARPENTER_UNDERUTILIZED_DO_NOT_DISRUPT: KarpenterOptions = {
  consolidationPolicy: 'WhenEmptyOrUnderutilized',
  consolidateAfterMs: 0,
  gameServersDoNotDisrupt: true,
};

/** Karpenter's provisioner and empty-node consolidation over the simulated NodePool. */
export function karpenterScaler(options: KarpenterOptions): Scaler {
  if (
    options.consolidationPolicy === 'WhenEmptyOrUnderutilized' &&
    !options.gameServersDoNotDisrupt
  ) {
    // Underutilized consolidation would evict game servers; only the do-not-disrupt case is modelled.
    throw new Error('WhenEmptyOrUnderutilized is modelled only with do-not-disrupt game servers');
  }
  const percent = options.budgetNodesPercent ?? 10;
  return (cluster) => {
    const { sc, now } = cluster;

    // Provisioning: NodeClaims for the pending game servers that in-flight nodes cannot take.
    const add = nodesForPendingPods(cluster);
    if (add > 0) cluster.growTo(cluster.nodes.length + add);

    // Disruption budget: initialized nodes only; none of them is NotReady or deleting here.
    const initialized = cluster.nodes.filter((n) => cluster.ready(n));
    let allowed = Math.ceil((initialized.length * percent) / 100);

    // Empty-node consolidation: initialized, no game server, consolidateAfter since the last pod event.
    const initializedAt = (node: SimNode) => node.launchedAtMs + sc.bootDelayMs;
    const consolidatable = (node: SimNode) =>
      now - (node.lastPodEventAtMs ?? initializedAt(node)) >= options.consolidateAfterMs;
    for (const node of initialized) {
      if (allowed <= 0) break;
      if (node.games.size > 0 || !consolidatable(node)) continue;
      cluster.remove(node);
      allowed--;
    }
  };
}

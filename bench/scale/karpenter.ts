/**
 * Karpenter v1 (a NodePool of the simulated node shape), as a baseline of the node scale benchmark.
 *
 * Sources: kubernetes-sigs/karpenter at v1.3.0, and the karpenter.sh docs (aws/karpenter-provider-aws
 * website/content/en/docs):
 * - provisioning: pending pods get new NodeClaims, packed after in-flight nodes (`./pending.ts`),
 *   at the end of a batching window: "BATCH_IDLE_DURATION ... 1s" and "BATCH_MAX_DURATION ... 10s"
 *   (reference/settings.md): within the bench's 10 s step, so the model's loop runs every step
 *   (`LOOP_MS`); the disruption controller polls on the same 10 s;
 * - "If a node has no running non-daemon pods, it is considered empty. `consolidateAfter` can be set
 *   to indicate how long Karpenter should wait after a pod schedules or is removed from the node
 *   before considering the node consolidatable" (concepts/disruption.md, "Consolidation"); a
 *   placeholder is such a pod; the clock is the NodeClaim's `lastPodEventTime`, or its
 *   `Initialized` transition when no pod event happened yet, and a NodeClaim that is not
 *   initialized is never consolidatable (pkg/controllers/nodeclaim/disruption/consolidation.go);
 * - "Empty Node Consolidation - Delete any entirely empty nodes in parallel", as many as the budget
 *   allows (pkg/controllers/disruption/emptiness.go, `ComputeCommand`);
 * - `WhenEmptyOrUnderutilized`: "Nodes with `karpenter.sh/do-not-disrupt` pods will be excluded
 *   from Consolidation", so with every game server annotated only nodes without a game server
 *   are candidates: empty ones, and ones holding only placeholders, which multi-node and
 *   single-node consolidation delete when their pods fit on the other nodes ("Multi Node
 *   Consolidation - Try to delete two or more nodes in parallel ..."; "Single Node Consolidation
 *   - Try to delete any node individually ...", concepts/disruption.md), fewest pods first
 *   (the disruption cost, pkg/controllers/disruption/helpers.go);
 * - budgets: "If undefined, Karpenter will default to one budget with `nodes: 10%`";
 *   `allowed_disruptions = roundup(total * percentage) - total_deleting - total_notready`, where the
 *   total counts only initialized nodes (pkg/controllers/disruption/helpers.go,
 *   `BuildDisruptionBudgetMapping`);
 * - on the Agones-style days (`./agones-day.ts`), `readyMovable`: do-not-disrupt only on the
 *   Allocated game servers (as a game server that sets it on allocation, or berth's protection,
 *   does), so a node holding only Ready servers and placeholders is a candidate, and its Ready
 *   servers are evicted with it (the fleet makes them again elsewhere);
 * - expiration (`expireAfterMs`), forceful in v1: "Once a NodeClaim expires, Karpenter will
 *   immediately begin draining the corresponding Node without first provisioning a replacement
 *   Node" (karpenter.sh v1.0 docs, upgrading/v1-migration, "Forceful Expiration"), whatever the
 *   budgets; the node is tainted `karpenter.sh/disrupted:NoSchedule`, the pods it may evict go
 *   (placeholders, Ready game servers), and do-not-disrupt pods are waited for until
 *   `terminationGracePeriod` (`terminationGracePeriodMs`), then deleted with the node: games
 *   still running then are interrupted (concepts/disruption.md, "Expiration" and
 *   "TerminationGracePeriod");
 * - overprovisioning: Karpenter launches nodes for any pending pod, so the same placeholder
 *   Deployment as Cluster Autoscaler's (`./day.ts`) keeps headroom (priority below the game
 *   servers, preempted by them, re-pending and provisioned for); the model sets its replicas.
 *
 * Simplifications: one instance type (no replacement by a cheaper one, so consolidation only
 * deletes), one disruption command per loop, the 15 s re-validation of a command
 * (`consolidationTTL`) not modelled, a deleted node gone at once (so `total_deleting` is 0), no
 * NodePool minimum.
 */
import { everyMs, MINUTE, type Scaler, SECOND, type SimCluster, type SimNode } from './day.js';
import { freeSlots, nodesForPendingPods } from './pending.js';

/** The provisioner's batching window (at most 10 s) and the disruption poll: the bench's step. */
export const LOOP_MS = 10 * SECOND;

export interface KarpenterOptions {
  readonly consolidationPolicy: 'WhenEmpty' | 'WhenEmptyOrUnderutilized';
  readonly consolidateAfterMs: number;
  /** `karpenter.sh/do-not-disrupt: "true"` on every game server pod. */
  readonly gameServersDoNotDisrupt: boolean;
  /** The NodePool's one budget, `nodes: <percent>%`; Karpenter's default is 10. */
  readonly budgetNodesPercent?: number;
  /** Replicas of the placeholder Deployment, each one game server's CPU; 0 by default. */
  readonly placeholders?: number;
  /** do-not-disrupt on the game servers that hold players only: Ready ones may be evicted. */
  readonly readyMovable?: boolean;
  /** The NodePool's `expireAfter`; none when absent. */
  readonly expireAfterMs?: number;
  /** The NodePool's `terminationGracePeriod`: how long an expired node's drain may wait. */
  readonly terminationGracePeriodMs?: number;
}

/** `consolidationPolicy: WhenEmpty`, `consolidateAfter: 30s`. */
export const KARPENTER_WHEN_EMPTY_30S: KarpenterOptions = {
  consolidationPolicy: 'WhenEmpty',
  consolidateAfterMs: 30 * SECOND,
  gameServersDoNotDisrupt: false,
};

/** `WhenEmptyOrUnderutilized` with `consolidateAfter: 0s`, game servers do-not-disrupt. */
export const KARPENTER_UNDERUTILIZED_DO_NOT_DISRUPT: KarpenterOptions = {
  consolidationPolicy: 'WhenEmptyOrUnderutilized',
  consolidateAfterMs: 0,
  gameServersDoNotDisrupt: true,
};

/** The `consolidateAfter` values the bench sweeps. */
export const CONSOLIDATE_AFTER_SWEEP_MS: readonly number[] = [30 * SECOND, 5 * MINUTE, 15 * MINUTE];

/**
 * The consolidation policies the bench sweeps, by the name its runs carry: `WhenEmpty`, and
 * `WhenEmptyOrUnderutilized` with `do-not-disrupt` game servers.
 */
export const KARPENTER_POLICIES: Readonly<
  Record<string, Pick<KarpenterOptions, 'consolidationPolicy' | 'gameServersDoNotDisrupt'>>
> = {
  empty: { consolidationPolicy: 'WhenEmpty', gameServersDoNotDisrupt: false },
  'underutilized-dnd': {
    consolidationPolicy: 'WhenEmptyOrUnderutilized',
    gameServersDoNotDisrupt: true,
  },
};

/** A `consolidateAfter` as a run's name carries it: `30s`, `5m`. */
export const consolidateAfterLabel = (ms: number): string =>
  ms < MINUTE ? `${ms / SECOND}s` : `${ms / MINUTE}m`;

/** Karpenter's provisioner and consolidation over the simulated NodePool. */
export function karpenterScaler(options: KarpenterOptions): Scaler {
  if (
    options.consolidationPolicy === 'WhenEmptyOrUnderutilized' &&
    !options.gameServersDoNotDisrupt
  ) {
    // Underutilized consolidation would evict game servers; only the do-not-disrupt case is modelled.
    throw new Error('WhenEmptyOrUnderutilized is modelled only with do-not-disrupt game servers');
  }
  const percent = options.budgetNodesPercent ?? 10;
  /** Expired nodes being drained, with when their drain began. */
  const draining = new Map<SimNode, number>();
  /** Whether a do-not-disrupt pod keeps the node: a game server (one holding players, with `readyMovable`). */
  const blocked = (cluster: SimCluster, node: SimNode): boolean =>
    options.readyMovable
      ? [...node.games].some((game) => cluster.holdsPlayers(game))
      : node.games.size > 0;
  let started = false;
  // Karpenter launches with EC2 CreateFleet, not an Auto Scaling group: no warm pool serves it.
  const loop = everyMs(LOOP_MS, (cluster) => {
    const { sc, now } = cluster;
    if (!started) {
      started = true;
      // The Deployment is applied with the scaler; the scheduler places it before the loop looks.
      cluster.setPlaceholderReplicas(options.placeholders ?? 0);
      cluster.schedule();
    }

    if (options.expireAfterMs !== undefined) expire(cluster, options.expireAfterMs);

    // Provisioning: NodeClaims for the pending pods that in-flight nodes cannot take.
    const add = nodesForPendingPods(cluster);
    if (add > 0) cluster.growTo(cluster.nodes.length + add);

    // Disruption budget: initialized nodes only; none of them is NotReady or deleting here.
    const initialized = cluster.nodes.filter((n) => cluster.ready(n));
    const allowed = Math.ceil((initialized.length * percent) / 100);

    // Candidates: initialized, consolidateAfter since the last pod event, no game server.
    const initializedAt = (node: SimNode) => node.launchedAtMs + sc.bootDelayMs;
    const candidates = initialized.filter(
      (node) =>
        !node.unschedulable &&
        !blocked(cluster, node) &&
        now - (node.lastPodEventAtMs ?? initializedAt(node)) >= options.consolidateAfterMs,
    );
    const empty = candidates
      .filter((node) => node.placeholders === 0 && node.games.size === 0)
      .slice(0, allowed);
    if (empty.length > 0) {
      for (const node of empty) cluster.remove(node);
      return;
    }
    if (options.consolidationPolicy === 'WhenEmptyOrUnderutilized') {
      for (const node of deletable(cluster, initialized, candidates).slice(0, allowed)) {
        cluster.remove(node);
      }
    }
  });
  return Object.assign(loop, { launches: 'fleet' as const });

  /** Drains expired nodes; each goes once nothing blocks it, or at its grace period's end. */
  function expire(cluster: SimCluster, expireAfterMs: number): void {
    const grace = options.terminationGracePeriodMs ?? Number.POSITIVE_INFINITY;
    for (const node of cluster.nodes) {
      if (!draining.has(node) && cluster.now >= node.launchedAtMs + expireAfterMs) {
        draining.set(node, cluster.now);
        node.unschedulable = true;
      }
    }
    for (const [node, since] of draining) {
      if (!cluster.nodes.includes(node)) {
        draining.delete(node);
        continue;
      }
      if (node.placeholders > 0) {
        cluster.pendingPlaceholders += node.placeholders;
        node.placeholders = 0;
      }
      if (options.readyMovable) for (const game of [...node.games]) cluster.evict(game);
      if (!blocked(cluster, node) || cluster.now - since >= grace) {
        cluster.remove(node);
        draining.delete(node);
      }
    }
  }
}

/**
 * The candidates (holding only placeholders, and Ready game servers with `readyMovable`) that can go together, fewest pods first, each
 * taking its pods' room out of the nodes that stay.
 */
function deletable(
  cluster: SimCluster,
  initialized: readonly SimNode[],
  candidates: readonly SimNode[],
): SimNode[] {
  const pods = (node: SimNode) => node.placeholders + node.games.size;
  const sorted = [...candidates].sort((a, b) => pods(a) - pods(b));
  let room = initialized.reduce((sum, n) => sum + (n.unschedulable ? 0 : freeSlots(cluster, n)), 0);
  const out: SimNode[] = [];
  for (const node of sorted) {
    const elsewhere = room - freeSlots(cluster, node);
    if (pods(node) > elsewhere) break;
    room = elsewhere - pods(node);
    out.push(node);
  }
  return out;
}

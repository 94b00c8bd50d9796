/**
 * Scale-up on pending pods, as Cluster Autoscaler and Karpenter both do it for a pool of one
 * node shape: the pods the kube-scheduler left pending (game servers and placeholders alike: the
 * FAQ's priority -10 is "the lowest priority that triggers scaling clusters", at
 * `--expendable-pods-priority-cutoff` -10) are first packed onto the nodes
 * already on their way (launched, not yet Ready), and only the rest ask for new nodes, packed by
 * requests.
 *
 * - Cluster Autoscaler: "For each upcoming node we inject a placeholder node faked to appear ready
 *   into the cluster snapshot, so that we can pack unschedulable pods on them and not trigger
 *   another scale-up" (kubernetes/autoscaler, cluster-autoscaler/core/static_autoscaler.go,
 *   `RunOnce`); the default `--estimator=binpacking` then sizes the node group increase
 *   (cluster-autoscaler/FAQ.md, "How does scale-up work?" and "What are the parameters to CA?").
 * - Karpenter: NodeClaims are created "in response to the demands of Pods" (karpenter.sh docs,
 *   concepts/nodeclaims), pending pods nominated to in-flight nodes first (`cluster.IsNodeNominated`,
 *   kubernetes-sigs/karpenter pkg/controllers/disruption/emptiness.go) and the rest packed first
 *   fit decreasing (karpenter designs/bin-packing.md).
 *
 * Both react within the 10 s step: Cluster Autoscaler on its `--scan-interval` of 10 s, Karpenter
 * at the end of a batching window (`--batch-idle-duration` 1 s, `--batch-max-duration` 10 s).
 */
import type { Scenario, SimCluster } from './day.js';

/** Game servers an empty node of the pool holds: its allocatable less the DaemonSet pod, by requests. */
export function gameSlotsPerNode(sc: Scenario): number {
  return Math.floor((sc.node.allocatableMillis - sc.daemon.requestMillis) / sc.game.requestMillis);
}

/** Game servers that fit on `node` now, by requests. */
export function freeSlots(cluster: SimCluster, node: SimCluster['nodes'][number]): number {
  return Math.max(0, Math.floor(cluster.freeMillis(node) / cluster.sc.game.requestMillis));
}

/**
 * New nodes to ask for so every pending game server has a place, once the room on nodes still
 * booting is counted; capped by the pool's maximum size.
 */
export function nodesForPendingPods(cluster: SimCluster): number {
  const pending = cluster.pendingPods;
  if (pending === 0) return 0;
  let upcomingRoom = 0;
  for (const node of cluster.nodes) {
    if (!cluster.ready(node)) upcomingRoom += freeSlots(cluster, node);
  }
  const unplaced = pending - upcomingRoom;
  if (unplaced <= 0) return 0;
  const wanted = Math.ceil(unplaced / gameSlotsPerNode(cluster.sc));
  return Math.max(0, Math.min(wanted, cluster.sc.scale.maxNodes - cluster.nodes.length));
}

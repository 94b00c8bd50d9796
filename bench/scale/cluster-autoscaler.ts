/**
 * Cluster Autoscaler, as a baseline of the node scale benchmark.
 *
 * Sources: kubernetes/autoscaler at tag cluster-autoscaler-1.32.0, cluster-autoscaler/FAQ.md
 * unless said otherwise:
 * - the loop: "It checks for any unschedulable pods every 10 seconds (configurable by
 *   `--scan-interval` flag)" ("How does scale-up work?"), and scale-down runs in the same loop
 *   ("How does scale-down work?"): the model runs every 10 s (`scanIntervalMs`);
 * - scale-up: "there are pods that failed to schedule on any of the current nodes due to
 *   insufficient resources" ("When does Cluster Autoscaler change the size of a cluster?"),
 *   placeholders included; upcoming nodes are packed first (see `./pending.ts`);
 *   `--new-pod-scale-up-delay` 0 s;
 * - scale-down ("How does scale-down work?"): a node is unneeded when the sum of the requests of its
 *   pods, DaemonSet pods (`--ignore-daemonsets-utilization=false`) and placeholders included, is
 *   below `--scale-down-utilization-threshold` 0.5 of its allocatable, and all its pods that are
 *   not DaemonSet pods can be moved to other nodes; "If a node is unneeded for more than 10
 *   minutes, it will be terminated" (`--scale-down-unneeded-time` 10 m); "one non-empty node at a
 *   time" while "Empty nodes ... can be terminated in bulk, up to 10 nodes at a time"
 *   (`--max-empty-bulk-delete` 10); a node with a placeholder is not empty: its placeholders are
 *   evicted like any Deployment pod and are Pending again (they are not expendable: priority -10
 *   is not below `--expendable-pods-priority-cutoff` -10, "What are the parameters to CA?");
 * - `--scale-down-delay-after-add` 10 m: "How long after scale up that scale down evaluation
 *   resumes"; the unneeded timers keep running during it (core/static_autoscaler.go computes
 *   unneeded nodes every loop, then `isScaleDownInCooldown` only blocks the deletion), and no
 *   scale-down runs in a loop that scaled up; `--scale-down-delay-after-delete` is the scan
 *   interval, one loop;
 * - nodes registered but not yet Ready are neither scale-down candidates nor destinations
 *   (core/static_autoscaler.go: "The actual registered nodes have to be filtered out of the all
 *   nodes list so that scale-down can't consider them as candidates");
 * - "What types of pods can prevent CA from removing a node?": pods annotated
 *   `"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"`, which Agones puts on every game
 *   server pod by default (agones.dev docs, "Cluster Autoscaler", `eviction.safe: Never`) and
 *   berth's webhook too: that is the game-server run (`gameServersSafeToEvict: false`). Without
 *   it a game server pod (backed by a controller, no local storage) is evicted: CA "does this by
 *   evicting them and tainting the node". Evicting a game server ends its session, so the bench
 *   counts it as an interrupted game (`SimCluster.remove`); that run is information only;
 * - overprovisioning ("How can I configure overprovisioning with Cluster Autoscaler?"): a
 *   Deployment of pause pods at priority -10, "Other pods need to use priority 0 or higher in
 *   order to be able to preempt overprovisioning pods"; "If there is not enough resources then
 *   pause pods are preempted and new pods take their place. Next pause pods become unschedulable
 *   and force CA to scale up the cluster." The placeholders live in the shared scheduler
 *   (`SimCluster`, `./day.ts`); this model only sets their replicas (`placeholders`), each
 *   requesting one game server's CPU.
 *
 * Simplifications: one node group of one shape (so no expander), CPU only (the threshold is the
 * larger of the CPU and memory ratios; the sim has no memory), a deleted node is gone at once, the
 * graceful termination CA grants evicted pods (`--max-graceful-termination-sec` 600) not modelled.
 */
import { everyMs, MINUTE, type Scaler, SECOND, type SimNode } from './day.js';
import { freeSlots, nodesForPendingPods } from './pending.js';

/** The flags the model reads, at Cluster Autoscaler's defaults. */
export interface ClusterAutoscalerSettings {
  /** `--scan-interval`: how often the loop runs. */
  readonly scanIntervalMs: number;
  /** `--scale-down-unneeded-time`. */
  readonly scaleDownUnneededTimeMs: number;
  /** `--scale-down-delay-after-add`. */
  readonly scaleDownDelayAfterAddMs: number;
  /** `--scale-down-utilization-threshold` (requests over allocatable). */
  readonly scaleDownUtilizationThreshold: number;
  /** `--max-empty-bulk-delete`. */
  readonly maxEmptyBulkDelete: number;
  /** Non-empty nodes drained at once: "one non-empty node at a time". */
  readonly maxDrainParallelism: number;
}

export const CLUSTER_AUTOSCALER_DEFAULTS: ClusterAutoscalerSettings = {
  scanIntervalMs: 10 * SECOND,
  scaleDownUnneededTimeMs: 10 * MINUTE,
  scaleDownDelayAfterAddMs: 10 * MINUTE,
  scaleDownUtilizationThreshold: 0.5,
  maxEmptyBulkDelete: 10,
  maxDrainParallelism: 1,
};

export interface ClusterAutoscalerOptions {
  /**
   * Whether game server pods may be evicted: `true` is the default (no annotation); `false` is
   * `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` on them, so a node with a game
   * server is never removed.
   */
  readonly gameServersSafeToEvict: boolean;
  /** Replicas of the overprovisioning Deployment, each one game server's CPU; 0 by default. */
  readonly placeholders?: number;
  readonly settings?: Partial<ClusterAutoscalerSettings>;
}

/** Cluster Autoscaler over the simulated node group (`sc.scale.minNodes`..`maxNodes`). */
export function clusterAutoscalerScaler(options: ClusterAutoscalerOptions): Scaler {
  const settings = { ...CLUSTER_AUTOSCALER_DEFAULTS, ...options.settings };
  /** Node name → when it was first found unneeded, continuously since. */
  const unneededSince = new Map<string, number>();
  let lastScaleUpAt = Number.NEGATIVE_INFINITY;

  let started = false;
  return everyMs(settings.scanIntervalMs, (cluster) => {
    const { sc, now } = cluster;
    if (!started) {
      started = true;
      // The Deployment is applied with the scaler; the scheduler places it before the loop looks.
      cluster.setPlaceholderReplicas(options.placeholders ?? 0);
      cluster.schedule();
    }

    // Scale-up: pending (unschedulable) game servers, less those that fit on upcoming nodes.
    const add = nodesForPendingPods(cluster);
    if (add > 0) {
      cluster.growTo(cluster.nodes.length + add);
      lastScaleUpAt = now;
    }

    // Unneeded nodes, every loop (cooldown or not). Candidates and destinations: Ready nodes.
    const ready = cluster.nodes.filter((n) => cluster.ready(n) && !n.unschedulable);
    const utilization = (node: SimNode) =>
      cluster.requestedMillis(node) / sc.node.allocatableMillis;
    const movable = (node: SimNode) => node.games.size === 0 || options.gameServersSafeToEvict;
    const pods = (node: SimNode) => node.games.size + node.placeholders;
    // Least utilized first; each accepted candidate leaves the destinations and its pods take room
    // on the rest, so every node in the set could go together (the FAQ's A, B, C, X, Y example).
    const candidates = ready
      .filter((n) => utilization(n) < settings.scaleDownUtilizationThreshold && movable(n))
      .sort((a, b) => pods(a) - pods(b));
    let room = ready.reduce((sum, n) => sum + freeSlots(cluster, n), 0);
    const unneeded = new Set<string>();
    for (const node of candidates) {
      const roomElsewhere = room - freeSlots(cluster, node);
      if (pods(node) > roomElsewhere) continue;
      room = roomElsewhere - pods(node);
      unneeded.add(node.name);
    }
    for (const name of [...unneededSince.keys()]) {
      if (!unneeded.has(name)) unneededSince.delete(name);
    }
    for (const name of unneeded) if (!unneededSince.has(name)) unneededSince.set(name, now);

    // Scale-down: not in a loop that scaled up, nor within the delay after the last scale-up.
    if (add > 0 || now < lastScaleUpAt + settings.scaleDownDelayAfterAddMs) return;
    let size = cluster.nodes.length;
    let empty = 0;
    let drained = 0;
    for (const node of candidates) {
      if (size <= sc.scale.minNodes) break;
      const since = unneededSince.get(node.name);
      if (since === undefined || now - since < settings.scaleDownUnneededTimeMs) continue;
      if (pods(node) === 0) {
        if (empty >= settings.maxEmptyBulkDelete) continue;
        empty++;
      } else {
        if (drained >= settings.maxDrainParallelism) continue;
        drained++;
      }
      unneededSince.delete(node.name);
      cluster.remove(node);
      size--;
    }
  });
}

/**
 * The Agones fleet controller, once, for every simulated world (the scale benchmark's Agones
 * days, `berth sim`'s agones-fleet day): the rules of the real controllers, so a fidelity fix is
 * made here and nowhere else. Each world lists its nodes and the game servers placed on them,
 * and carries out what the rules decide (creating a GameServer, deleting one, allocating one).
 *
 * - The FleetAutoscaler's Buffer policy sets `replicas = allocated + bufferSize`, clamped to
 *   `minReplicas`..`maxReplicas`, once a sync period (googleforgames/agones v1.38.0
 *   `pkg/fleetautoscalers/fleetautoscalers.go`, `applyBufferPolicy`; `sync.fixedInterval`
 *   30 s by default); between syncs the replicas hold.
 * - The GameServerSet keeps `replicas` game servers: a missing one (a session that ended, a
 *   Ready server someone deleted) is made again; a surplus is deleted, never an Allocated one,
 *   those not yet on a node first, then the Ready ones on the least full nodes (Allocated +
 *   Ready) (`pkg/gameserversets/controller.go`, `computeReconciliationAction`, and
 *   `pkg/gameserversets/gameserversets.go`, `sortGameServersByLeastFullNodes`, the Packed order).
 * - A Packed allocation takes a Ready game server on the node with the most Allocated ones,
 *   then the most Ready ones: the most likely to fill, the least likely to be scaled down
 *   (`pkg/gameserverallocations/allocation_cache.go`, `ListSortedGameServers`).
 */

/** The FleetAutoscaler's Buffer policy and its sync period. */
export interface BufferPolicy {
  readonly bufferSize: number;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  /** 0: the autoscaler looks at every change (a world without steps). */
  readonly syncIntervalMs: number;
}

/** A node as the controller sees it: its name and the game servers placed on it. */
export interface FleetNode<S> {
  readonly name: string;
  readonly games: ReadonlySet<S>;
}

/** What the GameServerSet does to reach its replicas. */
export interface Reconciliation<S> {
  /** Game servers to make. */
  readonly create: number;
  /** Game servers not yet on a node to delete (the newest first). */
  readonly unplaced: number;
  /** Ready game servers to delete, off the least full nodes. */
  readonly placed: readonly S[];
}

/** The fleet's autoscaler, GameServerSet and allocator (see the header). */
export class FleetController<S> {
  readonly policy: BufferPolicy;
  /** The Fleet's replicas, as the autoscaler last set them. */
  replicas: number;
  readonly #allocated: (server: S) => boolean;
  #syncedAtMs = Number.NaN;

  constructor(policy: BufferPolicy, allocated: (server: S) => boolean) {
    this.policy = policy;
    this.replicas = policy.minReplicas;
    this.#allocated = allocated;
  }

  /** The autoscaler at `nowMs`: sets the replicas when a sync period began since it last did. */
  autoscale(nowMs: number, allocated: number): void {
    const { syncIntervalMs, bufferSize, minReplicas, maxReplicas } = this.policy;
    const period = (ms: number) => Math.floor(ms / syncIntervalMs);
    if (syncIntervalMs > 0 && period(nowMs) === period(this.#syncedAtMs)) return;
    this.#syncedAtMs = nowMs;
    this.replicas = Math.max(minReplicas, Math.min(maxReplicas, allocated + bufferSize));
  }

  /** The GameServerSet's step towards `replicas`, from the `unplaced` and the nodes' servers. */
  reconcile(nodes: Iterable<FleetNode<S>>, unplaced: number): Reconciliation<S> {
    const all = [...nodes];
    const total = all.reduce((sum, node) => sum + node.games.size, unplaced);
    if (total <= this.replicas) return { create: this.replicas - total, unplaced: 0, placed: [] };
    let excess = total - this.replicas;
    const fromUnplaced = Math.min(excess, unplaced);
    excess -= fromUnplaced;
    const placed: S[] = [];
    if (excess > 0) {
      const leastFull = all.sort(
        (a, b) => a.games.size - b.games.size || a.name.localeCompare(b.name),
      );
      for (const node of leastFull) {
        for (const server of node.games) {
          if (placed.length >= excess) break;
          if (!this.#allocated(server)) placed.push(server);
        }
      }
    }
    return { create: 0, unplaced: fromUnplaced, placed };
  }

  /** The Ready game server a Packed allocation takes; undefined when none is Ready. */
  allocate(nodes: Iterable<FleetNode<S>>): S | undefined {
    let pick: S | undefined;
    let bestAllocated = -1;
    let bestReady = -1;
    for (const node of nodes) {
      let allocated = 0;
      let first: S | undefined;
      for (const server of node.games) {
        if (this.#allocated(server)) allocated++;
        else first ??= server;
      }
      const ready = node.games.size - allocated;
      if (first === undefined) continue;
      // Ties go to the first node listed: each world lists its nodes by name.
      if (allocated > bestAllocated || (allocated === bestAllocated && ready > bestReady)) {
        pick = first;
        bestAllocated = allocated;
        bestReady = ready;
      }
    }
    return pick;
  }
}

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
 *
 * Multi-session servers, counting their matches in a Counter (googleforgames/agones v1.56.0,
 * `site/content/en/docs/Integration Patterns/high-density-gameservers.md`, "Session/Room
 * Counters"; Counters are on by default, `pkg/util/runtime/features.go`):
 * - the FleetAutoscaler's Counter policy keeps `bufferSize` of the Counter's capacity available
 *   across the fleet: short of it, it adds `ceil(short / (capacity - count))` replicas of the
 *   template; above it, it walks every game server of the fleet, Allocated ones included, in the
 *   GameServerSet's deletion order (not yet placed, then the least full nodes) taking each one's
 *   capacity and count off, and stops at the first that brings the room to the buffer (or the
 *   capacity to `minCapacity`), or before one that would take it below; outside
 *   `minCapacity`..`maxCapacity` it only steps back inside (`pkg/fleetautoscalers/
 *   fleetautoscalers.go`, `applyCounterOrListPolicy`, `scaleUp`, `scaleDown`, `scaleUpLimited`,
 *   `scaleDownLimited`); the GameServerSet then deletes as above, never an Allocated server, so
 *   a full Allocated server walked before the Ready ones lowers the replicas without freeing room
 *   and the Ready ones deleted take the room below the buffer until the next sync;
 * - a match is the documented allocation: first an Allocated server with room (`gameServerState:
 *   Allocated`, `counters: {minAvailable: 1}`), else a Ready one; `scheduling: Packed` with
 *   `priorities: [{type: Counter, order: Ascending}]` orders the candidates by node as above,
 *   then the least room left (the fullest server), then name (`ListSortedGameServers`, and
 *   `pkg/apis/agones/v1/gameserver.go`, `compareCountAndListPriority`); the allocation moves a
 *   Ready server to Allocated and increments its Counter by one; the Allocated selector also
 *   matches a label (`agones.dev/sdk-gs-session-ready: "true"`, the doc's "GameServer Label
 *   Locking"), so an Allocated server whose label is closed takes no more matches;
 * - the game server decrements the Counter as a match ends. Agones never returns an Allocated
 *   server to Ready by itself (only the game server's `SDK.Ready()` would), so the world decides
 *   what a server does at a count of 0 (the benchmark's shuts down, as a single-session one does).
 */

/** The FleetAutoscaler's Counter policy (integer buffer), with the template's Counter capacity. */
export interface CounterPolicy {
  /** Capacity kept available across the fleet's game servers. */
  readonly bufferSize: number;
  /** Aggregate capacity the fleet never goes below or above. */
  readonly minCapacity: number;
  readonly maxCapacity: number;
  /** The Counter's capacity on the Fleet's template: each new game server brings it. */
  readonly capacity: number;
  /** 0: the autoscaler looks at every change. */
  readonly syncIntervalMs: number;
}

/** A multi-session game server's Counter: `count` matches of at most `capacity`. */
export interface SessionCounter {
  readonly count: number;
  readonly capacity: number;
}

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

  /**
   * The Counter policy's replicas at `nowMs` (see the header), when a sync period began since it
   * last looked: `unplaced` game servers not yet on a node (count 0, the template's capacity),
   * `counter` reading each placed one's Counter.
   */
  autoscaleCounter(
    nowMs: number,
    policy: CounterPolicy,
    nodes: Iterable<FleetNode<S>>,
    unplaced: number,
    counter: (server: S) => SessionCounter,
  ): void {
    const period = (ms: number) => Math.floor(ms / policy.syncIntervalMs);
    if (policy.syncIntervalMs > 0 && period(nowMs) === period(this.#syncedAtMs)) return;
    this.#syncedAtMs = nowMs;
    const template: SessionCounter = { count: 0, capacity: policy.capacity };
    // The deletion order: not yet placed first, then the least full nodes (name breaks ties).
    const ordered: SessionCounter[] = Array.from({ length: unplaced }, () => template);
    const leastFull = [...nodes].sort(
      (a, b) => a.games.size - b.games.size || a.name.localeCompare(b.name),
    );
    for (const node of leastFull) for (const server of node.games) ordered.push(counter(server));
    let count = 0;
    let capacity = 0;
    for (const c of ordered) {
      count += c.count;
      capacity += c.capacity;
    }
    this.replicas = counterPolicyReplicas(policy, ordered, count, capacity);
  }

  /**
   * The game server a match takes (see the header): an Allocated one with room whose session
   * label is `open`, else a Ready one with room; on the node with the most Allocated servers, then the most Ready ones, then the
   * fullest server. Undefined when no server has room.
   */
  allocateSession(
    nodes: Iterable<FleetNode<S>>,
    counter: (server: S) => SessionCounter,
    open: (server: S) => boolean = () => true,
  ): S | undefined {
    const listed = [...nodes];
    for (const wantAllocated of [true, false]) {
      let pick: S | undefined;
      let best: readonly [number, number, number] | undefined;
      for (const node of listed) {
        let allocated = 0;
        for (const server of node.games) if (this.#allocated(server)) allocated++;
        const ready = node.games.size - allocated;
        for (const server of node.games) {
          if (this.#allocated(server) !== wantAllocated) continue;
          if (wantAllocated && !open(server)) continue;
          const c = counter(server);
          const room = c.capacity - c.count;
          if (room <= 0) continue;
          // Ties go to the first listed: each world lists its nodes by name, servers by age.
          const key = [allocated, ready, -room] as const;
          if (
            best === undefined ||
            key[0] > best[0] ||
            (key[0] === best[0] && (key[1] > best[1] || (key[1] === best[1] && key[2] > best[2])))
          ) {
            pick = server;
            best = key;
          }
        }
      }
      if (pick !== undefined) return pick;
    }
    return undefined;
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

/**
 * The Counter policy's replicas for the fleet's servers `ordered` in the GameServerSet's deletion
 * order, with their summed `count` and `capacity`, as Agones computes them (googleforgames/agones
 * v1.56.0 `pkg/fleetautoscalers/fleetautoscalers.go`: `applyCounterOrListPolicy`, `scaleUp`,
 * `scaleDown`, `scaleUpLimited`, `scaleDownLimited`).
 */
function counterPolicyReplicas(
  policy: CounterPolicy,
  ordered: readonly SessionCounter[],
  count: number,
  capacity: number,
): number {
  const { bufferSize, minCapacity, maxCapacity } = policy;
  const replicas = ordered.length;
  const limited = capacity < minCapacity ? 1 : capacity > maxCapacity ? -1 : 0;
  const available = capacity - count;
  if (available < bufferSize || (available === bufferSize && limited !== 0)) {
    if (limited !== 0) return limitedReplicas(policy, ordered, capacity, limited);
    if (policy.capacity <= 0) return replicas;
    let more = Math.ceil((bufferSize - available) / policy.capacity);
    const after = capacity + more * policy.capacity;
    if (after < minCapacity || after > maxCapacity) {
      more = Math.trunc((maxCapacity - capacity) / policy.capacity);
    }
    return replicas + more;
  }
  if (available === bufferSize) return replicas;
  if (limited === 1) return limitedReplicas(policy, ordered, capacity, limited);
  return scaleDownReplicas(policy, ordered, count, capacity);
}

/**
 * Scale-down: each server in deletion order is taken off, Allocated ones too (the walk lists the
 * whole fleet), until the room reaches the buffer or the capacity its minimum; the one that would
 * go below either stays. A full server taken off frees no room, so the replicas can fall below
 * the Allocated servers plus the buffer; the GameServerSet, which never deletes an Allocated
 * server, then deletes that many more Ready ones.
 */
function scaleDownReplicas(
  policy: CounterPolicy,
  ordered: readonly SessionCounter[],
  count: number,
  capacity: number,
): number {
  const { bufferSize, minCapacity } = policy;
  let replicas = ordered.length;
  if (capacity === minCapacity) return replicas;
  let left = { count, capacity };
  for (const c of ordered) {
    const next = { count: left.count - c.count, capacity: left.capacity - c.capacity };
    if (next.capacity - next.count < bufferSize || next.capacity < minCapacity) return replicas;
    replicas -= 1;
    left = next;
    if (left.capacity - left.count === bufferSize || left.capacity === minCapacity) return replicas;
  }
  // Agones keeps at least one replica.
  return Math.max(1, replicas);
}

/** Outside `minCapacity`..`maxCapacity`: servers added or taken off until back inside. */
function limitedReplicas(
  policy: CounterPolicy,
  ordered: readonly SessionCounter[],
  capacity: number,
  scale: 1 | -1,
): number {
  let replicas = ordered.length;
  let total = capacity;
  if (scale === 1) {
    if (policy.capacity <= 0) return replicas;
    for (; total < policy.minCapacity; total += policy.capacity) replicas += 1;
    return replicas;
  }
  for (const c of ordered) {
    if (total <= policy.maxCapacity) break;
    total -= c.capacity;
    replicas -= 1;
  }
  return Math.max(1, replicas);
}

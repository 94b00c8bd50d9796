/**
 * The scale plan: from one cluster snapshot and the policy, the cordons, uncordons, growth and
 * removals that keep `bufferSlots` free game-server slots on as few nodes as possible. Pure: no
 * I/O, no clock (the time is an argument), so every rule is tested on plain data and the
 * benchmark runs this very function.
 *
 * Counting:
 * - a slot is `slotMillis` of CPU *requests* against a node's *allocatable* CPU; a node's free
 *   slots are `floor((allocatable - requested) / slotMillis)`, so nodes of any size mix;
 * - only Ready, schedulable nodes offer free slots;
 * - a ready game server (game-state.ts) on such a node counts toward the buffer like a free slot:
 *   a match takes it at once, and its fleet's replacement is what needs a slot (with a fleet that
 *   keeps a Ready buffer, Agones' FleetAutoscaler say, the buffer is mostly held there);
 * - capacity that is coming counts toward the buffer, so one shortfall is ordered once: a
 *   registered node that is not Ready and younger than `bootGraceMs` brings its slots, and every
 *   instance the pool has been asked for but whose Node has not registered yet (desired size
 *   minus registered nodes) brings the slots of a new node;
 * - every pending game server (unbound, not terminal) takes its slots out of that supply.
 *
 * Multi-session game servers (`scale.gameState.counter`, game-state.ts rule 4): once a listed
 * game server counts its sessions, the plan counts *match slots*, room for one more match. A
 * counted server offers its room (`capacity - count`) where a ready one offered one; every
 * quantity in game-server slots (free, coming, pending, the buffer, a new node) is multiplied by
 * the match slots one game-server slot holds (`matchesPerSlot`: the smallest capacity among the
 * counted servers, over the slots each requests, at least 1). So `bufferGameServers` keeps its
 * meaning, game servers' worth of room, and a server half full counts half a server's room. The
 * demand the buffer follows is read from the matches hosted (`demandLevel`), not the servers.
 * With no counter named, or none counted, that factor is 1 and every count is as above.
 *
 * The buffer is `bufferGameServers`, or more when demand asks (demand.ts). Shrinking is damped by
 * time: a surplus must last `cordonAfterMs` (the memory knows since when) before a node is
 * cordoned. Removals are budgeted (at most `removalsPerPass` and `removalsPerHour`) and wait for
 * the cordon to be `commitWindowMs` old (removal.ts); one a pass left half-done is finished first.
 */

import {
  CORDONED_AT,
  DO_NOT_DISRUPT,
  REMOVAL_STARTED_AT,
  SCALE_DOWN_DISABLED,
} from '../vocabulary/labels.js';
import { type DemandBuffer, demandBuffer } from './demand.js';
import {
  cheapestDrainFirst,
  costlyDrains,
  expectedDrainMs,
  expiringNodes,
  withPoolLifetime,
} from './drain.js';
import type { MoveRoute } from './game-state.js';
import { budgetNodes, type ScalePolicy } from './policy.js';
import { formatRfc3339, parseRfc3339 } from './rfc3339.js';
import { EMPTY_SESSIONS } from './sessions.js';
import type { ClusterSnapshot, GameServerView, NodeView } from './snapshot.js';
import { EMPTY_SCALE_MEMORY, type ScaleMemory } from './store.js';

/** The kinds of action a pass takes. */
export const SCALE_ACTION_TYPES = [
  'cordon',
  'uncordon',
  'grow',
  'delete',
  'withdraw',
  'placeholders',
  'evict',
] as const;
/** One of `SCALE_ACTION_TYPES`. */
export type ScaleActionType = (typeof SCALE_ACTION_TYPES)[number];

/** One decision, as the CLI prints it. */
export interface ScaleAction {
  readonly type: ScaleActionType;
  readonly node?: string;
  readonly from?: number;
  readonly to?: number;
  /** `evict`: the game-server pod moved, `namespace/name`. */
  readonly gameServer?: string;
  readonly reason: string;
}

/** A decision with what the pass needs to carry it out. */
export type PlannedAction =
  | (ScaleAction & {
      /** `withdraw`: take back a removal mark, a game server having come to the node. */
      readonly type: 'cordon' | 'uncordon' | 'withdraw';
      readonly target: NodeView;
      /**
       * `cordon`, `uncordon`: the node's multi-session GameServers (those counting sessions),
       * whose session label the act phase closes or opens with the node.
       */
      readonly sessionServers?: readonly SessionServer[];
    })
  | (ScaleAction & { readonly type: 'grow'; readonly from: number; readonly to: number })
  /** The buffer's placeholder pods (node pool `karpenter`): the Deployment's replicas. */
  | (ScaleAction & { readonly type: 'placeholders'; readonly to: number })
  | (ScaleAction & {
      readonly type: 'delete';
      readonly target: NodeView;
      /** The removal was started by an earlier pass (the node carries `REMOVAL_STARTED_AT`). */
      readonly resume: boolean;
    })
  /** Move a ready game server off a node berth cordoned (eviction.ts). */
  | (ScaleAction & {
      readonly type: 'evict';
      readonly node: string;
      readonly gameServer: string;
      readonly route: MoveRoute;
    });

/** A multi-session GameServer on a node the plan cordons or uncordons. */
export type SessionServer = NonNullable<GameServerView['gameServer']>;

/** Something the plan left alone on purpose, with why (for logs; not an action). */
export interface ScaleNote {
  readonly node?: string;
  readonly reason: string;
}

/** The supply and demand the plan computed, in slots. */
export interface SlotTally {
  /** Free slots on Ready, schedulable nodes, before this plan's actions. */
  readonly free: number;
  /** Ready game servers on those nodes: each serves a match as a free slot would. */
  readonly ready: number;
  /** Slots of booting nodes and of instances asked for but not registered yet. */
  readonly coming: number;
  /** Slots pending game servers need. */
  readonly pending: number;
  /** Slots one new node is assumed to bring; undefined when no node tells. */
  readonly slotsPerNewNode: number | undefined;
  /** Node count the pool is at or on its way to. */
  readonly poolSize: number;
  /** The buffer kept, and how demand sized it. */
  readonly buffer: DemandBuffer;
  /** Whether there was a surplus worth a cordon, whether or not it had lasted long enough. */
  readonly surplus: boolean;
  /**
   * Multi-session: match slots per game-server slot, set only when game servers count sessions;
   * then `free`, `ready` (room on game servers), `coming` and `pending` are match slots, and the
   * buffer kept is `buffer.slots` times this.
   */
  readonly matchesPerSlot?: number;
}

/** The outcome of `planScale`. */
export interface ScalePlan {
  /**
   * In the order they must be carried out: removals resumed or withdrawn, uncordons, growth,
   * cordons, removals.
   */
  readonly actions: readonly PlannedAction[];
  readonly notes: readonly ScaleNote[];
  readonly tally: SlotTally;
}

/** Why berth must not touch this node, or undefined when it may. */
export function protectionOf(node: NodeView): string | undefined {
  if (node.annotations[DO_NOT_DISRUPT] === 'true') {
    return `annotated ${DO_NOT_DISRUPT}: "true"`;
  }
  if (node.annotations[SCALE_DOWN_DISABLED] === 'true') {
    return `annotated ${SCALE_DOWN_DISABLED}: "true"`;
  }
  if (node.unschedulable && node.annotations[CORDONED_AT] === undefined) {
    return `cordoned by someone else (no ${CORDONED_AT} annotation)`;
  }
  return undefined;
}

/** Free slots of a node if it were schedulable and Ready. */
export function slotsOf(node: NodeView, slotMillis: number): number {
  return Math.floor(Math.max(0, node.allocatableMillis - node.requestedMillis) / slotMillis);
}

/** Slots one pending game server needs (at least one, even for a request below a slot). */
function slotsNeeded(requestMillis: number, slotMillis: number): number {
  return Math.max(1, Math.ceil(requestMillis / slotMillis));
}

/**
 * Slots a new node brings: as many as the smallest Ready node offers once its game servers are
 * gone (its other pods, DaemonSets say, stay). The smallest, because a pool may mix instance
 * types and under-ordering costs a whole pass of waiting players; over-ordering is cordoned
 * again. Booting nodes only when no node is Ready; none at all when no node is registered.
 */
function estimateSlotsPerNewNode(
  nodes: readonly NodeView[],
  slotMillis: number,
): number | undefined {
  const sized = nodes.filter((n) => n.allocatableMillis > 0);
  const ready = sized.filter((n) => n.ready);
  const basis = ready.length > 0 ? ready : sized;
  if (basis.length === 0) return undefined;
  const slots = basis.map((n) => {
    const others = n.requestedMillis - n.gameServerRequestedMillis;
    return Math.max(1, Math.floor(Math.max(0, n.allocatableMillis - others) / slotMillis));
  });
  return Math.min(...slots);
}

/**
 * Match slots one game-server slot holds: the smallest capacity among the game servers that
 * count sessions, over the slots each requests (at least 1); undefined when none counts.
 */
export function matchesPerSlot(
  gameServers: readonly GameServerView[],
  slotMillis: number,
): number | undefined {
  let fewest: number | undefined;
  for (const gs of gameServers) {
    if (gs.sessions === undefined) continue;
    const per = Math.max(
      1,
      Math.floor(gs.sessions.capacity / slotsNeeded(gs.requestMillis, slotMillis)),
    );
    fewest = fewest === undefined ? per : Math.min(fewest, per);
  }
  return fewest;
}

/**
 * The level demand is read from (memory.ts, rise.ts): undefined while no game server counts
 * sessions, so the count of game servers listed stands; once some do, the matches they host in
 * game-server slots (each count over `matchesPerSlot`; a server that counts none is one). A
 * counted fleet's autoscaler turns matches into servers in its own quanta and churns them:
 * Agones' Counter policy deletes Ready servers below its buffer and makes them again at the next
 * sync (sim/fleet-controller.ts, after googleforgames/agones v1.56.0
 * `pkg/fleetautoscalers/fleetautoscalers.go`, `scaleDown`). Server creations overstate the
 * rise there; the matches are the demand. Rounded to thousandths, so a sum of fractions does
 * not carry float noise into the buffer.
 */
export function demandLevel(
  gameServers: readonly GameServerView[],
  slotMillis: number,
): number | undefined {
  const per = matchesPerSlot(gameServers, slotMillis);
  if (per === undefined) return undefined;
  let level = 0;
  for (const gs of gameServers) level += gs.sessions === undefined ? 1 : gs.sessions.count / per;
  return Math.round(level * 1000) / 1000;
}

/** Fullest first: most game servers, then most requested CPU, then name (stable). */
function fullestFirst(a: NodeView, b: NodeView): number {
  return (
    b.gameServers - a.gameServers ||
    b.requestedMillis - a.requestedMillis ||
    a.name.localeCompare(b.name)
  );
}

/**
 * Removals an earlier pass started and did not finish (it died half-way): finished first, the
 * instance may be terminating already. The node was marked only once its cordon was a commit
 * window old, and berth's webhooks have refused it game servers since, so nothing need wait.
 */
function planResumedRemovals(resumable: readonly NodeView[], notes: ScaleNote[]): PlannedAction[] {
  const actions: PlannedAction[] = [];
  for (const node of [...resumable].sort((a, b) => a.name.localeCompare(b.name))) {
    const protection = protectionOf(node);
    if (protection) {
      notes.push({ node: node.name, reason: `removal started but now ${protection}; left alone` });
    } else if (node.gameServers > 0) {
      actions.push({
        type: 'withdraw',
        node: node.name,
        target: node,
        reason: `removal started at ${node.annotations[REMOVAL_STARTED_AT]} but ${node.gameServers} game server(s) run there now: mark taken back, the node stays cordoned`,
      });
    } else {
      actions.push({
        type: 'delete',
        node: node.name,
        target: node,
        resume: true,
        reason: `finishing the removal started at ${node.annotations[REMOVAL_STARTED_AT]}`,
      });
    }
  }
  return actions;
}

/**
 * Removals of berth-cordoned nodes past the shutdown delay with no live game server, oldest
 * cordon first, while `registered` nodes stay at or above `minNodes`. A cordon time that does not
 * parse is noted and skips that node only.
 */
function planRemovals(
  cordoned: readonly NodeView[],
  registered: number,
  policy: ScalePolicy,
  nowMs: number,
  allowed: number,
  notes: ScaleNote[],
): PlannedAction[] {
  const removable: Array<{ node: NodeView; cordonedAtMs: number }> = [];
  for (const node of cordoned) {
    const text = node.annotations[CORDONED_AT] ?? '';
    const cordonedAtMs = parseRfc3339(text);
    if (cordonedAtMs === undefined) {
      notes.push({
        node: node.name,
        reason: `${CORDONED_AT} "${text}" is not an RFC 3339 time: not removed (uncordon or fix it)`,
      });
      continue;
    }
    if (nowMs < cordonedAtMs + policy.shutdownDelayMs || node.gameServers > 0) continue;
    if (nowMs < cordonedAtMs + policy.commitWindowMs) {
      notes.push({
        node: node.name,
        reason: `drained, but cordoned only at ${text}: waiting until the cordon is ${policy.commitWindowMs / 1000}s old, for game servers admitted before it to commit`,
      });
      continue;
    }
    removable.push({ node, cordonedAtMs });
  }
  removable.sort(
    (a, b) => a.cordonedAtMs - b.cordonedAtMs || a.node.name.localeCompare(b.node.name),
  );
  const actions: PlannedAction[] = [];
  let remaining = registered;
  for (const { node } of removable) {
    if (actions.length >= allowed) {
      notes.push({
        node: node.name,
        reason: `drained, but the disruption budget allows no more removals now (${budgetNodes(policy.removalsPerPass, registered)} a pass, ${budgetNodes(policy.removalsPerHour, registered)} an hour)`,
      });
      continue;
    }
    if (remaining - 1 < policy.minNodes) {
      notes.push({
        node: node.name,
        reason: `drained, but removing it would leave fewer than minNodes ${policy.minNodes}`,
      });
      continue;
    }
    actions.push({
      type: 'delete',
      node: node.name,
      target: node,
      resume: false,
      reason: `cordoned by berth at ${node.annotations[CORDONED_AT]}, no game server, shutdown delay ${policy.shutdownDelayMs / 1000}s passed`,
    });
    remaining -= 1;
  }
  return actions;
}

/**
 * Plans one pass over `snapshot` at `nowMs`. Never plans to touch a protected node, to remove a
 * node with a live game server, to leave fewer than `minNodes` nodes or schedulable nodes, or
 * to ask for more than `maxNodes`.
 */
export function planScale(
  snapshot: ClusterSnapshot,
  policy: ScalePolicy,
  nowMs: number,
  memory: ScaleMemory = EMPTY_SCALE_MEMORY,
): ScalePlan {
  const { slotMillis, minNodes, maxNodes } = policy;
  const buffer = demandBuffer(memory, policy);
  // Multi-session: everything in match slots (the header); 1 keeps game-server slots.
  const counted = matchesPerSlot(snapshot.gameServers, slotMillis);
  const perSlot = counted ?? 1;
  // A counted fleet's buffer may be fractional (its level is, demandLevel): whole match slots.
  const bufferSlots = Math.ceil(Math.round(buffer.slots * perSlot * 1000) / 1000);
  const actions: PlannedAction[] = [];
  const notes: ScaleNote[] = [];
  const slots = (n: NodeView): number => slotsOf(n, slotMillis) * perSlot;
  /** What its game servers offer now: their room, or one per ready game server. */
  const open = (n: NodeView): number => n.matchRoom ?? n.readyGameServers;

  // Nodes being deleted by someone else are gone for planning; nodes berth started removing are
  // finished first (the instance may already be terminating).
  const active: NodeView[] = [];
  const resumable: NodeView[] = [];
  for (const node of snapshot.nodes) {
    if (node.deleting) continue;
    if (node.annotations[REMOVAL_STARTED_AT] !== undefined) resumable.push(node);
    else active.push(node);
  }
  actions.push(...planResumedRemovals(resumable, notes));

  // A node past its cordon-by time (a forced lifetime, drain.ts) is cordoned now, whatever the
  // buffer says, and never uncordoned: growth replaces its slots.
  const sessions = memory.sessions ?? EMPTY_SESSIONS;
  const expiring = expiringNodes(
    active.filter((n) => protectionOf(n) === undefined),
    withPoolLifetime(policy.drain, snapshot.nodeLifetimeMs),
    sessions,
    policy,
    nowMs,
  );
  for (const node of active) {
    const reason = expiring.get(node.name);
    if (reason !== undefined && !node.unschedulable) {
      actions.push({ type: 'cordon', node: node.name, target: node, reason });
    }
  }

  let free = 0;
  let ready = 0;
  let booting = 0;
  let schedulable = 0;
  for (const node of active) {
    if (node.unschedulable || expiring.has(node.name)) continue;
    schedulable += 1;
    if (node.ready) {
      const all = slots(node);
      // Slots mode: a slot whose chain does not serve yet is coming, not free, and no longer
      // coming once the boot grace has passed since the node's Ready.
      const routed =
        node.servingFrontSeats === undefined
          ? all
          : Math.min(all, Math.max(0, node.servingFrontSeats - node.gameServers) * perSlot);
      free += routed;
      if (routed < all) {
        const since = node.readyAtMs ?? node.createdAtMs;
        if (since !== undefined && nowMs - since < policy.bootGraceMs) booting += all - routed;
        else
          notes.push({
            node: node.name,
            reason: `${all - routed} slots' NLB fronts do not serve past the boot grace: not counted`,
          });
      }
      ready += open(node);
    } else if (node.createdAtMs !== undefined && nowMs - node.createdAtMs < policy.bootGraceMs) {
      booting += slots(node);
    } else {
      notes.push({ node: node.name, reason: 'not Ready past the boot grace: offers no slots' });
    }
  }
  const registered = active.length;
  const desired = snapshot.pool.desiredSize;
  const poolSize = Math.max(desired ?? 0, registered);
  const unregistered = desired === undefined ? 0 : Math.max(0, desired - registered);
  const slotsPerNewNode = estimateSlotsPerNewNode(active, slotMillis);
  const coming = booting + unregistered * (slotsPerNewNode ?? 0) * perSlot;
  const pending = snapshot.pendingGameServers.reduce(
    (sum, pod) => sum + slotsNeeded(pod.requestMillis, slotMillis) * perSlot,
    0,
  );
  const supply = { free, ready, coming, pending, slotsPerNewNode, poolSize };

  const berthCordoned = (n: NodeView): boolean =>
    n.unschedulable && n.annotations[CORDONED_AT] !== undefined && protectionOf(n) === undefined;
  for (const node of active) {
    const protection = protectionOf(node);
    if (protection) notes.push({ node: node.name, reason: `${protection}: never touched` });
  }

  // Scale up: uncordon (cheapest, instant), then grow.
  let available = free + ready + coming - pending;
  const uncordonable = active
    .filter((n) => berthCordoned(n) && n.ready && !expiring.has(n.name))
    .sort(fullestFirst);
  const uncordoned = new Set<string>();
  const uncordon = (node: NodeView, reason: string): void => {
    actions.push({ type: 'uncordon', node: node.name, target: node, reason });
    uncordoned.add(node.name);
    schedulable += 1;
    free += slots(node);
    ready += open(node);
    available += slots(node) + open(node);
  };
  for (let next = uncordonable[0]; next && schedulable < minNodes; next = uncordonable[0]) {
    uncordonable.shift();
    uncordon(next, `${schedulable} schedulable node(s), fewer than minNodes ${minNodes}`);
  }
  for (let next = uncordonable[0]; next && available < bufferSlots; next = uncordonable[0]) {
    uncordonable.shift();
    uncordon(
      next,
      `${available} slot(s) available, fewer than the buffer of ${bufferSlots}; fullest cordoned node first (${next.gameServers} game server(s), ${slots(next)} free slot(s))`,
    );
  }

  let target = poolSize;
  const reasons: string[] = [];
  if (available < bufferSlots) {
    const missing = bufferSlots - available;
    const nodes =
      slotsPerNewNode === undefined ? 1 : Math.ceil(missing / (slotsPerNewNode * perSlot));
    target += nodes;
    const unit = counted === undefined ? 'slot(s)' : 'match slot(s)';
    const perNewNode =
      slotsPerNewNode === undefined
        ? 'node size unknown, one node at a time'
        : `${slotsPerNewNode * perSlot} ${unit} per new node`;
    reasons.push(
      counted === undefined
        ? `free ${free}${ready ? ` + ready game servers ${ready}` : ''} + coming ${coming} - pending ${pending} = ${available} slot(s), ${missing} short of the buffer of ${bufferSlots}; ${perNewNode}`
        : `in match slots (${counted} per game-server slot): free ${free} + room on game servers ${ready} + coming ${coming} - pending ${pending} = ${available}, ${missing} short of the buffer of ${bufferSlots} (${buffer.slots} game servers' worth); ${perNewNode}`,
    );
  }
  if (poolSize < minNodes && target < minNodes) {
    target = minNodes;
    reasons.push(`${poolSize} node(s), fewer than minNodes ${minNodes}`);
  }
  const capped = Math.min(target, maxNodes);
  if (policy.placeholders) {
    // Karpenter launches the nodes: berth holds the buffer in placeholders it cannot place.
    actions.push({
      type: 'placeholders',
      to: bufferSlots,
      reason: `the buffer of ${bufferSlots} slot(s) held by placeholder pods; Karpenter launches nodes for those that do not fit`,
    });
    target = poolSize;
  } else if (capped > poolSize) {
    const cap = capped < target ? ` (capped at maxNodes ${maxNodes}, wanted ${target})` : '';
    actions.push({
      type: 'grow',
      from: poolSize,
      to: capped,
      reason: `${reasons.join('; ')}${cap}`,
    });
  } else if (target > poolSize) {
    notes.push({ reason: `at maxNodes ${maxNodes}: cannot grow for ${reasons.join('; ')}` });
  }

  // Scale down, only when nothing was short: cordon the emptiest nodes while what is left keeps
  // the buffer on Ready capacity alone (booting capacity might not arrive), once the surplus has
  // lasted `cordonAfterMs`.
  let surplus = false;
  if (target === poolSize && uncordoned.size === 0) {
    const headroom = Math.ceil(policy.cordonHeadroomNodes * (slotsPerNewNode ?? 0)) * perSlot;
    let excess = free + ready - pending - bufferSlots - headroom;
    // Cheapest drain first (drain.ts): fewest allocated game servers, then fewest ready ones.
    const cordonable = active
      .filter(
        (n) =>
          !n.unschedulable && n.ready && protectionOf(n) === undefined && !expiring.has(n.name),
      )
      .sort(
        (a, b) => cheapestDrainFirst(a, b) || slots(b) - slots(a) || a.name.localeCompare(b.name),
      );
    const costly = costlyDrains(
      cordonable,
      expectedDrainMs(snapshot.gameServers, sessions, policy.drain, nowMs),
      policy.drain,
    );
    // A cordon takes the node's free slots and its ready game servers out of the buffer; the
    // ready ones it moves need free slots elsewhere too (their replacements are ready again).
    const moving = movingSlots(
      snapshot.gameServers,
      slotMillis,
      policy.drain.evictionsPerPass,
      perSlot,
    );
    let freeLeft = free - pending;
    // The wait damps flapping between passes; a first pass has no earlier decision to flap with
    // (and an operator's one-off `berth scale --once` acts at once, as its first pass for the cluster).
    const since =
      memory.surplusSinceMs ?? (memory.previousPassAtMs === undefined ? -Infinity : nowMs);
    // How long the surplus has been seen, as the reason says it: never longer than it was.
    const [first, lasted] =
      since === -Infinity
        ? ['first pass for this cluster (no earlier pass to wait on): ', '']
        : ['', ` for ${Math.floor((nowMs - since) / 1000)}s (since ${formatRfc3339(since)})`];
    const cordons: PlannedAction[] = [];
    for (const node of cordonable) {
      const reason = costly.get(node.name);
      if (reason !== undefined) {
        notes.push({ node: node.name, reason });
        continue;
      }
      const needed = slots(node) + open(node);
      const freeNeeded = slots(node) + (moving.get(node.name) ?? 0);
      if (schedulable - 1 < minNodes || needed > excess || freeNeeded > freeLeft) break;
      cordons.push({
        type: 'cordon',
        node: node.name,
        target: node,
        reason: `${first}${excess} slot(s) above the buffer of ${bufferSlots}${headroom ? ` and a headroom of ${headroom}` : ''}${lasted}; ${node.gameServers} game server(s) here (${node.allocatedGameServers} allocated, ${node.readyGameServers} ready), ${slots(node)} free slot(s)`,
      });
      excess -= needed;
      freeLeft -= freeNeeded;
      schedulable -= 1;
    }
    surplus = cordons.length > 0;
    if (surplus && nowMs - since >= policy.cordonAfterMs) actions.push(...cordons);
    else if (surplus) {
      notes.push({
        reason: `a surplus of ${cordons.length} node(s) since ${formatRfc3339(since)}: cordoned once it has lasted ${policy.cordonAfterMs / 1000}s`,
      });
    }
  }

  // Remove drained berth cordons, oldest first, never below minNodes, within the budget.
  const managed = active.length + resumable.length;
  const allowed = Math.max(
    0,
    Math.min(
      budgetNodes(policy.removalsPerPass, managed),
      budgetNodes(policy.removalsPerHour, managed) - removalsInLastHour(memory, nowMs),
    ),
  );
  const drained = active.filter((n) => berthCordoned(n) && !uncordoned.has(n.name));
  actions.push(...planRemovals(drained, active.length, policy, nowMs, allowed, notes));

  const tally: SlotTally = {
    ...supply,
    buffer,
    surplus,
    ...(counted === undefined ? {} : { matchesPerSlot: counted }),
  };
  return { actions: withSessionServers(actions, snapshot.gameServers), notes, tally };
}

/** Each cordon and uncordon with the multi-session GameServers on its node (`sessionServers`). */
function withSessionServers(
  actions: readonly PlannedAction[],
  gameServers: readonly GameServerView[],
): PlannedAction[] {
  const byNode = new Map<string, SessionServer[]>();
  for (const gs of gameServers) {
    if (gs.gameServer === undefined) continue;
    byNode.set(gs.node, [...(byNode.get(gs.node) ?? []), gs.gameServer]);
  }
  return actions.map((a) => {
    if (a.type !== 'cordon' && a.type !== 'uncordon') return a;
    const servers = byNode.get(a.node ?? '');
    return servers === undefined ? a : { ...a, sessionServers: servers };
  });
}

/**
 * Slots the movable ready game servers of each node need elsewhere (none if nothing moves), in
 * `perSlot` units of a game-server slot (match slots, for multi-session servers).
 */
function movingSlots(
  gameServers: readonly GameServerView[],
  slotMillis: number,
  evictionsPerPass: number,
  perSlot: number,
): Map<string, number> {
  const moving = new Map<string, number>();
  if (evictionsPerPass <= 0) return moving;
  for (const gs of gameServers) {
    if (gs.move === undefined) continue;
    const needed = slotsNeeded(gs.requestMillis, slotMillis) * perSlot;
    moving.set(gs.node, (moving.get(gs.node) ?? 0) + needed);
  }
  return moving;
}

/** The printable form of a planned action (no node internals). */
export function toScaleAction(action: PlannedAction): ScaleAction {
  const { type, node, from, to, gameServer, reason } = action;
  return {
    type,
    ...(node !== undefined ? { node } : {}),
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    ...(gameServer !== undefined ? { gameServer } : {}),
    reason,
  };
}

const HOUR_MS = 3_600_000;

/** Removals started within the hour before `nowMs`. */
export function removalsInLastHour(memory: ScaleMemory, nowMs: number): number {
  return memory.removalsMs.filter((at) => at > nowMs - HOUR_MS).length;
}

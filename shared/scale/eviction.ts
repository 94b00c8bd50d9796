/**
 * Moving ready game servers off the nodes berth cordoned, so a cordoned node drains in minutes
 * instead of waiting for its ready servers to be used up (Agones #4508, Karpenter #1209). Pure:
 * from the snapshot and the pass's plan, the game servers to move this pass.
 *
 * - Only ready game servers (game-state.ts: `move`), never allocated ones, and only on nodes
 *   berth had cordoned when the pass listed them (a cordon made
 *   in this pass might fail, and the replacement would land back on the node).
 * - Agones: the owning `GameServer` is deleted (its GameServerSet makes another; deleting the pod
 *   would fight the GameServer controller). Others: the pod is evicted through the Eviction API,
 *   so PodDisruptionBudgets are honoured. Both carry the object's `resourceVersion` as a
 *   precondition: a server allocated since the listing is refused by the apiserver, not deleted.
 * - At most `evictionsPerPass` a pass, and only while the Ready, schedulable capacity left after
 *   the pass's plan (free slots, and ready game servers, which count toward the buffer: plan.ts)
 *   keeps the buffer with the replacements placed in free slots; none while the plan grows.
 * - Nodes cordoned longest ago first (they finish draining first), game servers by name.
 */

import { CORDONED_AT, REMOVAL_STARTED_AT } from '../vocabulary/labels.js';
import { type PlannedAction, protectionOf, type ScaleNote, slotsOf } from './plan.js';
import type { ScalePolicy } from './policy.js';
import { parseRfc3339 } from './rfc3339.js';
import type { ClusterSnapshot, NodeView } from './snapshot.js';

/** The `evict` actions of a pass. */
export interface EvictionPlan {
  readonly actions: readonly PlannedAction[];
  readonly notes: readonly ScaleNote[];
}

/** Slots one game server needs (at least one, even for a request below a slot). */
function slotsNeeded(requestMillis: number, slotMillis: number): number {
  return Math.max(1, Math.ceil(requestMillis / slotMillis));
}

/** Nodes the plan leaves schedulable: uncordoned by it, or not cordoned by it. */
function schedulableAfter(node: NodeView, actions: readonly PlannedAction[]): boolean {
  const acted = actions.filter((a) => a.node === node.name);
  if (acted.some((a) => a.type === 'cordon' || a.type === 'delete')) return false;
  if (acted.some((a) => a.type === 'uncordon')) return true;
  return !node.unschedulable;
}

/** Plans the evictions of one pass, given the rest of its plan (`planned`). */
export function planEvictions(
  snapshot: ClusterSnapshot,
  planned: readonly PlannedAction[],
  bufferSlots: number,
  policy: ScalePolicy,
): EvictionPlan {
  const notes: ScaleNote[] = [];
  const budget = policy.drain.evictionsPerPass;
  if (budget <= 0) return { actions: [], notes };
  const live = snapshot.nodes.filter((n) => !n.deleting);
  const uncordoned = new Set(planned.filter((a) => a.type === 'uncordon').map((a) => a.node));
  const draining = live
    .filter(
      (n) =>
        n.unschedulable &&
        n.annotations[CORDONED_AT] !== undefined &&
        n.annotations[REMOVAL_STARTED_AT] === undefined &&
        protectionOf(n) === undefined &&
        !uncordoned.has(n.name),
    )
    .map((n) => ({ node: n, at: parseRfc3339(n.annotations[CORDONED_AT] ?? '') ?? Infinity }))
    .sort((a, b) => a.at - b.at || a.node.name.localeCompare(b.node.name));
  const movable = snapshot.gameServers
    .filter((gs) => gs.state === 'ready' && gs.move !== undefined && !gs.deleting)
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  if (draining.length === 0 || movable.length === 0) return { actions: [], notes };
  if (planned.some((a) => a.type === 'grow')) {
    notes.push({ reason: 'the buffer is short (growing): no ready game server moved this pass' });
    return { actions: [], notes };
  }

  const { slotMillis } = policy;
  const offering = live.filter((n) => n.ready && schedulableAfter(n, planned));
  const free = offering.reduce((sum, n) => sum + slotsOf(n, slotMillis), 0);
  const ready = offering.reduce((sum, n) => sum + n.readyGameServers, 0);
  const pending = snapshot.pendingGameServers.reduce(
    (sum, pod) => sum + slotsNeeded(pod.requestMillis, slotMillis),
    0,
  );
  let room = Math.min(free - pending, free + ready - pending - bufferSlots);
  const actions: PlannedAction[] = [];
  for (const { node } of draining) {
    for (const gs of movable) {
      if (gs.node !== node.name || gs.move === undefined) continue;
      if (actions.length >= budget) {
        notes.push({
          node: node.name,
          reason: `ready game servers left to move: at most ${budget} a pass (scale.drain.evictionsPerPass)`,
        });
        return { actions, notes };
      }
      const needed = slotsNeeded(gs.requestMillis, slotMillis);
      if (needed > room) {
        notes.push({
          node: node.name,
          reason: `ready game servers left to move: ${Math.max(0, room)} free slot(s) elsewhere above the buffer of ${bufferSlots}, ${needed} needed for the next`,
        });
        return { actions, notes };
      }
      room -= needed;
      const how =
        gs.move.kind === 'gameserver'
          ? gs.move.alone
            ? 'its Agones GameServer deleted (standalone: no fleet makes another)'
            : 'its Agones GameServer deleted (the fleet makes another)'
          : `evicted through the Eviction API${gs.move.alone ? ' (no controller owns it: nothing makes it again)' : ''}`;
      actions.push({
        type: 'evict',
        node: node.name,
        gameServer: `${gs.namespace}/${gs.name}`,
        route: gs.move,
        reason: `ready (${gs.detail}) on a node berth cordoned at ${node.annotations[CORDONED_AT]}: ${how}`,
      });
    }
  }
  return { actions, notes };
}

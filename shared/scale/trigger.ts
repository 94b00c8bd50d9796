/**
 * Scale-up between scheduled passes, triggered by admissions. The scheduled pass runs every
 * minute, and the nodes it asks for are Ready a provisioning time later: the free slots must
 * cover the rise of a minute more than a loop of seconds would need (demand.ts, `reactionMs`), and
 * a wave that starts just after a pass is seen a minute late. berth's webhook sees every game
 * server created and deleted, so it can ask for a pass as soon as the slots the last pass left
 * above the buffer are used up: the last pass records its slack, each admitted game server counts
 * against it and each deleted one gives its slot back (the net rise, as the demand buffer
 * measures it: at a steady rate as many end as start, and nothing is asked), and the admission
 * that exhausts it asks for a pass, at most one per `TRIGGER_DEBOUNCE_MS`.
 *
 * A triggered pass only scales up (uncordons, grows, sets placeholders): cordons and removals
 * stay on the schedule, whose damping they rely on. It reads the arrivals since the last
 * scheduled pass as a pass's worth (prorated), so a wave is followed within seconds, and keeps
 * the memory's per-pass counts as the scheduled passes made them. Pure.
 */
import type { ScaleConfig } from '../config/schema.js';
import type { PassOutcome } from './memory.js';
import type { PlannedAction, ScaleAction, SlotTally } from './plan.js';
import type { ScaleMemory, TriggerState } from './store.js';

/** At most one triggered pass this often: the step a Karpenter or Cluster Autoscaler loop takes. */
export const TRIGGER_DEBOUNCE_MS = 10_000;

/**
 * Whether admissions trigger passes for a cluster: only while its scale pass runs on a timer,
 * whose slack they count against (an interval of 0 turns the pass off).
 */
export function admissionsTrigger(config: Pick<ScaleConfig, 'intervalSeconds'>): boolean {
  return config.intervalSeconds > 0;
}

/**
 * Game-server slots free or coming beyond the buffer, as a pass's tally counts them (may be
 * negative). A tally in match slots (multi-session servers) is read back in game-server slots,
 * rounded down: admissions count game servers, each taking a whole slot's room.
 */
export function slackOf(tally: SlotTally): number {
  const supply = tally.free + tally.ready + tally.coming - tally.pending;
  return Math.floor(supply / (tally.matchesPerSlot ?? 1)) - tally.buffer.slots;
}

/** The state a pass leaves, from its tally: its slack above the buffer. */
export function afterPass(tally: SlotTally, nowMs: number): TriggerState {
  return { slack: slackOf(tally), passAtMs: nowMs, admitted: 0 };
}

/**
 * Whether a pass is wanted at `nowMs`: the game servers admitted exhaust the slack, and no pass
 * ran or was asked for within the debounce.
 */
export function passWanted(
  state: TriggerState,
  nowMs: number,
  debounceMs: number = TRIGGER_DEBOUNCE_MS,
): boolean {
  return state.admitted > state.slack && nowMs - state.passAtMs >= debounceMs;
}

/**
 * `count` game servers admitted at `nowMs` (deleted, when negative): whether a pass is wanted
 * now, and the state after (a pass asked for counts as run, so a burst asks once). For a host that counts in one process;
 * where admissions run in many, `ScaleTriggerStore` keeps the same state in the table.
 */
export function onAdmitted(
  state: TriggerState,
  count: number,
  nowMs: number,
  debounceMs: number = TRIGGER_DEBOUNCE_MS,
): { readonly wanted: boolean; readonly state: TriggerState } {
  const counted = { ...state, admitted: state.admitted + count };
  const wanted = passWanted(counted, nowMs, debounceMs);
  return { wanted, state: wanted ? { ...counted, passAtMs: nowMs } : counted };
}

/**
 * The memory a triggered pass plans with: the game servers created since the last scheduled pass
 * as the latest pass's arrivals, prorated to a whole pass, so the demand buffer sees a wave that
 * has just begun; the burst window's busiest pass as what came before. Never saved.
 */
export function triggeredView(
  memory: ScaleMemory,
  gameServerCreatedAtMs: readonly number[],
  nowMs: number,
  passIntervalMs: number,
): ScaleMemory {
  const since = memory.lastPassAtMs;
  if (since === undefined || nowMs <= since) return memory;
  const count = gameServerCreatedAtMs.filter((at) => at > since).length;
  const elapsedMs = Math.max(nowMs - since, TRIGGER_DEBOUNCE_MS);
  return {
    ...memory,
    arrivals: [...memory.arrivals, { atMs: nowMs, count: (count * passIntervalMs) / elapsedMs }],
    priorPeak: memory.burstPeaks[0]?.count ?? 0,
  };
}

/** The actions a triggered pass carries out: those that add slots. */
export function scaleUpOnly(actions: readonly PlannedAction[]): PlannedAction[] {
  return actions.filter(
    (action) =>
      action.type === 'uncordon' || action.type === 'grow' || action.type === 'placeholders',
  );
}

/**
 * What the memory keeps of a triggered pass that carried out `done`: its growth and the
 * provisioning it saw end; the surplus the scheduled passes are timing goes on unless this pass
 * found a shortfall (it scaled up).
 */
export function triggeredOutcome(
  outcome: PassOutcome,
  memory: ScaleMemory,
  done: readonly Pick<ScaleAction, 'type'>[],
): PassOutcome {
  return {
    ...outcome,
    surplus:
      !done.some((action) => action.type !== 'placeholders') && memory.surplusSinceMs !== undefined,
    removalsStarted: 0,
  };
}

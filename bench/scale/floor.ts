/**
 * What a day's arrivals alone say about its node-hours, before any scaler runs:
 * - `packed`: at every step just enough nodes for the games running then, packed perfectly, as
 *   if games could move between nodes and a node were ready the moment it is asked for.
 * - `clairvoyant`: the schedule that knows every arrival: perfect packing, each node asked for
 *   exactly one boot time before it is needed (its boot paid for, as the day pays for a booting
 *   node), kept over a dip shorter than a boot rather than booted again. No scaler that keeps
 *   every game placed uses fewer node-hours.
 * - `noForesight`: the same schedule with room for the scenario's largest burst kept free at
 *   every step. A burst arrives within a minute, before a node asked for then could boot, so a
 *   scaler that knows nothing of when the next one comes, and must never keep a game waiting
 *   whenever it comes, keeps that room. A scaler may spend less and wager that no burst comes at
 *   its leanest moment; this is what the certainty costs.
 * Node-hours are counted as the day counts them (`simulateDay`): every node, each step of the
 * measured day, at least `scale.minNodes`.
 */
import type { Arrival } from '../../sim/arrivals.js';
import { HOUR, round, type Scenario } from './day.js';
import { gameSlotsPerNode } from './pending.js';

/** A day's floors (see the module comment), in node-hours. */
export interface NodeHourFloors {
  readonly packed: number;
  readonly clairvoyant: number;
  /** The largest burst the scenario brings, and the clairvoyant schedule with it kept free. */
  readonly noForesight: { readonly burst: number; readonly nodeHours: number };
}

/**
 * Games running at each step of the measured day, had none of them waited. A game starts at the
 * first step at or after its arrival and ends at the first step its whole session has passed
 * since it started, as `simulateDay` runs it.
 */
export function runningPerStep(sc: Scenario, day: readonly Arrival[]): number[] {
  const steps = Math.ceil(sc.durationMs / sc.stepMs);
  // +1 at the step a game starts, -1 at the step it ends; a running sum gives the count.
  const delta = new Array<number>(steps + 1).fill(0);
  const clamp = (step: number) => Math.min(steps, Math.max(0, step));
  for (const { atMs, sessionMs } of day) {
    const start = Math.ceil(atMs / sc.stepMs);
    const from = clamp(start);
    const to = clamp(start + Math.ceil(sessionMs / sc.stepMs));
    if (to <= from) continue;
    delta[from] = (delta[from] ?? 0) + 1;
    delta[to] = (delta[to] ?? 0) - 1;
  }
  const running: number[] = [];
  let now = 0;
  for (let step = 0; step < steps; step++) {
    now += delta[step] ?? 0;
    running.push(now);
  }
  return running;
}

/** Whole nodes a step needs for each count of `podsPerStep` with `free` slots besides. */
function nodesPerStep(sc: Scenario, podsPerStep: readonly number[], free: number): number[] {
  const slots = gameSlotsPerNode(sc);
  return podsPerStep.map((pods) => Math.max(sc.scale.minNodes, Math.ceil((pods + free) / slots)));
}

/**
 * The node-hours of `podsPerStep` game servers (one count a step of the measured day) packed
 * perfectly onto whole nodes with `free` slots kept besides, nodes ready when asked for.
 */
export function packedNodeHours(sc: Scenario, podsPerStep: readonly number[], free = 0): number {
  const nodeSteps = nodesPerStep(sc, podsPerStep, free).reduce((sum, nodes) => sum + nodes, 0);
  return round((nodeSteps * sc.stepMs) / HOUR, 2);
}

/**
 * The clairvoyant schedule's node-hours for `podsPerStep` with `free` slots kept besides. Nodes
 * are alike, so the cheapest schedule is found level by level: the k-th node is needed on the
 * steps that need at least k, and each stretch of them costs its length, plus a boot before it
 * (only its part within the day, for a stretch at the day's start) or, after an earlier stretch,
 * the gap between them where that is shorter than a boot (the node is kept instead).
 */
export function clairvoyantNodeHours(
  sc: Scenario,
  podsPerStep: readonly number[],
  free = 0,
): number {
  const need = nodesPerStep(sc, podsPerStep, free);
  const bootSteps = Math.ceil(sc.bootDelayMs / sc.stepMs);
  const top = need.reduce((most, n) => Math.max(most, n), 0);
  let nodeSteps = 0;
  for (let level = 1; level <= top; level++) {
    let endOfLast: number | undefined;
    need.forEach((nodes, step) => {
      if (nodes < level) return;
      const lead = endOfLast === undefined ? step : step - endOfLast;
      nodeSteps += 1 + Math.min(bootSteps, lead);
      endOfLast = step + 1;
    });
  }
  return round((nodeSteps * sc.stepMs) / HOUR, 2);
}

/** The day's floors (see the module comment). */
export function nodeHourFloors(sc: Scenario, day: readonly Arrival[]): NodeHourFloors {
  const running = runningPerStep(sc, day);
  const burst = sc.bursts.maxSize;
  return {
    packed: packedNodeHours(sc, running),
    clairvoyant: clairvoyantNodeHours(sc, running),
    noForesight: { burst, nodeHours: clairvoyantNodeHours(sc, running, burst) },
  };
}

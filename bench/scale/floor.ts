/**
 * What a day's arrivals alone say about a node-hours target, before any scaler runs:
 * - `packed`: a floor no scaler can go under while no game waits. At every step just enough nodes
 *   for the games running then, packed perfectly, as if games could move between nodes and a node
 *   were ready the moment it is asked for.
 * - `largestRise`: the most the running games grow, net of sessions ending, within one node's
 *   boot time. A node asked for when a rise starts is ready only after it: a scaler that keeps
 *   every game from waiting, without knowing when the next rise comes, keeps that much room free.
 * - `freeSlotsWithin(budget)`: the most free slots perfect packing can keep at every step and
 *   still stay within `budget` node-hours. Set against `largestRise`, it says whether a target
 *   leaves room for the headroom zero waits need.
 * Node-hours are counted as the day counts them (`simulateDay`): every node, each step, at least
 * `scale.minNodes`.
 */
import type { Arrival } from '../../sim/arrivals.js';
import { HOUR, round, type Scenario } from './day.js';
import { gameSlotsPerNode } from './pending.js';

/** A day's floor and rise (see the module comment). */
export interface NodeHourFloors {
  readonly packed: number;
  readonly largestRise: number;
  /** The node-hours of perfect packing that keeps `free` slots free at every step. */
  packedWithFree(free: number): number;
  /** The most free slots (at every step) perfect packing keeps within `budget`; -1 if none. */
  freeSlotsWithin(budget: number): number;
}

/** Games running at each step of the measured day, had none of them waited. */
export function runningPerStep(sc: Scenario, day: readonly Arrival[]): number[] {
  const steps = Math.ceil(sc.durationMs / sc.stepMs);
  // +1 at the step a game starts, -1 at the step it ends; a running sum gives the count.
  const delta = new Array<number>(steps + 1).fill(0);
  const stepOf = (ms: number) => Math.min(steps, Math.max(0, Math.ceil(ms / sc.stepMs)));
  for (const { atMs, sessionMs } of day) {
    const from = stepOf(atMs);
    const to = stepOf(atMs + sessionMs);
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

/** The largest net rise of `running` within `windowSteps` steps of any step. */
export function largestRise(running: readonly number[], windowSteps: number): number {
  let most = 0;
  for (let from = 0; from < running.length; from++) {
    const base = running[from] ?? 0;
    const last = Math.min(running.length - 1, from + windowSteps);
    for (let to = from + 1; to <= last; to++) most = Math.max(most, (running[to] ?? 0) - base);
  }
  return most;
}

/**
 * The node-hours of `podsPerStep` game servers (one count a step of the measured day) packed
 * perfectly onto whole nodes with `free` slots kept besides, as `DayOutcome.nodeHours` counts
 * them: at least `scale.minNodes` a step.
 */
export function packedNodeHours(sc: Scenario, podsPerStep: readonly number[], free = 0): number {
  const slots = gameSlotsPerNode(sc);
  let nodeSteps = 0;
  for (const pods of podsPerStep) {
    nodeSteps += Math.max(sc.scale.minNodes, Math.ceil((pods + free) / slots));
  }
  return round((nodeSteps * sc.stepMs) / HOUR, 2);
}

/** The day's floor and rise (see the module comment), in node-hours as `DayOutcome.nodeHours`. */
export function nodeHourFloors(sc: Scenario, day: readonly Arrival[]): NodeHourFloors {
  const slots = gameSlotsPerNode(sc);
  const running = runningPerStep(sc, day);
  const packedWithFree = (free: number) => packedNodeHours(sc, running, free);
  return {
    packed: packedWithFree(0),
    largestRise: largestRise(running, Math.ceil(sc.bootDelayMs / sc.stepMs)),
    packedWithFree,
    freeSlotsWithin(budget) {
      // Node-hours only grow with the room kept: the first count over budget ends the search.
      let free = -1;
      while (free < slots * sc.scale.maxNodes && packedWithFree(free + 1) <= budget) free++;
      return free;
    },
  };
}

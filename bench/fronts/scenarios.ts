/**
 * The fronts benchmark's scenarios, the same events for every system:
 * - `nlb-burst`: 100 game servers behind an NLB created at once, a pool of two NLBs;
 * - `accelerator-burst`: 100 game servers behind the accelerator created at once;
 * - `chaos`: 60 behind NLBs and 40 behind the accelerator at once, with API throttling for the
 *   first minute, three listeners someone else keeps on the first NLB (so it reaches its 50
 *   listeners before the pool's ports run out), three CREATEs whose pods never appear, the
 *   controller process dying twice (during the burst's binds and later), 30 game servers deleted
 *   and 20 new ones created on the freed ports; then repair's grace;
 * - `steady`: an hour of game servers arriving one at a time, half behind each front, each
 *   playing 10 to 20 minutes.
 */
import type { FrontKind } from '../../shared/fronts/model.js';
import type { Scenario } from './harness.js';
import {
  burst,
  type GameServerPlan,
  gameServer,
  makeNodes,
  type NodeSpec,
  SLOT_HOST_PORTS,
  steady,
} from './workload.js';

/** Game servers in each burst. */
export const BURST_SIZE = 100;
/** Nodes of the cluster: 16 game servers each, room for every scenario's peak. */
const NODES = 8;
/** The burst lands 1 s into the run. */
const BURST_AT_MS = 1_000;
/**
 * How long the runs are watched after the last event. A burst is watched 5 minutes, so a system
 * that takes minutes is measured rather than cut off. The chaos run's orphans are counted 10
 * minutes after its last event: past berth's repair grace (a fronts pass every 60 s, a 90 s
 * CREATE grace) and past the fronts queue's 540 s visibility timeout, so the work a crashed
 * invocation held is delivered again inside the run.
 */
export const BURST_WATCH_MS = 300_000;
export const CHAOS_GRACE_MS = 600_000;

/** A burst of `BURST_SIZE` game servers behind `front`. */
export function burstScenario(front: FrontKind, size = BURST_SIZE): Scenario {
  return {
    name: `${front}-burst`,
    plans: burst(front === 'nlb' ? 'nlb' : 'acc', size, front, BURST_AT_MS),
    nodes: makeNodes(NODES),
    loadBalancers: 2,
    graceMs: BURST_WATCH_MS,
  };
}

/** The chaos run, scaled by `scale` (1 for the benchmark; smaller for a quick test). */
export function chaosScenario(scale = 1): Scenario {
  const n = (count: number) => Math.max(1, Math.round(count * scale));
  const plans: GameServerPlan[] = [];
  const add = (prefix: string, count: number, front: FrontKind, at: number, deleteAt?: number) => {
    for (let i = 0; i < count; i++) {
      plans.push({
        gs: gameServer(prefix, i, front),
        createAt: at,
        ...(deleteAt !== undefined && i < n(front === 'nlb' ? 20 : 10) ? { deleteAt } : {}),
      });
    }
  };
  add('nlb', n(60), 'nlb', BURST_AT_MS, 120_000);
  add('acc', n(40), 'accelerator', BURST_AT_MS, 120_000);
  for (let i = 0; i < 3; i++) {
    plans.push({ gs: gameServer('refused', i, 'nlb'), createAt: BURST_AT_MS, neverAppears: true });
  }
  add('wave', n(20), 'nlb', 150_000);
  return {
    name: 'chaos',
    plans,
    nodes: makeNodes(NODES),
    loadBalancers: 2,
    faults: {
      throttle: { from: 0, to: 60_000, rate: 0.3 },
      crashAt: [7_000, 100_000],
      foreignListeners: 3,
    },
    graceMs: CHAOS_GRACE_MS,
  };
}

/** The steady hour: a game server every 12 s on average, about 75 playing at once. */
export const STEADY_MS = 3_600_000;
const STEADY_MEAN_GAP_MS = 12_000;

/** The steady stretch, `durationMs` long. */
export function steadyScenario(durationMs = STEADY_MS): Scenario {
  return {
    name: 'steady',
    plans: steady(durationMs, STEADY_MEAN_GAP_MS),
    nodes: makeNodes(NODES),
    loadBalancers: 2,
    graceMs: CHAOS_GRACE_MS,
  };
}

/** Every host port of the slot range: the seats of each node in slots mode. */
export const SLOT_SEATS: readonly number[] = Array.from(
  { length: SLOT_HOST_PORTS.to - SLOT_HOST_PORTS.from + 1 },
  (_, i) => SLOT_HOST_PORTS.from + i,
);

const MINUTE = 60_000;
/** The slots burst lands on nodes Ready this long. */
export const SLOTS_BURST_AT_MS = 15 * MINUTE;

/**
 * NLB slots (berth's `fronts.nlb.mode: slots`): 8 nodes join at the start (a cold pool: every
 * chain made from nothing); 100 game servers at once at 15 minutes; two nodes join at 16 minutes
 * (new chains), node-7 (empty) leaves at 17 minutes and node-10 joins at 18 (node-7's chains
 * again). Four NLBs: room for 10 nodes' 16 slots.
 */
export function slotsScenario(): Scenario {
  const nodes: NodeSpec[] = makeNodes(11).map((node, i) => {
    if (i === 7) return { ...node, goneAt: 17 * MINUTE };
    if (i === 8 || i === 9) return { ...node, readyAt: 16 * MINUTE };
    if (i === 10) return { ...node, readyAt: 18 * MINUTE };
    return node;
  });
  return {
    name: 'nlb-slots',
    plans: burst('slot', BURST_SIZE, 'nlb', SLOTS_BURST_AT_MS),
    nodes,
    loadBalancers: 4,
    graceMs: 8 * MINUTE,
    seats: SLOT_SEATS,
  };
}

/**
 * The chaos run in slots mode: the chaos run's game servers and faults, bound while the pool is
 * still cold (their addresses come with their seats' chains), with node churn: node-7 leaves at
 * 4 minutes while game servers may still be on it, and node-8 joins at 5.
 */
export function slotsChaosScenario(): Scenario {
  const chaos = chaosScenario();
  const nodes: NodeSpec[] = makeNodes(9).map((node, i) => {
    if (i === 7) return { ...node, goneAt: 4 * MINUTE };
    if (i === 8) return { ...node, readyAt: 5 * MINUTE };
    return node;
  });
  return { ...chaos, name: 'chaos-slots', nodes, loadBalancers: 4, seats: SLOT_SEATS };
}

/** Node replacements in the churn run, one every `CHURN_EVERY_MS` from `CHURN_FROM_MS`. */
export const CHURN_REPLACEMENTS = 24;
const CHURN_FROM_MS = 20 * MINUTE;
const CHURN_EVERY_MS = 10 * MINUTE;

/**
 * NLB slots over hours of node churn, the way a fleet's nodes come and go (scale-down, spot
 * interruptions, upgrades): 8 nodes from the start, then every 10 minutes from minute 20 the
 * oldest node leaves and a new one joins, 24 times. Measures what a slot costs a node lifetime
 * once chains are reused, and how soon each new node's slots serve.
 */
export function slotsChurnScenario(): Scenario {
  const nodes: NodeSpec[] = makeNodes(8 + CHURN_REPLACEMENTS).map((node, i) => {
    const joins = i < 8 ? 0 : CHURN_FROM_MS + (i - 8) * CHURN_EVERY_MS;
    const leaves = i < CHURN_REPLACEMENTS ? CHURN_FROM_MS + i * CHURN_EVERY_MS : undefined;
    return {
      ...node,
      ...(joins > 0 ? { readyAt: joins } : {}),
      ...(leaves !== undefined ? { goneAt: leaves } : {}),
    };
  });
  return {
    name: 'nlb-slots-churn',
    plans: [],
    nodes,
    loadBalancers: 4,
    graceMs: 8 * MINUTE,
    seats: SLOT_SEATS,
  };
}

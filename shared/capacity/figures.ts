/**
 * The free capacity each pass records of its cluster when it ends, so a matchmaker can ask one
 * question of every cluster without berth reading any cluster for it: the passes have already
 * listed what the figures count. Pure: each builder turns what a pass holds into its figures.
 */
import type { HostPortRangeUsage } from '../hostports/allocator.js';
import type { SlotTally } from '../scale/plan.js';
import type { ClusterSnapshot } from '../scale/snapshot.js';

/** The passes that record figures: each records only its own, replacing its last. */
export const CAPACITY_SOURCES = ['scale', 'hostPorts', 'fronts', 'eni'] as const;
/** One of `CAPACITY_SOURCES`. */
export type CapacitySource = (typeof CAPACITY_SOURCES)[number];

/** A fleet's name where a pod has none (a game server no Agones or OpenKruise fleet owns). */
export const NO_FLEET = '';
/**
 * Fleets a record names at most; the rest are summed under `OTHER_FLEETS`, so a record stays one
 * small item however many fleets a cluster runs.
 */
export const MAX_FLEETS = 50;
/** Where the fleets past `MAX_FLEETS` are counted. */
export const OTHER_FLEETS = '*';

/** What the scale pass saw of the game-server nodes, at its plan. */
export interface ScaleFigures {
  readonly source: 'scale';
  readonly atMs: number;
  /** Free game-server slots on Ready, schedulable nodes. */
  readonly freeSlots: number;
  /** Ready game servers (holding no players), by fleet. */
  readonly readyByFleet: Readonly<Record<string, number>>;
  /** Game servers waiting for a node. */
  readonly pendingGameServers: number;
  /** Slots of nodes booting or asked for. */
  readonly slotsComing: number;
  /** The free slots the pass keeps (its buffer). */
  readonly buffer: number;
  /** Ready, schedulable game-server nodes: what every host port range spans. */
  readonly nodes: number;
}

/** One host port range's use, as the repair pass counted it. */
export interface HostPortRangeFigures {
  readonly range: string;
  readonly size: number;
  /** (pod, port) uses held. */
  readonly used: number;
  readonly largestFreeBlock: number;
}

/** The host port ranges, after the repair pass. */
export interface HostPortFigures {
  readonly source: 'hostPorts';
  readonly atMs: number;
  readonly ranges: readonly HostPortRangeFigures[];
}

/** The public fronts a new game server could take, after the fronts pass. */
export interface FrontFigures {
  readonly source: 'fronts';
  readonly atMs: number;
  /** `listeners`: NLB listener ports of the pool; `seats`: NLB slots serving on the nodes. */
  readonly kind: 'listeners' | 'seats';
  readonly total: number;
  readonly free: number;
}

/** The ENI pools' idle addresses, after the ENI pass. */
export interface EniFigures {
  readonly source: 'eni';
  readonly atMs: number;
  /** Addresses assigned to nodes and held by no pod. */
  readonly freeAddresses: number;
  readonly pools: number;
}

/** Figures of one source. */
export type SourceFigures = ScaleFigures | HostPortFigures | FrontFigures | EniFigures;

/** Every source's latest figures for one cluster (a source that never recorded is absent). */
export type CapacityRecord = {
  readonly [S in CapacitySource]?: Extract<SourceFigures, { source: S }>;
};

/** Ready game servers counted by fleet, the largest `MAX_FLEETS` named and the rest summed. */
export function byFleet(fleets: Iterable<string>): Record<string, number> {
  const counts = new Map<string, number>();
  for (const fleet of fleets) counts.set(fleet, (counts.get(fleet) ?? 0) + 1);
  const ordered = [...counts].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  const kept = Object.fromEntries(ordered.slice(0, MAX_FLEETS));
  const rest = ordered.slice(MAX_FLEETS).reduce((sum, [, n]) => sum + n, 0);
  return rest > 0 ? { ...kept, [OTHER_FLEETS]: rest } : kept;
}

/** The host port figures of the ranges' usage. */
export function hostPortFigures(
  usage: readonly HostPortRangeUsage[],
  atMs: number,
): HostPortFigures {
  return {
    source: 'hostPorts',
    atMs,
    ranges: usage.map(({ name, size, used, largestFreeBlock }) => ({
      range: name,
      size,
      used,
      largestFreeBlock,
    })),
  };
}

/**
 * The scale figures of one plan: its tally's slots and buffer, the Ready game servers not being
 * deleted (a matchmaker can allocate one wherever it runs), and the nodes a pod can land on.
 */
export function scaleFigures(
  tally: SlotTally,
  snapshot: Pick<ClusterSnapshot, 'nodes' | 'gameServers' | 'pendingGameServers'>,
  atMs: number,
): ScaleFigures {
  const ready = snapshot.gameServers.filter((gs) => gs.state === 'ready' && !gs.deleting);
  return {
    source: 'scale',
    atMs,
    freeSlots: tally.free,
    readyByFleet: byFleet(ready.map((gs) => gs.fleet ?? NO_FLEET)),
    pendingGameServers: snapshot.pendingGameServers.length,
    slotsComing: tally.coming,
    buffer: tally.buffer.slots,
    nodes: snapshot.nodes.filter((n) => n.ready && !n.unschedulable && !n.deleting).length,
  };
}

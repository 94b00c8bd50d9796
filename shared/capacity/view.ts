/**
 * The capacity view a matchmaker reads: for each cluster, what its passes last recorded, each
 * figure with its age, and the cluster marked stale when a pass it runs has not recorded within
 * two of its intervals (the figures may then be wrong in either direction). Pure.
 */
import type {
  CapacityRecord,
  CapacitySource,
  FrontFigures,
  HostPortRangeFigures,
} from './figures.js';

/** How often each pass a cluster runs records, in seconds; a pass it does not run is absent. */
export type RecordingIntervals = Readonly<Partial<Record<CapacitySource, number>>>;

/** A pass is late once its figures are this many intervals old. */
export const STALE_AFTER_INTERVALS = 2;

/** Game servers a match can go to at once, and where they are. */
export interface GameServerCapacity {
  readonly ready: number;
  readonly readyByFleet: Readonly<Record<string, number>>;
  /** Free slots: a game server started now is placed at once. */
  readonly freeSlots: number;
  readonly pending: number;
  readonly ageSeconds: number;
}

/** The scale pass's buffer and whether nodes are on their way. */
export interface BufferCapacity {
  readonly buffer: number;
  readonly nodesComing: boolean;
  readonly slotsComing: number;
  readonly nodes: number;
  readonly ageSeconds: number;
}

/** A host port range: `free` counts (node, port) pairs no pod uses on the Ready nodes. */
export interface HostPortRangeCapacity extends HostPortRangeFigures {
  /** Absent until the scale pass has counted the nodes. */
  readonly free?: number;
}

/** One cluster's view. */
export interface ClusterCapacity {
  readonly cluster: string;
  readonly stale: boolean;
  /** What made it stale: `scale: never recorded`, `eni: 190 s old, expected every 60 s`. */
  readonly staleBecause: readonly string[];
  readonly gameServers?: GameServerCapacity;
  readonly buffer?: BufferCapacity;
  readonly hostPorts?: {
    readonly ranges: readonly HostPortRangeCapacity[];
    readonly ageSeconds: number;
  };
  readonly fronts?: Omit<FrontFigures, 'source' | 'atMs'> & { readonly ageSeconds: number };
  readonly eni?: {
    readonly freeAddresses: number;
    readonly pools: number;
    readonly ageSeconds: number;
  };
}

/** The answer of `GET /v1/capacity`. */
export interface CapacityView {
  /** RFC 3339 time of the answer: every age is counted to it. */
  readonly at: string;
  readonly clusters: readonly ClusterCapacity[];
}

/** One cluster as the view needs it: its name, its record and the passes it runs. */
export interface ClusterRecording {
  readonly cluster: string;
  readonly record: CapacityRecord;
  readonly intervals: RecordingIntervals;
}

const ageOf = (atMs: number, nowMs: number) => Math.max(0, Math.round((nowMs - atMs) / 1000));

/** One cluster's view at `nowMs`. */
export function clusterCapacity(recording: ClusterRecording, nowMs: number): ClusterCapacity {
  const { cluster, record, intervals } = recording;
  const staleBecause: string[] = [];
  for (const [source, seconds] of Object.entries(intervals) as [CapacitySource, number][]) {
    const figures = record[source];
    if (figures === undefined) staleBecause.push(`${source}: never recorded`);
    else if (nowMs - figures.atMs > STALE_AFTER_INTERVALS * seconds * 1000) {
      staleBecause.push(
        `${source}: ${ageOf(figures.atMs, nowMs)} s old, expected every ${seconds} s`,
      );
    }
  }
  const { scale, hostPorts, fronts, eni } = record;
  return {
    cluster,
    stale: staleBecause.length > 0,
    staleBecause,
    ...(scale && {
      gameServers: {
        ready: Object.values(scale.readyByFleet).reduce((sum, n) => sum + n, 0),
        readyByFleet: scale.readyByFleet,
        freeSlots: scale.freeSlots,
        pending: scale.pendingGameServers,
        ageSeconds: ageOf(scale.atMs, nowMs),
      },
      buffer: {
        buffer: scale.buffer,
        nodesComing: scale.slotsComing > 0,
        slotsComing: scale.slotsComing,
        nodes: scale.nodes,
        ageSeconds: ageOf(scale.atMs, nowMs),
      },
    }),
    ...(hostPorts && {
      hostPorts: {
        ranges: hostPorts.ranges.map((range) =>
          scale === undefined
            ? range
            : { ...range, free: Math.max(0, range.size * scale.nodes - range.used) },
        ),
        ageSeconds: ageOf(hostPorts.atMs, nowMs),
      },
    }),
    ...(fronts && {
      fronts: {
        kind: fronts.kind,
        total: fronts.total,
        free: fronts.free,
        ageSeconds: ageOf(fronts.atMs, nowMs),
      },
    }),
    ...(eni && {
      eni: {
        freeAddresses: eni.freeAddresses,
        pools: eni.pools,
        ageSeconds: ageOf(eni.atMs, nowMs),
      },
    }),
  };
}

/** Every cluster's view at `nowMs`, in the order given. */
export function capacityView(recordings: readonly ClusterRecording[], nowMs: number): CapacityView {
  return {
    at: new Date(nowMs).toISOString(),
    clusters: recordings.map((recording) => clusterCapacity(recording, nowMs)),
  };
}

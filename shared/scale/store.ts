/**
 * The scale pass's memory as the store keeps it (one item per cluster, because every Lambda
 * invocation starts blank), and the store's interface; the scale-up trigger's state and its
 * store likewise. The pure folds over them live in memory.ts, rise.ts, sessions.ts and trigger.ts.
 */

/** A count at an instant: a level sampled by a pass, or a rise it measured. */
export interface Sample {
  readonly atMs: number;
  readonly count: number;
}

/** One followed game server: when its pod was created, when a pass last saw it allocated. */
export interface TrackedSession {
  readonly createdAtMs: number;
  readonly lastSeenMs: number;
}

/** What the scale memory keeps of sessions. */
export interface SessionMemory {
  /** Followed allocated game servers by uid (or namespace/name). */
  readonly tracked: Readonly<Record<string, TrackedSession>>;
  /** Measured session lengths, newest last. */
  readonly lengthsMs: readonly number[];
}

/** One pass's arrivals: game servers created since the pass before. */
export interface PassArrivals {
  readonly atMs: number;
  readonly count: number;
}

/** Growth asked for and not yet arrived: when, and the node count it waits for. */
export interface AwaitedGrowth {
  readonly atMs: number;
  readonly toNodes: number;
}

/** What the memory keeps of the week's rises. */
export interface RiseProfile {
  /**
   * The largest rise of each slot of the week at its last past occurrence (index: the slot's
   * number since the epoch, modulo a week); 0 for a slot never seen, which forecasts nothing
   * either (a number a slot keeps the memory item small: it is written every pass).
   */
  readonly slots: readonly number[];
  /** The slot under way (its number since the epoch) and its largest rise so far. */
  readonly current?: { readonly slot: number; readonly count: number };
}

/** The scale pass's memory. */
export interface ScaleMemory {
  /** When the pass first saw the surplus that still lasts; absent while there is none. */
  readonly surplusSinceMs?: number;
  /** When the last pass ran: the next counts the game servers created after it. */
  readonly lastPassAtMs?: number;
  /** When the pass before it ran; absent on the first pass berth makes for the cluster. */
  readonly previousPassAtMs?: number;
  /** Arrivals of the passes within the demand window, oldest first. */
  readonly arrivals: readonly PassArrivals[];
  /**
   * The passes of the burst window that no later pass matched, oldest (and busiest) first: the
   * first is the window's busiest pass. A sliding-window maximum in a few entries.
   */
  readonly burstPeaks: readonly PassArrivals[];
  /** The burst window's busiest pass before this one's arrivals were counted. */
  readonly priorPeak?: number;
  /** Game servers (bound or pending) each pass of the demand window saw, oldest first (rise.ts). */
  readonly levels?: readonly Sample[];
  /**
   * The burst window's largest net rises of game servers within a horizon that the week's
   * profile did not forecast, as `burstPeaks`: the first is the reserve the buffer keeps
   * (demand.ts).
   */
  readonly risePeaks?: readonly Sample[];
  /** The week's rises by quarter-hour, for the forecast (profile.ts). */
  readonly riseProfile?: RiseProfile;
  readonly growth?: AwaitedGrowth;
  /** Provisioning times observed (growth asked → its last node Ready), newest last. */
  readonly provisionMs: readonly number[];
  /** When berth started removing nodes within the last hour. */
  readonly removalsMs: readonly number[];
  /** Measured session lengths and the allocated game servers followed (sessions.ts). */
  readonly sessions?: SessionMemory;
}

/** A cluster's memory before its first pass. */
export const EMPTY_SCALE_MEMORY: ScaleMemory = {
  arrivals: [],
  burstPeaks: [],
  provisionMs: [],
  removalsMs: [],
};

/** Where the memory lives; loaded and saved by the pass that holds the scale lease. */
export interface ScaleMemoryStore {
  load(): Promise<ScaleMemory>;
  save(memory: ScaleMemory): Promise<void>;
}

/** What the trigger knows between passes. */
export interface TriggerState {
  /** Slots free or coming beyond the buffer, as the last pass counted them (may be negative). */
  readonly slack: number;
  /** When the last pass ran or was asked for. */
  readonly passAtMs: number;
  /** Game servers admitted since, less those deleted: the net rise the slack must absorb. */
  readonly admitted: number;
}

/** Before any pass: the first admission asks for one. */
export const NO_PASS_YET: TriggerState = {
  slack: 0,
  passAtMs: Number.NEGATIVE_INFINITY,
  admitted: 0,
};

/**
 * The scale-up trigger's state where admissions run in many processes (every Lambda container,
 * every replica of the local server): one item per cluster, counted by atomic adds, so no
 * admission is lost between processes and a burst asks for one pass (trigger.ts).
 */
export interface ScaleTriggerStore {
  /** A pass planned at `atMs` left `slack`: the admissions after it count against that. */
  passed(slack: number, atMs: number): Promise<void>;
  /** Counts `count` game servers admitted (deleted, when negative); answers the state after. */
  admitted(count: number): Promise<TriggerState>;
  /**
   * Claims the triggered pass wanted at `atMs`: true for exactly one caller while no pass ran or
   * was claimed within `debounceMs` before it.
   */
  claim(atMs: number, debounceMs: number): Promise<boolean>;
}

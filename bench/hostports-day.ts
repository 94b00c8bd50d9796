/**
 * A full day of game sessions in one host port range, with blocks among single ports: the
 * choice policy berth runs (`planPorts`), sessions one after another as one process serves
 * them, counts in memory. Reports denied blocks, how often a block had to take one level of
 * slack, the widest spread of the counts, and the largest free block (the longest run at the
 * lowest count) as the range fills and empties.
 */

import { planPorts } from '../shared/hostports/allocator.js';
import { largestFreeBlock, type Random } from '../shared/hostports/choice.js';
import { HostPortBlockError } from '../shared/hostports/errors.js';
import type { HostPortRange } from '../shared/hostports/model.js';
import type { PortSpec } from '../shared/hostports/spec.js';
import { exponentialLength, poissonArrivals } from '../sim/arrivals.js';
import { percentile } from './support/stats.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/** The day's load: concurrent sessions follow a daily curve between trough and peak. */
export const DAY_LOAD = {
  minutes: 24 * 60,
  troughSessions: 1000,
  peakSessions: 3000,
  meanSessionMinutes: 40,
  /** Share of sessions by block size (undefined: a single port). */
  mix: [
    { count: undefined, share: 0.8 },
    { count: 4, share: 0.15 },
    { count: 16, share: 0.05 },
  ],
  sampleEveryMinutes: 10,
} as const;

const RANGE: HostPortRange = { name: 'default', first: 7000, size: 1001 };
const PORTS_PER_ITEM = 64;

/** One block size's day. */
export interface DayKind {
  readonly kind: string;
  readonly allocations: number;
  readonly denied: number;
  /**
   * Allocations that took a port above the lowest count while ports at the lowest count stayed
   * uncovered (a block with one level of slack: counts then differ by two for a while).
   */
  readonly tookSlack: number;
}

/** What the day measured. */
export interface BlockDayResult {
  readonly sessions: number;
  readonly peakPortsHeld: number;
  readonly kinds: readonly DayKind[];
  /** The widest difference between two counts after an allocation (releases included). */
  readonly maxSpread: number;
  readonly largestFreeBlock: {
    readonly min: number;
    readonly p5: number;
    readonly p50: number;
    /** Samples (every 10 minutes) at which no block of 16 at the lowest count was left. */
    readonly samplesUnder16: number;
    readonly samples: number;
  };
}

function spec(count: number | undefined): PortSpec[] {
  return [
    {
      index: 0,
      name: 'game',
      container: { field: 'containers', index: 0, name: 'game' },
      portPolicy: 'Dynamic',
      protocol: 'UDP',
      containerPort: 7777,
      range: RANGE.name,
      ...(count === undefined ? {} : { count }),
    },
  ];
}

/** Runs the day with `random` (seeded by the caller for a reproducible run). */
export function blockDay(
  random: Random,
  mix: readonly { readonly count: number | undefined; readonly share: number }[] = DAY_LOAD.mix,
): BlockDayResult {
  const counts = new Array<number>(RANGE.size).fill(0);
  const ending: number[][] = Array.from({ length: DAY_LOAD.minutes }, () => []);
  const endingPorts = new Map<number, number[]>();
  let sessionSeq = 0;
  const kinds = mix.map((m) => ({
    kind: m.count === undefined ? 'single port' : `block of ${m.count}`,
    count: m.count,
    allocations: 0,
    denied: 0,
    tookSlack: 0,
  }));
  let maxSpread = 0;
  let peakPortsHeld = 0;
  let held = 0;
  const largest: number[] = [];
  const spreadOf = () => {
    let low = Number.POSITIVE_INFINITY;
    let high = 0;
    for (const c of counts) {
      low = Math.min(low, c);
      high = Math.max(high, c);
    }
    return high - low;
  };
  // Concurrent sessions follow a cosine between trough (04:00) and peak (16:00): arrivals keep them.
  const { troughSessions: low, peakSessions: high, meanSessionMinutes: mean } = DAY_LOAD;
  const perMinute = (atMs: number) =>
    (low + ((high - low) * (1 + Math.cos(((atMs / HOUR_MS - 16) / 24) * 2 * Math.PI))) / 2) / mean;
  const rate = { fromMs: 0, toMs: DAY_LOAD.minutes * MINUTE_MS, stepMs: MINUTE_MS, perMinute };
  const day = poissonArrivals(rate, exponentialLength(mean * MINUTE_MS, MINUTE_MS), random);
  let next = 0;
  for (let minute = 0; minute < DAY_LOAD.minutes; minute++) {
    for (const id of ending[minute] ?? []) {
      for (const port of endingPorts.get(id) ?? [])
        counts[port - RANGE.first] = (counts[port - RANGE.first] ?? 0) - 1;
      held -= endingPorts.get(id)?.length ?? 0;
      endingPorts.delete(id);
    }
    for (
      let arrival = day[next];
      arrival && arrival.atMs < (minute + 1) * MINUTE_MS;
      arrival = day[++next]
    ) {
      let pick = random();
      const kind = kinds.find((_, i) => {
        pick -= mix[i]?.share ?? 0;
        return pick < 0;
      });
      if (!kind) continue;
      const observed = { range: RANGE, counts, portsPerItem: PORTS_PER_ITEM };
      let ports: number[];
      try {
        ports = planPorts(spec(kind.count), new Map([[RANGE.name, observed]]), random).map(
          (h) => h.port,
        );
      } catch (error) {
        if (!(error instanceof HostPortBlockError)) throw error;
        kind.denied++;
        continue;
      }
      // Slack: a port above the lowest count while ports at the lowest count stay uncovered.
      const lowest = counts.reduce((low, c) => Math.min(low, c), Number.POSITIVE_INFINITY);
      const atLowest = counts.filter((c) => c === lowest).length;
      const before = ports.map((port) => counts[port - RANGE.first] ?? 0);
      const covered = before.filter((c) => c === lowest).length;
      if (before.some((c) => c > lowest) && covered < atLowest) kind.tookSlack++;
      for (const port of ports) counts[port - RANGE.first] = (counts[port - RANGE.first] ?? 0) + 1;
      held += ports.length;
      peakPortsHeld = Math.max(peakPortsHeld, held);
      kind.allocations++;
      maxSpread = Math.max(maxSpread, spreadOf());
      const id = sessionSeq++;
      const end = minute + Math.round(arrival.sessionMs / MINUTE_MS);
      if (end < DAY_LOAD.minutes) {
        ending[end]?.push(id);
        endingPorts.set(id, ports);
      }
    }
    if (minute % DAY_LOAD.sampleEveryMinutes === 0) largest.push(largestFreeBlock(counts));
  }
  return {
    sessions: sessionSeq,
    peakPortsHeld,
    kinds: kinds.map(({ count: _count, ...rest }) => rest),
    maxSpread,
    largestFreeBlock: {
      min: Math.min(...largest),
      p5: percentile(largest, 5),
      p50: percentile(largest, 50),
      samplesUnder16: largest.filter((l) => l < 16).length,
      samples: largest.length,
    },
  };
}

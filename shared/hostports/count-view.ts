/**
 * What one process knows of the host port use counts: each range read whole now and then, kept
 * current by the answer of every write it makes (a count write returns its block as it left it,
 * or as it found it when the write was refused), with the uses of its own allocations still in
 * flight added on top. Allocation chooses from this view and reads nothing while it is fresh.
 *
 * The view is never trusted for correctness: every count write is conditioned on the count the
 * choice saw, so a stale view costs a refused write (whose answer refreshes the view), never a
 * wrong one. Freshness matters only for the spread: a view misses other processes' releases, so
 * it is read whole again once older than `maxAgeMs`. Allocations in flight in this process are
 * counted at once, so concurrent pods of one process pick different ports instead of racing for
 * the same lowest-count one.
 *
 * A view read again because it aged is read eventually consistent (half the read units: it may
 * miss the last second's writes, as an aged view misses ten seconds' worth, and every write
 * re-checks it); a first read, and a read after a refused write proved the view stale, are strong.
 * Only counts from a strong read or a write's answer tell an allocation that they include every
 * allocation finished before it began (`seenSince`).
 */
import type { HostPortRange } from './model.js';
import type { BlockCounts, CountsRead, RangeCounts } from './store.js';

/** A port an allocation is writing now: counted in the view until its write is answered. */
export interface PortInFlight {
  readonly range: string;
  readonly port: number;
}

/** How long a whole read of a range serves before the range is read again. */
export const COUNT_VIEW_MAX_AGE_MS = 10_000;

interface RangeView {
  readonly range: HostPortRange;
  /** Stored counts as last seen, by offset from `range.first`. */
  readonly counts: number[];
  /** The stamp of the request whose answer set each count: a later answer wins, an older loses. */
  readonly stamps: number[];
  /** The stamp of each count's answer when strongly consistent (a strong read, a write); else 0. */
  readonly confirmed: number[];
  readonly readAt: number;
  /** A refused write proved the view stale: the next read is strong. */
  readonly proven?: boolean;
  readonly portsPerItem?: number;
  /** Offsets held by pods berth never admitted. */
  readonly foreign: Set<number>;
}

/** The process's view of every range it allocates from. */
export class CountView {
  readonly #now: () => number;
  readonly #maxAgeMs: number;
  readonly #ranges = new Map<string, RangeView>();
  readonly #reading = new Map<string, Promise<RangeView>>();
  /** `<range>#<port>` → uses in flight. */
  readonly #inFlight = new Map<string, number>();
  /** Stamps requests in the order they are sent. */
  #sent = 0;

  constructor(options: { readonly now: () => number; readonly maxAgeMs?: number }) {
    this.#now = options.now;
    this.#maxAgeMs = options.maxAgeMs ?? COUNT_VIEW_MAX_AGE_MS;
  }

  /**
   * Makes the view of `range` fresh: reads it whole with `read` when the view has none or it is
   * older than the maximum age (eventually consistent when it only aged); callers that ask while
   * a read is running wait for that one read.
   */
  async refresh(
    range: HostPortRange,
    read: (consistency: CountsRead) => Promise<RangeCounts>,
  ): Promise<void> {
    const known = this.#ranges.get(range.name);
    const same = known?.range.first === range.first && known.range.size === range.size;
    if (same && this.#now() - known.readAt < this.#maxAgeMs) return;
    const consistency: CountsRead = same && !known.proven ? 'eventual' : 'strong';
    await this.#read(range, () => read(consistency), consistency);
  }

  /**
   * The counts to choose from now: stored counts plus uses in flight. Synchronous, so a caller
   * can choose and `hold` its choice before any other caller of this process sees the counts.
   * Throws for a range never refreshed.
   */
  counts(range: HostPortRange): RangeCounts {
    const view = this.#ranges.get(range.name);
    if (!view) throw new RangeError(`no view of host port range ${range.name}: refresh it first`);
    const busy = new Set<number>();
    const counts = view.counts.map((count, offset) => {
      const held = this.#inFlight.get(key(range.name, range.first + offset)) ?? 0;
      if (held > 0) busy.add(offset);
      return count + held;
    });
    return {
      range,
      counts,
      busy,
      ...(view.portsPerItem === undefined ? {} : { portsPerItem: view.portsPerItem }),
      ...(view.foreign.size === 0 ? {} : { foreign: new Set(view.foreign) }),
    };
  }

  /**
   * A stamp for a request about to be sent. Answers arrive in any order; a count is only ever
   * replaced by the answer of a request sent after the one that set it, so a slow answer never
   * takes the view back to an older state.
   */
  stamp(): number {
    return ++this.#sent;
  }

  /**
   * Counts the uses of an allocation being written, until `land` is called for them; answers the
   * stamp of the writes, which the caller sends at once.
   */
  hold(ports: readonly PortInFlight[]): number {
    for (const { range, port } of ports) {
      const k = key(range, port);
      this.#inFlight.set(k, (this.#inFlight.get(k) ?? 0) + 1);
    }
    return this.stamp();
  }

  /** The allocation's write was answered: its uses now show (or not) in the blocks applied. */
  land(ports: readonly PortInFlight[]): void {
    for (const { range, port } of ports) {
      const k = key(range, port);
      const left = (this.#inFlight.get(k) ?? 1) - 1;
      if (left > 0) this.#inFlight.set(k, left);
      else this.#inFlight.delete(k);
    }
  }

  /**
   * Takes the blocks a write stamped `stamp` answered as the stored counts of their ports. A
   * count set by the answer of a later request stays, except that the write's own ports never
   * show less than its answer: the later answer may predate this write's landing.
   */
  apply(blocks: readonly BlockCounts[], stamp: number, own: readonly PortInFlight[] = []): void {
    const written = new Set(own.map((p) => key(p.range, p.port)));
    for (const block of blocks) {
      const view = this.#ranges.get(block.range);
      if (!view) continue;
      for (let port = block.firstPort; port < block.firstPort + block.ports; port++) {
        const offset = port - view.range.first;
        if (offset < 0 || offset >= view.counts.length) continue;
        const answered = block.counts.get(port) ?? 0;
        if (stamp > (view.stamps[offset] ?? 0)) {
          view.counts[offset] = answered;
          view.stamps[offset] = stamp;
          view.confirmed[offset] = stamp;
          if (block.foreign?.has(port)) view.foreign.add(offset);
          else view.foreign.delete(offset);
        } else if (written.has(key(block.range, port))) {
          view.counts[offset] = Math.max(view.counts[offset] ?? 0, answered);
        }
      }
    }
  }

  /**
   * Whether the count of `port` comes from a strongly consistent answer (a strong whole read, or
   * a write's answer) to a request sent after the stamp `since`. When `since` was taken as an
   * allocation began, such a count includes every allocation that had finished by then: any use
   * it misses is one still in flight, concurrent with the allocation.
   */
  seenSince(range: string, port: number, since: number): boolean {
    const view = this.#ranges.get(range);
    if (!view) return false;
    return (view.confirmed[port - view.range.first] ?? 0) > since;
  }

  /**
   * The stored counts of the range as last seen (by offset), without the uses in flight: an
   * allocation of this process in flight may yet be refused, so slack is measured from these.
   */
  stored(range: string): readonly number[] {
    return this.#ranges.get(range)?.counts ?? [];
  }

  /**
   * The view of these ranges proved stale at the lowest counts (a write was refused): the next
   * choice reads them whole again rather than trying the other ports it still believes free.
   */
  expire(ranges: Iterable<string>): void {
    for (const name of ranges) {
      const view = this.#ranges.get(name);
      if (view) this.#ranges.set(name, { ...view, readAt: Number.NEGATIVE_INFINITY, proven: true });
    }
  }

  async #read(
    range: HostPortRange,
    read: () => Promise<RangeCounts>,
    consistency: CountsRead,
  ): Promise<RangeView> {
    const running = this.#reading.get(range.name);
    if (running) return running;
    const readAt = this.#now();
    const stamp = this.stamp();
    const strongly = consistency === 'strong' ? stamp : 0;
    const reading = read()
      .then((result): RangeView => {
        // Answers of writes sent after the read began are newer than what it read: they stay.
        const known = this.#ranges.get(range.name);
        const same = known?.range.first === range.first && known.range.size === range.size;
        const counts = [...result.counts];
        const stamps = counts.map(() => stamp);
        const confirmed = counts.map(() => strongly);
        if (same) {
          known.stamps.forEach((was, offset) => {
            if (was > stamp) {
              counts[offset] = known.counts[offset] ?? 0;
              stamps[offset] = was;
              confirmed[offset] = known.confirmed[offset] ?? 0;
            }
          });
        }
        const view = {
          range,
          counts,
          stamps,
          confirmed,
          readAt,
          foreign: new Set(result.foreign),
          ...(result.portsPerItem === undefined ? {} : { portsPerItem: result.portsPerItem }),
        };
        this.#ranges.set(range.name, view);
        return view;
      })
      .finally(() => this.#reading.delete(range.name));
    this.#reading.set(range.name, reading);
    return reading;
  }
}

function key(range: string, port: number): string {
  return `${range}#${port}`;
}

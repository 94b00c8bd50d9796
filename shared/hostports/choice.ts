/**
 * Which host ports a pod gets: Agones' logical-node behaviour stated as use counts. Pure.
 *
 * Agones keeps N "logical nodes", each a set of free ports, and fills node 0 before node 1; seen
 * from outside, that is a use count per port number where the least-used numbers go first. berth
 * keeps exactly those counts and picks, for each allocation, distinct port numbers at the lowest
 * counts, uniformly at random among equal counts (Agones relies on Go map order, which is not
 * uniform: 85 to 452 first picks per port over 200,000 trials).
 *
 * The count invariant, and why it is stated this way:
 * - Each allocation takes its ports at the lowest counts: every port it takes had, before it, a
 *   count no higher than any port it did not take. Consequently an allocation never widens the
 *   spread: after it, max − min ≤ max(1, max − min before it). For a sequence of allocations only,
 *   counts of any two ports in a range therefore differ by at most one (Agones' behaviour).
 * - Releases can widen the spread and no allocation policy can prevent it: counts A=1, B=1,
 *   allocate → A=2 (B stays 1), release the pod holding B → B=0; now max − min = 2. What holds
 *   instead is that the next allocations take the lowest counts first, so the spread shrinks back
 *   as pods come and go.
 * - A pod asking a range for more ports than it has (possible only mixing protocols: UDP-only
 *   plus TCP-only ports beyond the range size) takes every number, and a number it uses for both
 *   a UDP-only and a TCP-only port gains two uses: those are the numbers at the lowest counts, so
 *   the bound holds for such pods too.
 */
import type { PortProtocol } from './model.js';

/** Uniform in [0, 1), injected so tests and benchmarks control it. */
export type Random = () => number;

const NONE: ReadonlySet<number> = new Set();

function randomIndex(random: Random, length: number): number {
  // Clamp: a source returning exactly 1 must not index past the end.
  return Math.min(length - 1, Math.floor(random() * length));
}

/**
 * `amount` distinct offsets for an allocation that lost a race to a concurrent one: each the less
 * used of two drawn at random among the ports at the lowest two counts ("two random choices").
 * Racers that all wanted the last ports at the lowest count spread over the next level instead of
 * colliding there again, and each use lands at most two above the lowest count: the bound for
 * allocations made at once. Undefined when fewer than `amount` ports are at the lowest two counts.
 * With `itemOf`, a pod's ports after its first are drawn from the count items it already uses
 * while any candidate is left there: a pod's ports in one item cost one write, and one refused
 * write instead of a refused one and one taken back.
 */
export function chooseWithSlack(
  counts: ArrayLike<number>,
  amount: number,
  random: Random,
  itemOf?: (offset: number) => number,
): number[] | undefined {
  let lowest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < counts.length; i++) lowest = Math.min(lowest, counts[i] ?? 0);
  const candidates: number[] = [];
  for (let i = 0; i < counts.length; i++) if ((counts[i] ?? 0) <= lowest + 1) candidates.push(i);
  if (candidates.length < amount) return undefined;
  const chosen: number[] = [];
  const items = new Set<number>();
  while (chosen.length < amount) {
    // Indexes into `candidates` of those in an item the pod already uses (all, for its first).
    const near =
      itemOf && items.size > 0
        ? candidates.flatMap((c, i) => (items.has(itemOf(c)) ? [i] : []))
        : [];
    const draw = () =>
      near.length > 0
        ? (near[randomIndex(random, near.length)] ?? 0)
        : randomIndex(random, candidates.length);
    const a = draw();
    const b = draw();
    const pick = (counts[candidates[b] ?? 0] ?? 0) < (counts[candidates[a] ?? 0] ?? 0) ? b : a;
    chosen.push(candidates[pick] ?? 0);
    if (itemOf) items.add(itemOf(candidates[pick] ?? 0));
    // Swap-remove: the ports left stay candidates, none twice.
    candidates[pick] = candidates[candidates.length - 1] ?? 0;
    candidates.pop();
  }
  return chosen;
}

/** What a choice prefers among ports of equal count. */
export interface Preferences {
  /** A concurrent allocation won a race against this one: choose with `chooseWithSlack`. */
  readonly racing?: boolean;
  /** Offsets a write of this process is on right now: chosen last within their count. */
  readonly busy?: ReadonlySet<number>;
  /**
   * The count item an offset's count is kept in: a pod's ports in one item cost one write, so
   * after its first port a pod prefers the items it already uses.
   */
  readonly itemOf?: (offset: number) => number;
}

/**
 * `amount` distinct offsets, each at the lowest count left when it is chosen (so ordered from the
 * lowest count up), uniformly random among the equal ones a pod prefers: ports no write of this
 * process is on, then ports in a count item the pod already uses. The preferences only break
 * ties: no port is ever taken above the lowest count. Throws when `amount` exceeds the number of
 * offsets (the caller validated against it).
 */
export function chooseLeastUsed(
  counts: ArrayLike<number>,
  amount: number,
  random: Random,
  preferences: Preferences = {},
): number[] {
  if (amount > counts.length) {
    throw new RangeError(`cannot choose ${amount} distinct ports out of ${counts.length}`);
  }
  const busy = preferences.busy ?? NONE;
  const itemOf = preferences.itemOf;
  const chosen: number[] = [];
  const taken = new Uint8Array(counts.length);
  const items = new Set<number>();
  /** Lower is preferred, among ports of one count. */
  const tierOf = (offset: number) =>
    (busy.has(offset) ? 2 : 0) + (itemOf && items.size > 0 && !items.has(itemOf(offset)) ? 1 : 0);
  while (chosen.length < amount) {
    let level = Number.POSITIVE_INFINITY;
    let tier = Number.POSITIVE_INFINITY;
    let best: number[] = [];
    for (let i = 0; i < counts.length; i++) {
      const count = counts[i] ?? 0;
      if (taken[i] === 1 || count > level) continue;
      const t = tierOf(i);
      if (count < level || t < tier) {
        level = count;
        tier = t;
        best = [i];
      } else if (t === tier) best.push(i);
    }
    const offset = best[randomIndex(random, best.length)];
    if (offset === undefined) throw new RangeError('unreachable: no port left to choose');
    taken[offset] = 1;
    chosen.push(offset);
    if (itemOf) items.add(itemOf(offset));
  }
  return chosen;
}

/**
 * The first pick of a single port (the hot path of a one-port pod): two passes, no allocation.
 * Among the lowest counts, ports not `busy` (no write of this process on them now) come first.
 */
export function chooseOneLeastUsed(
  counts: ArrayLike<number>,
  random: Random,
  busy: ReadonlySet<number> = NONE,
): number {
  let level = Number.POSITIVE_INFINITY;
  let ties = 0;
  let idleTies = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i] ?? 0;
    if (c < level) {
      level = c;
      ties = 0;
      idleTies = 0;
    }
    if (c === level) {
      ties++;
      if (!busy.has(i)) idleTies++;
    }
  }
  if (ties === 0) throw new RangeError('cannot choose a port out of an empty range');
  const onlyIdle = idleTies > 0;
  let skip = randomIndex(random, onlyIdle ? idleTies : ties);
  for (let i = 0; i < counts.length; i++) {
    if ((counts[i] ?? 0) !== level || (onlyIdle && busy.has(i))) continue;
    if (skip-- === 0) return i;
  }
  throw new RangeError('unreachable: a tie vanished');
}

/**
 * Offsets for one range's Dynamic/Passthrough ports of one pod, in the order of `protocols`.
 * All distinct when they fit; otherwise (more ports than the range has, mixing protocols) some
 * TCP-only ports share numbers with UDP-only ones, never with TCPUDP ones, so no protocol sees a
 * number twice; the shared numbers, two uses each, are the ones at the lowest counts. A TCPUDP
 * port takes one number for both protocols.
 */
export function assignRangePorts(
  protocols: readonly PortProtocol[],
  counts: ArrayLike<number>,
  random: Random,
  preferences: Preferences = {},
): number[] {
  const size = counts.length;
  const both = protocols.filter((p) => p === 'TCPUDP').length;
  const udp = protocols.filter((p) => p === 'UDP').length;
  const tcp = protocols.filter((p) => p === 'TCP').length;
  if (both + udp > size || both + tcp > size) {
    throw new RangeError(`a pod cannot hold more than ${size} distinct ports of one protocol here`);
  }
  const distinct = Math.min(size, both + udp + tcp);
  const slack =
    preferences.racing && distinct === both + udp + tcp
      ? chooseWithSlack(counts, distinct, random, preferences.itemOf)
      : undefined;
  const picks =
    slack ??
    (distinct === 1
      ? [chooseOneLeastUsed(counts, random, preferences.busy)]
      : chooseLeastUsed(counts, distinct, random, preferences));
  // Picks run from the lowest count up: first the numbers a UDP-only and a TCP-only port share
  // (two uses each), then the TCPUDP ones, then each protocol's own.
  const shared = both + udp + tcp - distinct;
  const sharedPicks = picks.slice(0, shared);
  const queues: Record<PortProtocol, readonly number[]> = {
    TCPUDP: picks.slice(shared, shared + both),
    UDP: [...sharedPicks, ...picks.slice(shared + both, both + udp)],
    TCP: [...sharedPicks, ...picks.slice(both + udp)],
  };
  const next: Record<PortProtocol, number> = { TCPUDP: 0, UDP: 0, TCP: 0 };
  return protocols.map((protocol) => {
    const offset = queues[protocol][next[protocol]++];
    if (offset === undefined) throw new RangeError('unreachable: ran out of picks');
    return offset;
  });
}

/** The longest run of consecutive ports whose counts are at most `level`. Pure. */
export function longestRun(counts: ArrayLike<number>, level: number): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < counts.length; i++) {
    run = (counts[i] ?? 0) <= level ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}

/**
 * The largest free block of a range: the longest run of consecutive ports at the lowest count,
 * the largest block that leaves every count within one of the others. Pure.
 */
export function largestFreeBlock(counts: ArrayLike<number>): number {
  let lowest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < counts.length; i++) lowest = Math.min(lowest, counts[i] ?? 0);
  return counts.length === 0 ? 0 : longestRun(counts, lowest);
}

/** Where a block may go, besides its counts. */
export interface BlockPreferences {
  /** Offsets the pod has taken already (another of its ports): never in the block. */
  readonly taken?: ReadonlySet<number>;
  /** The count item of an offset: a block inside one item is one write. */
  readonly itemOf?: (offset: number) => number;
  /** The port number of offset 0, for alignment; 0 when absent. */
  readonly first?: number;
}

/** Lexicographic: lower is better. */
type BlockKey = readonly number[];

function better(a: BlockKey, b: BlockKey): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

/** For each offset, the first and last offset of the run of `eligible` offsets it lies in. */
function runsOf(length: number, eligible: (i: number) => boolean) {
  const start = new Int32Array(length);
  const end = new Int32Array(length);
  for (let i = 0; i < length; i++)
    start[i] = eligible(i) && i > 0 && eligible(i - 1) ? (start[i - 1] ?? i) : i;
  for (let i = length - 1; i >= 0; i--)
    end[i] = eligible(i) && i < length - 1 && eligible(i + 1) ? (end[i + 1] ?? i) : i;
  return { start, end };
}

/** The highest count of every window of `size` offsets, by its first offset (a monotonic deque). */
function windowMaxima(count: (i: number) => number, n: number, size: number): Float64Array {
  const maxima = new Float64Array(Math.max(0, n - size + 1));
  const deque: number[] = [];
  let head = 0;
  for (let i = 0; i < n; i++) {
    while (deque.length > head && count(deque[deque.length - 1] ?? 0) <= count(i)) deque.pop();
    deque.push(i);
    if ((deque[head] ?? 0) <= i - size) head++;
    if (i >= size - 1) maxima[i - size + 1] = count(deque[head] ?? 0);
  }
  return maxima;
}

/**
 * The first offset of a block of `size` consecutive ports, or undefined when none fits (every
 * window holds a port `taken`: this pod's, or one held by a pod berth never admitted). The block
 * whose ports are least used wins, as single ports do:
 * - first a block that keeps the count promise: all its ports at the lowest count, or covering
 *   every port at the lowest count with the rest one above;
 * - else the block whose busiest port is least used (releases leave the lowest count to scattered
 *   ports, which single ports fill first, so a block is never refused for lack of ports: like a
 *   single port, it is placed and the scheduler keeps extra pods Pending);
 * then, among equals: one inside a single count item (one write), the fewest uses in all (holes
 *   fill first), the smallest run of ports it could lie in (best fit, so long runs stay whole
 *   for larger blocks), a first port that is a multiple of the block's size (blocks of a size
 *   tile, as a buddy allocator's do, and concurrent choices still spread over many), then
 *   uniformly at random.
 */
export function chooseBlock(
  counts: ArrayLike<number>,
  size: number,
  random: Random,
  preferences: BlockPreferences = {},
): number | undefined {
  const n = counts.length;
  const taken = preferences.taken ?? NONE;
  const itemOf = preferences.itemOf ?? (() => 0);
  const count = (i: number) => (taken.has(i) ? Number.POSITIVE_INFINITY : (counts[i] ?? 0));
  let lowest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < n; i++) lowest = Math.min(lowest, count(i));
  if (!Number.isFinite(lowest) || size < 1 || size > n) return undefined;
  const maxima = windowMaxima(count, n, size);
  // Prefix sums of the counts and of the ports at the lowest count.
  const uses = new Float64Array(n + 1);
  const low = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    const c = count(i);
    uses[i + 1] = (uses[i] ?? 0) + (Number.isFinite(c) ? c : 0);
    low[i + 1] = (low[i] ?? 0) + (c === lowest ? 1 : 0);
  }
  const atLowest = low[n] ?? 0;
  const runs = [
    runsOf(n, (i) => count(i) <= lowest),
    runsOf(n, (i) => count(i) <= lowest + 1),
  ] as const;
  let best: BlockKey | undefined;
  let chosen: number | undefined;
  let ties = 0;
  for (let s = 0; s + size <= n; s++) {
    const e = s + size - 1;
    const highest = maxima[s] ?? Number.POSITIVE_INFINITY;
    if (!Number.isFinite(highest)) continue;
    const covered = (low[e + 1] ?? 0) - (low[s] ?? 0);
    const strict = highest === lowest || (highest === lowest + 1 && covered === atLowest);
    const run = highest === lowest ? runs[0] : highest === lowest + 1 ? runs[1] : undefined;
    const runStart = run?.start[s] ?? s;
    const runEnd = run?.end[e] ?? e;
    const key: BlockKey = [
      strict ? 0 : 1,
      highest,
      itemOf(s) === itemOf(e) ? 0 : 1,
      (uses[e + 1] ?? 0) - (uses[s] ?? 0),
      runEnd - runStart + 1,
      ((preferences.first ?? 0) + s) % size === 0 ? 0 : 1,
    ];
    const order = best === undefined ? -1 : better(key, best);
    if (order < 0) {
      best = key;
      chosen = s;
      ties = 1;
    } else if (order === 0 && randomIndex(random, ++ties) === 0) chosen = s;
  }
  return chosen;
}

/** Ports per packing slot: aligned runs a block of 16 can take whole, inside one count item. */
export const PACKING_SLOT_PORTS = 16;
/**
 * Single ports pack into partly used slots only while these hold at least this many ports at
 * the lowest count: concurrent choices then still spread over many ports, not race for a few.
 */
export const PACKING_MIN_PORTS = 32;

/**
 * Counts as single ports should see them so that blocks keep finding room: while partly used
 * slots (aligned runs of `PACKING_SLOT_PORTS` port numbers with a port above the lowest count)
 * hold at least `PACKING_MIN_PORTS` ports at the lowest count, every port of a slot still wholly
 * at the lowest count reads half a use higher. Single ports then fill partly used slots first,
 * uniformly among them, and leave whole slots to blocks; the order between count levels is
 * unchanged. A fresh range has no partly used slot, so its first picks stay uniform. Pure.
 */
export function packedCounts(counts: readonly number[], first: number): readonly number[] {
  let lowest = Number.POSITIVE_INFINITY;
  for (const c of counts) lowest = Math.min(lowest, c);
  const slotOf = (offset: number) => Math.floor((first + offset) / PACKING_SLOT_PORTS);
  const broken = new Set<number>();
  counts.forEach((c, offset) => {
    if (c > lowest) broken.add(slotOf(offset));
  });
  let inBroken = 0;
  counts.forEach((c, offset) => {
    if (c === lowest && broken.has(slotOf(offset))) inBroken++;
  });
  if (inBroken < PACKING_MIN_PORTS) return counts;
  return counts.map((c, offset) => (c === lowest && !broken.has(slotOf(offset)) ? c + 0.5 : c));
}

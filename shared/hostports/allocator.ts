/**
 * Allocation and release of a pod's host ports over a `HostPortStore`: choose from the
 * process's view of the counts (pure, `choice.ts`; the view reads a range whole only when it is
 * stale), then write the record and the uses together, each use conditioned on the level the
 * choice saw; on a lost race choose again from the counts the refused write returned, a bounded
 * number of times.
 *
 * Why this is safe against concurrency, retries and crashes without a transaction:
 * - each use is conditioned on its count being at most the level chosen, so a pod whose view
 *   missed a finished allocation's use cannot take a port above the lowest count: it is refused,
 *   reads the range again and chooses again; a count lower than seen (a release meanwhile) still
 *   takes the use. When the chosen port's count was read after this allocation began, whatever
 *   it misses is a concurrent allocation's, and the level allows one more use: two pods racing
 *   for the last ports at the lowest count both land (one a use above the other ports for as
 *   long as the race lasts) instead of sending one round again. Allocations one after another
 *   keep every count within one of the others;
 * - the record carries the allocation's token: the allocation may rewrite its own record after
 *   choosing again, no other writer may, and an id that is taken leaves no use behind;
 * - a release deletes the record first (condition: it exists, same namespace) and only the
 *   caller whose delete succeeded removes the uses: a repeated or retried DELETE finds no record
 *   and changes nothing, exactly once;
 * - a crash between the record and its uses leaves a count off by the pod's ports; the repair
 *   pass sees a count that differs from the records and corrects it after its grace.
 * Concurrent allocations only raise counts, which never invalidates a choice at the lowest count;
 * a release committed between another allocation's choice and its write may leave that
 * allocation one use above the new minimum, which the following allocations fill (`choice.ts`).
 */

import type { Owner } from '../vocabulary/owner.js';
import {
  assignRangePorts,
  chooseBlock,
  largestFreeBlock,
  longestRun,
  packedCounts,
  type Random,
} from './choice.js';
import type { CountView } from './count-view.js';
import { HostPortBlockError, HostPortConflictError, HostPortContentionError } from './errors.js';
import type { HostPortRange } from './model.js';
import { isAllocated, PORTS_PATH, type PortSpec, portsOf } from './spec.js';
import {
  ANY_COUNT,
  type HeldPort,
  type HostPortStore,
  levelKey,
  type PodPortRecord,
  type RangeCounts,
  type UseLevel,
} from './store.js';

/** Attempts of choose-write before the request fails with `HostPortContentionError`. */
export const MAX_ALLOCATION_ATTEMPTS = 8;

/**
 * Full-jitter backoff after a lost race: up to 10, 20, 40, 80, 160 ms, then 200 ms. Losers of one
 * race would otherwise choose again together and race again for the same lowest-count ports;
 * spread out, each sees the winners' counts. At most 0.71 s of waiting over 8 attempts (0.36 s
 * expected), well inside a webhook timeout.
 */
export function backoffMs(attempt: number, random: Random): number {
  return random() * Math.min(200, 10 * 2 ** (attempt - 1));
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Dependencies, injected so tests and benchmarks control randomness and time. */
export interface HostPortAllocatorDeps {
  readonly store: HostPortStore;
  /** The process's view of the counts (one per process: a Lambda container, `berth serve`). */
  readonly view: CountView;
  /** Uniform in [0, 1): ties between equally used ports. */
  readonly random: Random;
  /** Epoch milliseconds, for `createdAt`. */
  readonly now: () => number;
  /** Waits between attempts; `setTimeout` when absent. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Makes the token that marks an allocation's own record. */
  readonly randomBytes: (size: number) => Uint8Array;
}

/** What to allocate: one pod's validated specs under a fresh allocation id. */
export interface AllocationRequest {
  readonly id: string;
  readonly pod: Owner;
  readonly specs: readonly PortSpec[];
  /** The configured ranges by name. */
  readonly ranges: ReadonlyMap<string, HostPortRange>;
  /** Choose from the current counts but write nothing (`dryRun: true`). */
  readonly dryRun: boolean;
  /**
   * Host port numbers the pod holds already outside berth's specs (hand-written `hostPort`s, a
   * `hostNetwork` pod's own container ports): never handed to it again.
   */
  readonly carried?: ReadonlySet<number>;
  /**
   * The namespace's `hostPortQuotas`, when it has one: the record's first write takes its ports
   * from the namespace's count (`HostPortStore.putRecord`), and its delete gives them back.
   */
  readonly quota?: number;
}

/** What an allocation did. */
export interface AllocationOutcome {
  readonly record: PodPortRecord;
  /** Writes lost to concurrent writers before this one succeeded. */
  readonly conflicts: number;
}

/** The ranges a pod's Dynamic and Passthrough ports draw from, in first-use order. */
export function rangesOf(specs: readonly PortSpec[]): string[] {
  return [...new Set(specs.filter((s) => isAllocated(s.portPolicy)).map((s) => s.range))];
}

/**
 * Chooses host ports for every Dynamic/Passthrough spec from counts already read: a range's
 * blocks first (largest first, `chooseBlock`), then its single ports among the numbers left.
 * Throws `HostPortBlockError` when a block fits nowhere. Pure.
 */
export function planPorts(
  specs: readonly PortSpec[],
  counts: ReadonlyMap<string, RangeCounts>,
  random: Random,
  racing = false,
  carried: ReadonlySet<number> = new Set(),
): HeldPort[] {
  const held = new Map<number, HeldPort[]>();
  for (const name of rangesOf(specs)) {
    const observed = counts.get(name);
    if (!observed) throw new RangeError(`no counts read for range ${name}`);
    const { first } = observed.range;
    const inRange = specs.filter((s) => isAllocated(s.portPolicy) && s.range === name);
    const perItem = observed.portsPerItem;
    const itemOf = perItem ? (offset: number) => Math.floor((first + offset) / perItem) : undefined;
    // Ports held by pods berth never admitted are never chosen, as if this pod had them; nor,
    // of course, are the ones it has (the apiserver refuses a host port listed twice).
    const taken = new Set<number>(observed.foreign);
    for (const port of carried) {
      const offset = port - first;
      if (offset >= 0 && offset < observed.range.size) taken.add(offset);
    }
    const blocks = inRange.filter((s) => s.count !== undefined);
    for (const spec of blocks.toSorted((a, b) => portsOf(b) - portsOf(a))) {
      const size = portsOf(spec);
      const at = chooseBlock(observed.counts, size, random, {
        taken,
        first,
        ...(itemOf ? { itemOf } : {}),
      });
      if (at === undefined) {
        // Every window holds a port of this pod's or one held outside berth.
        const left = observed.counts.map((c, i) => (taken.has(i) ? Number.POSITIVE_INFINITY : c));
        const largest = longestRun(left, Number.MAX_VALUE);
        throw new HostPortBlockError(
          `${PORTS_PATH}[${spec.index}].count`,
          size,
          observed.range,
          largest,
        );
      }
      const ports = Array.from({ length: size }, (_, i) => {
        taken.add(at + i);
        return { name: spec.name, range: name, port: first + at + i, protocol: spec.protocol };
      });
      held.set(spec.index, ports);
    }
    const singles = inRange.filter((s) => s.count === undefined);
    if (singles.length === 0) continue;
    const left =
      taken.size === 0
        ? observed.counts
        : observed.counts.map((c, i) => (taken.has(i) ? Number.POSITIVE_INFINITY : c));
    const offsets = assignRangePorts(
      singles.map((s) => s.protocol),
      packedCounts(left, first),
      random,
      {
        racing,
        ...(observed.busy ? { busy: observed.busy } : {}),
        ...(itemOf ? { itemOf } : {}),
      },
    );
    singles.forEach((spec, i) => {
      held.set(spec.index, [
        { name: spec.name, range: name, port: first + (offsets[i] ?? 0), protocol: spec.protocol },
      ]);
    });
  }
  // Spec order, so records and patches read like the annotation.
  return specs.flatMap((s) => held.get(s.index) ?? []);
}

/** How an attempt conditions its uses: see `levelsOf`. */
interface Slack {
  /** This allocation lost a race to a concurrent one, and chose among the lowest two counts. */
  readonly racing: boolean;
  readonly concurrentOnly: (port: HeldPort) => boolean;
  /** When the allocation began (epoch ms). */
  readonly beganAt: number;
  /** The stored counts of a range in the view, without the uses in flight. */
  readonly stored: (range: string) => readonly number[];
}

/**
 * Whether the pod's ports in `observed`'s range raise every port the range hands out (all but
 * those held outside berth) by the same number of uses: a range of one port, or a pod taking
 * each of its ports once. Such a pick keeps the counts' differences whatever they are, and no
 * other pick could keep them better: its uses need no level. Conditioned, a burst of pods that
 * can only get these ports would race for each count in turn and run out of attempts (60 pods
 * of a one-port range, refused 409 after 8 conflicts), though every one of them gets them.
 */
function raisesEveryPortAlike(ports: readonly HeldPort[], observed: RangeCounts): boolean {
  const { name, first, size } = observed.range;
  const uses = new Map<number, number>();
  for (const port of ports) {
    if (port.range === name) uses.set(port.port - first, (uses.get(port.port - first) ?? 0) + 1);
  }
  // Chosen ports are never ones held outside berth: all are chosen when as many are.
  if (uses.size === 0 || uses.size !== size - (observed.foreign?.size ?? 0)) return false;
  const [each] = uses.values();
  return [...uses.values()].every((n) => n === each);
}

/**
 * The condition each held port's use is written under. A pick that raises every port of its
 * range alike takes its uses at any count (`raisesEveryPortAlike`). A port chosen at the lowest count takes
 * one level of slack for a use its count missed that is a concurrent allocation's: at once when
 * `concurrentOnly(port)` says the count already includes every allocation finished before this
 * one began, else when its count item had a use added after the allocation began. Losing to a
 * concurrent allocation would only send both round again (32 pods racing for 16 ports at the
 * lowest count), and allocations one after another still keep every count within one of the
 * others. Racing: every use at most one above the lowest count. Other ports: the count chosen
 * from, where this process's uses in flight raise it only up to one above the lowest stored
 * count (those uses may yet be refused). A use then lands at most two above the lowest count,
 * the bound for allocations made at once, except where a pod needs more ports than the lowest
 * two counts hold.
 */
function levelsOf(
  ports: readonly HeldPort[],
  counts: ReadonlyMap<string, RangeCounts>,
  slack: Slack,
): Map<string, UseLevel> {
  const levels = new Map<string, UseLevel>();
  const alike = new Set(
    [...counts.values()]
      .filter((observed) => raisesEveryPortAlike(ports, observed))
      .map((observed) => observed.range.name),
  );
  for (const port of ports) {
    const observed = counts.get(port.range);
    if (!observed) throw new RangeError(`no counts read for range ${port.range}`);
    if (alike.has(port.range)) {
      levels.set(levelKey(port.range, port.port), { level: ANY_COUNT });
      continue;
    }
    const offset = port.port - observed.range.first;
    const seen = observed.counts[offset] ?? 0;
    const stored = slack.stored(port.range);
    const own = stored[offset] ?? 0;
    const ceiling = stored.reduce((low, c) => Math.min(low, c), own) + 1;
    const level: UseLevel =
      slack.racing || (seen < ceiling && slack.concurrentOnly(port))
        ? { level: ceiling }
        : seen < ceiling
          ? { level: seen, concurrentSince: slack.beganAt }
          : { level: Math.max(own, Math.min(seen, ceiling)) };
    levels.set(levelKey(port.range, port.port), level);
  }
  return levels;
}

/** Allocates (or, for a dry run, only chooses) host ports for one pod. */
export async function allocateHostPorts(
  deps: HostPortAllocatorDeps,
  request: AllocationRequest,
): Promise<AllocationOutcome> {
  const names = rangesOf(request.specs);
  const ranges = names.map((name) => {
    const range = request.ranges.get(name);
    if (!range) throw new RangeError(`unknown host port range ${name}`);
    return range;
  });
  const token = Buffer.from(deps.randomBytes(12)).toString('base64url');
  /** Whether an attempt wrote the record: a request that fails after it deletes it again. */
  const written = { record: false };
  try {
    return await allocateAttempts(deps, request, ranges, token, written);
  } catch (error) {
    // The pod is refused: its record, written with ports it never got, goes too.
    if (written.record) await deps.store.deleteRecord(request.id, request.pod, token);
    throw error;
  }
}

/** Choose, write, and on a lost race choose again, up to MAX_ALLOCATION_ATTEMPTS times. */
async function allocateAttempts(
  deps: HostPortAllocatorDeps,
  request: AllocationRequest,
  ranges: readonly HostPortRange[],
  token: string,
  written: { record: boolean },
): Promise<AllocationOutcome> {
  let conflicts = 0;
  let lastConflict: unknown;
  // Counts answered after this stamp know every allocation that finished before this one began.
  const began = deps.view.stamp();
  const concurrentOnly = (port: HeldPort) => deps.view.seenSince(port.range, port.port, began);
  const beganAt = deps.now();
  const stored = (range: string) => deps.view.stored(range);
  let slack: Slack = { racing: false, concurrentOnly, beganAt, stored };
  for (let attempt = 1; attempt <= MAX_ALLOCATION_ATTEMPTS; attempt++) {
    await Promise.all(
      ranges.map((range) => deps.view.refresh(range, (read) => deps.store.readCounts(range, read))),
    );
    // From here to `hold` nothing awaits: no other allocation of this process sees the counts
    // between this one's choice and the uses it holds for it.
    const counts = new Map(ranges.map((range) => [range.name, deps.view.counts(range)]));
    const ports = planPorts(request.specs, counts, deps.random, slack.racing, request.carried);
    const record: PodPortRecord = {
      id: request.id,
      pod: request.pod,
      ports,
      createdAt: deps.now(),
      token,
      quotaUnits: request.quota === undefined ? 0 : ports.length,
    };
    if (request.dryRun) return { record, conflicts };
    const stamp = deps.view.hold(record.ports);
    const [put, used] = await Promise.allSettled([
      // Only the first write takes the quota's units; a rewrite keeps them.
      deps.store.putRecord(record, written.record ? undefined : request.quota),
      deps.store.addUses(record.ports, levelsOf(record.ports, counts, slack), deps.now()),
    ]);
    deps.view.land(record.ports);
    if (used.status === 'fulfilled') deps.view.apply(used.value, stamp, record.ports);
    else if (used.reason instanceof HostPortConflictError) {
      deps.view.apply(used.reason.blocks, stamp);
      // An item added to after this allocation began proves a concurrent one: choose again
      // with slack from the view as answered. Otherwise the view was stale: read it again.
      if (used.reason.blocks.some((block) => (block.writtenAt ?? Number.NaN) > beganAt)) {
        slack = { ...slack, racing: true };
      } else deps.view.expire(new Set(used.reason.blocks.map((block) => block.range)));
    }
    if (put.status === 'rejected') {
      // The id is another allocation's, or the write failed: leave no use behind.
      if (used.status === 'fulfilled') {
        const undo = deps.view.stamp();
        deps.view.apply(await deps.store.removeUses(record.ports), undo);
      }
      throw put.reason;
    }
    written.record = true;
    if (used.status === 'fulfilled') return { record, conflicts };
    if (!(used.reason instanceof HostPortConflictError)) throw used.reason;
    conflicts++;
    lastConflict = used.reason;
    if (attempt < MAX_ALLOCATION_ATTEMPTS)
      await (deps.sleep ?? sleep)(backoffMs(attempt, deps.random));
  }
  throw new HostPortContentionError(
    ranges.map((range) => range.name),
    MAX_ALLOCATION_ATTEMPTS,
    { cause: lastConflict },
  );
}

/**
 * Releases what `id` holds for a pod of `namespace`, exactly once: the caller whose delete of the
 * record succeeded removes its uses. Answers the record released, or undefined (nothing held).
 */
export async function releaseHostPorts(
  deps: {
    readonly store: Pick<HostPortStore, 'deleteRecord' | 'removeUses'>;
    readonly view?: CountView;
  },
  id: string,
  pod: Owner,
): Promise<PodPortRecord | undefined> {
  const record = await deps.store.deleteRecord(id, pod);
  if (!record) return undefined;
  const stamp = deps.view?.stamp() ?? 0;
  const blocks = await deps.store.removeUses(record.ports);
  deps.view?.apply(blocks, stamp);
  return record;
}

/**
 * Records ports a pod already uses (the repair pass, for a pod that carries them with no record):
 * the record, then its uses, unconditioned. Throws `AllocationIdTakenError` when the id has a
 * record already, and adds no use then.
 */
export async function recordHostPorts(
  store: Pick<HostPortStore, 'putRecord' | 'addUses'>,
  record: PodPortRecord,
): Promise<void> {
  await store.putRecord(record);
  await store.addUses(record.ports);
}

/** One host port range's line in `/v1/status`. */
export interface HostPortRangeUsage {
  readonly name: string;
  readonly kind: 'hostPort';
  readonly size: number;
  /** (pod, port) allocations held in the range; a TCPUDP port counts once. */
  readonly used: number;
  /**
   * The lowest and highest use count of any port. What predicts Pending pods: a port used by as
   * many pods as there are game-server nodes cannot be scheduled again anywhere.
   */
  readonly minUse: number;
  readonly maxUse: number;
  /**
   * The longest run of consecutive ports at the lowest use count: the largest block (`count`)
   * the range can give while keeping every count within one of the others.
   */
  readonly largestFreeBlock: number;
  /** Ports held by pods berth never admitted (never handed out); absent when none. */
  readonly heldOutside?: number;
}

/**
 * One range's usage for `/v1/status`, from its use counts (offset from its first port) and the
 * offsets held by pods berth never admitted: the sum of the counts is the number of (pod, port)
 * allocations held (each held port adds exactly one use; a TCPUDP port is one). Pure.
 */
export function hostPortRangeUsage(
  range: HostPortRange,
  counts: readonly number[],
  foreign: ReadonlySet<number> = new Set(),
): HostPortRangeUsage {
  return {
    name: range.name,
    kind: 'hostPort',
    size: range.size,
    used: counts.reduce((sum, c) => sum + c, 0),
    minUse: counts.length > 0 ? Math.min(...counts) : 0,
    maxUse: counts.length > 0 ? Math.max(...counts) : 0,
    largestFreeBlock: largestFreeBlock(
      counts.map((c, offset) => (foreign.has(offset) ? Number.POSITIVE_INFINITY : c)),
    ),
    ...(foreign.size === 0 ? {} : { heldOutside: foreign.size }),
  };
}

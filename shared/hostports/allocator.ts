/**
 * Allocation and release of a pod's host ports over a `HostPortStore`: read the counts, choose
 * (pure, `choice.ts`), commit in one transaction conditioned on the counts read, and on a lost
 * race read again and choose again, a bounded number of times.
 *
 * Why this is safe against concurrency, retries and crashes:
 * - the record and every count it adds are one transaction, so there is never a half-written
 *   allocation: a crash before the commit leaves nothing, after it leaves a complete record;
 * - each touched count is conditioned on the value read, so two pods that read the same counts
 *   cannot both take "the last port at the lowest count": one of them chooses again;
 * - a release deletes the record (condition: it exists) and removes its uses in one transaction,
 *   so a repeated or retried DELETE finds no record and changes nothing: exactly once.
 * Concurrent allocations only raise counts, which never invalidates a choice at the lowest count;
 * a release committed between another allocation's read and its commit may leave that allocation
 * one use above the new minimum, which the following allocations fill (see `choice.ts`).
 */
import { assignRangePorts, type Random } from './choice.js';
import { HostPortConflictError, HostPortContentionError } from './errors.js';
import { type HostPortRange, isAllocated, type PortSpec } from './spec.js';
import type { HeldPort, HostPortStore, PodPortRecord, PodRef, RangeCounts } from './store.js';

/** Attempts of read-choose-commit before the request fails with `HostPortContentionError`. */
export const MAX_ALLOCATION_ATTEMPTS = 8;

/**
 * Full-jitter backoff after a lost race: up to 10, 20, 40, 80, 160 ms, then 200 ms. Losers of one
 * race would otherwise re-read together and race again for the same lowest-count ports; spread
 * out, each re-read sees the winners' counts. At most 0.71 s of waiting over 8 attempts (0.36 s
 * expected), well inside a webhook timeout.
 */
export function backoffMs(attempt: number, random: Random): number {
  return random() * Math.min(200, 10 * 2 ** (attempt - 1));
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Dependencies, injected so tests and benchmarks control randomness and time. */
export interface HostPortAllocatorDeps {
  readonly store: HostPortStore;
  /** Uniform in [0, 1): ties between equally used ports. */
  readonly random: Random;
  /** Epoch milliseconds, for `createdAt`. */
  readonly now: () => number;
  /** Waits between attempts; `setTimeout` when absent. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** What to allocate: one pod's validated specs under a fresh allocation id. */
export interface AllocationRequest {
  readonly id: string;
  readonly pod: PodRef;
  readonly specs: readonly PortSpec[];
  /** The configured ranges by name. */
  readonly ranges: ReadonlyMap<string, HostPortRange>;
  /** Choose from the current counts but write nothing (`dryRun: true`). */
  readonly dryRun: boolean;
}

/** What an allocation did. */
export interface AllocationOutcome {
  readonly record: PodPortRecord;
  /** Commits lost to concurrent writers before this one succeeded. */
  readonly conflicts: number;
}

/** The ranges a pod's Dynamic and Passthrough ports draw from, in first-use order. */
export function rangesOf(specs: readonly PortSpec[]): string[] {
  return [...new Set(specs.filter((s) => isAllocated(s.portPolicy)).map((s) => s.range))];
}

/** Chooses host ports for every Dynamic/Passthrough spec from counts already read. Pure. */
export function planPorts(
  specs: readonly PortSpec[],
  counts: ReadonlyMap<string, RangeCounts>,
  random: Random,
): HeldPort[] {
  const held = new Map<number, HeldPort>();
  for (const name of rangesOf(specs)) {
    const observed = counts.get(name);
    if (!observed) throw new RangeError(`no counts read for range ${name}`);
    const inRange = specs.filter((s) => isAllocated(s.portPolicy) && s.range === name);
    const offsets = assignRangePorts(
      inRange.map((s) => s.protocol),
      observed.counts,
      random,
    );
    inRange.forEach((spec, i) => {
      held.set(spec.index, {
        name: spec.name,
        range: name,
        port: observed.range.first + (offsets[i] ?? 0),
        protocol: spec.protocol,
      });
    });
  }
  // Spec order, so records and patches read like the annotation.
  return specs.flatMap((s) => held.get(s.index) ?? []);
}

/** Allocates (or, for a dry run, only chooses) host ports for one pod. */
export async function allocateHostPorts(
  deps: HostPortAllocatorDeps,
  request: AllocationRequest,
): Promise<AllocationOutcome> {
  const names = rangesOf(request.specs);
  let conflicts = 0;
  let lastConflict: unknown;
  for (let attempt = 1; attempt <= MAX_ALLOCATION_ATTEMPTS; attempt++) {
    const counts = new Map(
      await Promise.all(
        names.map(async (name): Promise<[string, RangeCounts]> => {
          const range = request.ranges.get(name);
          if (!range) throw new RangeError(`unknown host port range ${name}`);
          return [name, await deps.store.readCounts(range)];
        }),
      ),
    );
    const record: PodPortRecord = {
      id: request.id,
      pod: request.pod,
      ports: planPorts(request.specs, counts, deps.random),
      createdAt: deps.now(),
    };
    if (request.dryRun) return { record, conflicts };
    try {
      await deps.store.commit(record, counts);
      return { record, conflicts };
    } catch (error) {
      if (!(error instanceof HostPortConflictError)) throw error;
      conflicts++;
      lastConflict = error;
      if (attempt < MAX_ALLOCATION_ATTEMPTS)
        await (deps.sleep ?? sleep)(backoffMs(attempt, deps.random));
    }
  }
  throw new HostPortContentionError(names, MAX_ALLOCATION_ATTEMPTS, { cause: lastConflict });
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
}

/**
 * Usage of every host port range for `/v1/status`: the sum of the use counts, which is the number
 * of (pod, port) allocations held (each held port adds exactly one use; TCPUDP ports are one).
 */
export async function hostPortUsage(
  store: Pick<HostPortStore, 'readCounts'>,
  ranges: readonly HostPortRange[],
): Promise<HostPortRangeUsage[]> {
  return Promise.all(
    ranges.map(async (range) => {
      const { counts } = await store.readCounts(range);
      const used = counts.reduce((sum, c) => sum + c, 0);
      const minUse = counts.length > 0 ? Math.min(...counts) : 0;
      const maxUse = counts.length > 0 ? Math.max(...counts) : 0;
      return {
        name: range.name,
        kind: 'hostPort' as const,
        size: range.size,
        used,
        minUse,
        maxUse,
      };
    }),
  );
}

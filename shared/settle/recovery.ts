/**
 * The settle step after a restart. The local server keeps its settle tasks in timers, so a
 * `kill -9` loses every look that was waiting: the values stay marked in the store, held, and
 * without `--passes` no repair pass would ever free them. On start the store says what is left:
 * - an owner record with `releasing` values: a release task, its first look `delaySeconds` after
 *   the latest give-back (at once when that is past), so a value is free within the contract's
 *   30 s of the commit whenever the server was back by then;
 * - an owner record that has not learned its name (a CREATE with `generateName`): a create task,
 *   which frees its values if the object never appears, 2 minutes after its admission at most;
 * - values held by an id with no record (a named Service's CREATE writes none: the object carries
 *   the id): the task that named its object is gone, and the id does not say the name, so these
 *   are looked at once more when the commit window has closed after the restart, and freed when
 *   no stored Service carries the id or the value.
 *
 * In AWS the tasks wait in SQS, which a crashed function does not lose: nothing to recover there.
 */
import type { ExclusiveAllocator } from '../allocation/allocator.js';
import { claimKey, rangeKey } from '../allocation/allocator.js';
import type { AllocationStore, Claim } from '../allocation/store.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { lastBlockOf, offsetAt } from '../net/offset.js';
import { readService } from '../repair/live.js';
import type { ServiceRanges } from '../services/plan.js';
import type { Settler } from './settler.js';
import type { SettleTask } from './task.js';

/** What recovery reads and where it hands the tasks. */
export interface SettleRecoveryDeps {
  readonly store: Pick<AllocationStore, 'listOwners' | 'scanBlocks'>;
  readonly ranges: ServiceRanges;
  /** The server's settler: its queue with a cluster, freeing at once without one. */
  readonly settler: Settler;
}

/** What recovery found in the store. */
export interface SettleRecovery {
  /** Owners whose given-back values were handed to the settle step again. */
  readonly releases: number;
  /** Owners created with generateName handed to it as CREATEs. */
  readonly creates: number;
  /** Values held by ids without a record, by id: for `freeNeverStored` once the window closes. */
  readonly unrecorded: ReadonlyMap<string, readonly Claim[]>;
}

/** Hands the settle step, again, every owner the store says is still waiting for it. */
export async function recoverSettleTasks(deps: SettleRecoveryDeps): Promise<SettleRecovery> {
  const recorded = new Set<string>();
  let releases = 0;
  let creates = 0;
  for await (const record of deps.store.listOwners()) {
    recorded.add(record.id);
    const releasing = record.releasing ?? [];
    if (releasing.length > 0) {
      // The first look as the lost task would have had it: after the latest give-back.
      const admittedAt = Math.max(...releasing.map((claim) => claim.since));
      await deps.settler.track(task(record.id, 'release', admittedAt));
      releases++;
    }
    if (record.owner.name === '' && record.claims.length > 0) {
      await deps.settler.track(task(record.id, 'create', record.createdAt));
      creates++;
    }
  }
  const unrecorded = new Map<string, Claim[]>();
  for (const range of [...deps.ranges.clusterIps, deps.ranges.nodePorts]) {
    const key = rangeKey(range);
    for await (const block of deps.store.scanBlocks(key, 0, lastBlockOf(range.exactSize))) {
      for (const [slot, id] of block.holders) {
        if (recorded.has(id)) continue;
        const claim = { slot: '', range: key, offset: offsetAt(block.index, slot) };
        unrecorded.set(id, [...(unrecorded.get(id) ?? []), claim]);
      }
    }
  }
  return { releases, creates, unrecorded };
}

function task(id: string, reason: SettleTask['reason'], admittedAt: number): SettleTask {
  return { id, reason, admittedAt, attempt: 0 };
}

/** What the look at unrecorded holders needs. */
export interface NeverStoredDeps {
  readonly cluster: Pick<ClusterApi, 'listServices'>;
  readonly allocator: Pick<ExclusiveAllocator, 'holding' | 'settle'>;
  readonly ranges: ServiceRanges;
}

/**
 * Frees the values of ids found without a record (`recoverSettleTasks`) that no stored Service
 * carries, by id or by value. Run it once the commit window has closed after they were found:
 * a CREATE the old process admitted has committed by then, or never will. An id that has a
 * record now is its record's (a change since the restart wrote one). Answers the values freed.
 */
export async function freeNeverStored(
  deps: NeverStoredDeps,
  unrecorded: ReadonlyMap<string, readonly Claim[]>,
): Promise<number> {
  if (unrecorded.size === 0) return 0;
  const carriedIds = new Set<string>();
  const carriedValues = new Set<string>();
  for await (const service of deps.cluster.listServices({})) {
    const { owner } = readService(service, deps.ranges);
    carriedIds.add(owner.id);
    for (const value of owner.values) {
      carriedValues.add(claimKey({ range: rangeKey(value.range), offset: value.offset }));
    }
  }
  let freed = 0;
  for (const [id, claims] of unrecorded) {
    if (carriedIds.has(id) || (await deps.allocator.holding(id))) continue;
    const free = claims.filter((claim) => !carriedValues.has(claimKey(claim)));
    if (free.length === 0) continue;
    // Version 0: no record to write (its owner and creation time are never read); each value
    // goes only while `id` still holds it.
    const owner = { kind: 'Service' as const, namespace: '', name: '' };
    await deps.allocator.settle({ id, owner, claims: free, version: 0, createdAt: 0 }, { free });
    freed += free.length;
  }
  return freed;
}

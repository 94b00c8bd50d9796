/**
 * Exclusive values (cluster IPs, node ports) held by owners, with the kube-apiserver's semantics
 * and DynamoDB's conditional writes in place of etcd's resourceVersion check.
 *
 * Protocol for one owner (an allocation id):
 * 1. write the owner record listing every value it will hold (the intent), except for the
 *    CREATE of an owner whose id names it (`unrecorded`): its object carries the id and the
 *    values, and the record is written at its first change (`recorded` rebuilds it);
 * 2. claim each new value with a conditional write on that one value;
 * 3. values it no longer needs are not freed here: they move to the record's `releasing` list and
 *    stay held until the settle step (`shared/settle/`) has read that the object no longer
 *    carries them, because admission sees intent and the apiserver may still refuse the write.
 * A crash between steps leaves a record that a retry completes (it checks what it holds before
 * claiming), or at worst a value held by an owner that no object carries, which the repair pass
 * frees. No value is ever held by two owners: step 2 is the only way in, and it is exclusive,
 * even against the owner itself (a value on its way out is never taken back under its id).
 * What an assignment holds is planned first with no I/O (`plan.ts`).
 */
import { BlockView } from './block-view.js';
import { AllocationContentionError, RangeFullError, ValueAllocatedError } from './errors.js';
import { blockIndexOf, compareOffsets, type Offset, slotOf } from './offset.js';
import { Picks } from './picks.js';
import {
  type Chosen,
  choose,
  claimKey,
  claimOf,
  type Grant,
  grantOf,
  type PlannedValue,
  planAssignment,
  rangeKey,
  type ValueRequest,
} from './plan.js';
import {
  type AllocationStore,
  type Claim,
  type OwnerRecord,
  type OwnerRef,
  OwnerVersionConflictError,
  type ReleasingClaim,
} from './store.js';

/** The words of an assignment, planned in `plan.ts`, where the allocator's callers find them. */
export { claimKey, type Grant, rangeKey, type ValueRequest } from './plan.js';

/** What one `assign` did. */
export interface Assignment {
  readonly grants: readonly Grant[];
  /** Values no longer requested: still held, now waiting for the settle step. */
  readonly releasing: readonly Claim[];
  /** Claims lost to a concurrent writer and picked again. */
  readonly conflicts: number;
}

/** How `assign` and `release` may skip work the caller has already done. */
export interface AssignOptions {
  /** Answer as if, but write nothing; a dynamic answer is a value that was free when read. */
  readonly dryRun?: boolean;
  /**
   * The owner record as the caller just read it, or `'none'` for an id the caller has just
   * made up (no record can exist): either saves reading it again.
   */
  readonly current?: OwnerRecord | 'none';
  /**
   * For an UPDATE, the resourceVersion of the stored object it applies to (`*` if unknown):
   * values it adds are stamped with it, since its write can commit only on top of that version.
   */
  readonly base?: string;
  /**
   * With `current: 'none'`: write no owner record, only the claims. For an id that names its
   * owner (`ownerNamingAllocationId`), whose object will carry the id and the values: they, with
   * the blocks, say everything a record would until the owner first changes, when `recorded`
   * builds its record. The caller hands the claims to the settle step.
   */
  readonly unrecorded?: boolean;
}

/** How often a dynamic pick may lose a race before the request gives up (never unbounded). */
const MAX_CLAIM_ATTEMPTS = 16;

/** Attempts at an owner-record change that keeps losing to a concurrent writer of that record. */
const RECORD_ATTEMPTS = 4;

/** Dependencies, injected so tests control randomness and time. */
export interface ExclusiveAllocatorDeps {
  readonly store: AllocationStore;
  /** The process's view of the blocks (one per process); a new one when absent. */
  readonly view?: BlockView;
  /** Uniform in [0, 1): where a dynamic scan starts. */
  readonly random: () => number;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

/** Hands out exclusive values from ranges to owners. */
export class ExclusiveAllocator {
  readonly #store: AllocationStore;
  readonly #view: BlockView;
  readonly #random: () => number;
  readonly #now: () => number;

  constructor(deps: ExclusiveAllocatorDeps) {
    this.#store = deps.store;
    this.#view = deps.view ?? new BlockView();
    this.#random = deps.random;
    this.#now = deps.now;
  }

  /** The owner record of `id`, if any. */
  holding(id: string): Promise<OwnerRecord | undefined> {
    return this.#store.getOwner(id);
  }

  /**
   * The record an owner created without one (`unrecorded`) would have: of the values its object
   * carries (`requests`, each with its value), those the store's blocks say `id` holds. Version 0:
   * it is not stored, and the first change of the owner writes it (as if absent). Reads one block
   * per distinct block the values fall in.
   */
  async recorded(
    id: string,
    owner: OwnerRef,
    requests: readonly ValueRequest[],
  ): Promise<OwnerRecord> {
    const claims: Claim[] = [];
    for (const request of requests) {
      const offset =
        request.value === undefined ? undefined : request.range.offsetOf(request.value);
      if (offset === undefined) continue;
      const key = rangeKey(request.range);
      if ((await this.#holderOf(key, offset)) === id) {
        claims.push({ slot: request.slot, range: key, offset });
      }
    }
    return { id, owner, claims, version: 0, createdAt: this.#now() };
  }

  /**
   * Makes owner `id` hold exactly the requested slots: slots it already holds with a matching
   * value are kept, new ones allocated, the rest released. All or nothing: when a request fails,
   * what this call claimed is given back and the error thrown. With `dryRun` nothing is written
   * and a dynamic answer is a value that was free when read.
   */
  async assign(
    id: string,
    owner: OwnerRef,
    requests: readonly ValueRequest[],
    options: AssignOptions = {},
  ): Promise<Assignment> {
    const picks = new Picks(this.#store, this.#view, this.#random);
    try {
      return await this.#assign(id, owner, requests, options, picks);
    } finally {
      // Dynamic picks were held in the view from the pick to the claim's answer.
      picks.finish();
    }
  }

  async #assign(
    id: string,
    owner: OwnerRef,
    requests: readonly ValueRequest[],
    options: AssignOptions,
    picks: Picks,
  ): Promise<Assignment> {
    const fresh = options.current === 'none';
    const previous = fresh ? undefined : await this.#current(id, options.current);
    const now = this.#now();
    const plan = await planAssignment(previous, requests, picks, { now, base: options.base });
    const pending = plan.values;
    const { dropped, releasing: stillReleasing } = plan;
    const chosen: Chosen = new Map();
    for (const value of pending) choose(chosen, value.key, value.offset);
    const grantsOf = (): Grant[] => pending.map(grantOf);

    // Recorded values this owner already holds need no write. A dry run reads a static value's
    // holder because it will not try the conditional write that would otherwise tell.
    const toClaim: PlannedValue[] = [];
    for (const entry of pending) {
      const isStatic = entry.request.value !== undefined;
      if (entry.recorded || (options.dryRun && isStatic)) {
        const holder = await this.#holderOf(entry.key, entry.offset);
        if (holder === id && entry.recorded) continue;
        if (holder !== undefined && isStatic)
          throw new ValueAllocatedError(
            entry.request.range,
            entry.request.value ?? '',
            entry.request.slot,
          );
      }
      toClaim.push(entry);
    }
    if (options.dryRun) return { grants: grantsOf(), releasing: dropped, conflicts: 0 };
    if (toClaim.length === 0 && dropped.length === 0 && plan.takenBack === 0 && previous) {
      return { grants: grantsOf(), releasing: [], conflicts: 0 };
    }

    const recordOf = (version: number): OwnerRecord => ({
      id,
      owner,
      claims: pending.map(claimOf),
      ...(stillReleasing.length > 0 ? { releasing: stillReleasing } : {}),
      version,
      createdAt: previous?.createdAt ?? now,
    });
    let record = recordOf((previous?.version ?? 0) + 1);
    const unrecorded = fresh && options.unrecorded === true;
    // The intent must be durable before a claim whenever a retry could come back with this id.
    // A fresh id is known to nobody else, so its intent and its claims are written at once; an
    // owner-naming one needs none (its object will say what it holds).
    const intent = unrecorded
      ? Promise.resolve()
      : this.#store.putOwner(record, previous?.version ?? 0);
    if (!fresh) await intent;

    let conflicts = 0;
    // Amendments after lost races are chained: each one conditions on the version before it.
    let amendments: Promise<void> = intent;
    const amend = () => {
      if (unrecorded) return amendments;
      amendments = amendments.then(async () => {
        const amended = recordOf(record.version + 1);
        await this.#store.putOwner(amended, record.version);
        record = amended;
      });
      return amendments;
    };
    const claimed: PlannedValue[] = [];
    const claimOne = async (entry: PlannedValue) => {
      for (let attempt = 1; ; attempt++) {
        const stamp = this.#view.stamp();
        const outcome = await this.#store.claim(entry.key, entry.offset, id);
        if (outcome.block) {
          this.#view.apply(
            entry.key,
            outcome.block,
            stamp,
            outcome.taken ? { offset: entry.offset, holder: id } : undefined,
          );
        }
        if (outcome.taken) break;
        if (entry.request.value !== undefined) {
          throw new ValueAllocatedError(
            entry.request.range,
            entry.request.value,
            entry.request.slot,
          );
        }
        conflicts++;
        if (attempt >= MAX_CLAIM_ATTEMPTS) {
          throw new AllocationContentionError(entry.request.range, attempt, entry.request.slot);
        }
        const next = await picks.repick(entry, outcome.block, chosen.get(entry.key));
        if (next === undefined) throw new RangeFullError(entry.request.range, entry.request.slot);
        choose(chosen, entry.key, next);
        entry.offset = next;
        await amend();
      }
      claimed.push(entry);
    };
    // Requested values are claimed one at a time, in one order for every admission (range, then
    // value), as the apiserver claims a Service's IP before its ports: of concurrent requests for
    // the same values, the one that wins the first goes on to the rest, instead of each winning
    // one and every one of them giving up. Picked values cannot collide that way: in parallel.
    const requested = toClaim
      .filter((entry) => entry.request.value !== undefined)
      .sort((a, b) =>
        a.key === b.key ? compareOffsets(a.offset, b.offset) : a.key < b.key ? -1 : 1,
      );
    const claimInOrder = async () => {
      for (const entry of requested) await claimOne(entry);
    };
    const picked = toClaim.filter((entry) => entry.request.value === undefined);
    const outcomes = await Promise.allSettled([intent, claimInOrder(), ...picked.map(claimOne)]);
    const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failure) {
      await amendments.catch(() => undefined);
      await this.#rollback(id, unrecorded ? undefined : record, previous, claimed);
      throw failure.reason;
    }
    await amendments;
    return { grants: grantsOf(), releasing: dropped, conflicts };
  }

  /**
   * Writes into the record of an owner created with generateName the name the apiserver gave it
   * (`owner`, named): from then on it is that object, and a CREATE carrying its id is a copy.
   * A record already named is left alone. Answers the record as left; undefined when absent.
   */
  learnName(
    id: string,
    known: OwnerRecord | undefined,
    owner: OwnerRef,
  ): Promise<OwnerRecord | undefined> {
    return this.#change(id, known, (record) =>
      record.owner.name === '' && owner.name !== '' ? { ...record, owner } : record,
    );
  }

  /**
   * Gives back everything owner `id` holds (its object is being deleted): every value moves to
   * the record's `releasing` list, still held, for the settle step to free once the object is
   * gone. An unknown owner changes nothing. Returns the record as written, if any.
   */
  async giveBack(id: string, known?: OwnerRecord): Promise<OwnerRecord | undefined> {
    return this.#change(id, known, (record) =>
      record.claims.length === 0
        ? record
        : {
            ...record,
            claims: [],
            releasing: [
              ...(record.releasing ?? []),
              ...record.claims.map((claim) => ({ ...claim, since: this.#now() })),
            ],
          },
    );
  }

  /**
   * Frees values of `record` that the settle step found no object carries, and puts `kept`
   * values back among the held ones (a refused change). The record is rewritten first, versioned,
   * and each value freed after: a concurrent admission of the same owner either wins the record
   * write (and this call frees nothing) or finds the value gone from its record and can never
   * claim it again under its id while the release is on its way. False when the record changed
   * since it was read; the caller reads it again.
   */
  async settle(
    record: OwnerRecord,
    decision: { readonly free: readonly Claim[]; readonly keep?: readonly Claim[] },
  ): Promise<boolean> {
    const freed = new Set(decision.free.map(claimKey));
    const kept = new Set((decision.keep ?? []).map(claimKey));
    if (freed.size === 0 && kept.size === 0) return true;
    const claims = [
      ...record.claims.filter((c) => !freed.has(claimKey(c))),
      ...(record.releasing ?? [])
        .filter((c) => kept.has(claimKey(c)))
        .map(({ since: _, ...claim }) => claim),
    ];
    const releasing = (record.releasing ?? []).filter(
      (c) => !freed.has(claimKey(c)) && !kept.has(claimKey(c)),
    );
    // An owner created without a record (version 0: its CREATE's settle task names its claims)
    // has none to rewrite: its values alone are freed, each conditional on `id` still holding it.
    if (record.version > 0 && !(await this.#rewriteSettled(record, claims, releasing))) {
      return false;
    }
    for (const claim of decision.free)
      await this.#store.release(claim.range, claim.offset, record.id);
    return true;
  }

  /** The record after a settle: deleted when it holds nothing more. False on a conflict. */
  async #rewriteSettled(
    record: OwnerRecord,
    claims: Claim[],
    releasing: ReleasingClaim[],
  ): Promise<boolean> {
    if (claims.length === 0 && releasing.length === 0) {
      return this.#store.deleteOwner(record.id, record.version);
    }
    const next: OwnerRecord = {
      id: record.id,
      owner: record.owner,
      claims,
      ...(releasing.length > 0 ? { releasing } : {}),
      version: record.version + 1,
      createdAt: record.createdAt,
    };
    try {
      await this.#store.putOwner(next, record.version);
      return true;
    } catch (error) {
      if (error instanceof OwnerVersionConflictError) return false;
      throw error;
    }
  }

  /** Rewrites the record of `id` with `change`, versioned, reading it again on a conflict. */
  async #change(
    id: string,
    known: OwnerRecord | undefined,
    change: (record: OwnerRecord) => OwnerRecord,
  ): Promise<OwnerRecord | undefined> {
    for (let attempt = 1; ; attempt++) {
      // The caller's record first (one built by `recorded` is written as if absent), then the store's.
      const record = attempt === 1 && known ? known : await this.#store.getOwner(id);
      if (!record) return undefined;
      const next = change(record);
      if (next === record) return record;
      const written = { ...next, version: record.version + 1 };
      try {
        await this.#store.putOwner(written, record.version);
        return written;
      } catch (error) {
        if (!(error instanceof OwnerVersionConflictError) || attempt >= RECORD_ATTEMPTS)
          throw error;
      }
    }
  }

  async #current(id: string, known: OwnerRecord | undefined): Promise<OwnerRecord | undefined> {
    return known ?? this.#store.getOwner(id);
  }

  async #holderOf(key: string, offset: Offset): Promise<string | undefined> {
    const index = blockIndexOf(offset);
    for await (const block of this.#store.scanBlocks(key, index, index)) {
      return block.holders.get(slotOf(offset));
    }
    return undefined;
  }

  async #rollback(
    id: string,
    record: OwnerRecord | undefined,
    previous: OwnerRecord | undefined,
    claimed: readonly PlannedValue[],
  ) {
    for (const entry of claimed) await this.#store.release(entry.key, entry.offset, id);
    if (!record) return;
    if (previous?.version === 0) {
      // Built by `recorded`, never stored: nothing to put back.
      await this.#store.deleteOwner(id, record.version);
    } else if (previous) {
      await this.#store.putOwner({ ...previous, version: record.version + 1 }, record.version);
    } else {
      await this.#store.deleteOwner(id);
    }
  }
}

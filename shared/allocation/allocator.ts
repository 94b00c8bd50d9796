import type { Owner } from '../vocabulary/owner.js';
import { BlockView } from './block-view.js';
import { AssignOperation, holderOf, ownerRecord, putAfter, releaseAll } from './operation.js';
import { Picks } from './picks.js';
import {
  claimKey,
  type Grant,
  givenBack,
  grantOf,
  planAssignment,
  rangeKey,
  type ValueRequest,
} from './plan.js';
import {
  type AllocationStore,
  type Claim,
  type OwnerRecord,
  OwnerVersionConflictError,
  type ReleasingClaim,
} from './store.js';

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
    owner: Owner,
    requests: readonly ValueRequest[],
  ): Promise<OwnerRecord> {
    const claims: Claim[] = [];
    for (const request of requests) {
      const offset =
        request.value === undefined ? undefined : request.range.offsetOf(request.value);
      if (offset === undefined) continue;
      const key = rangeKey(request.range);
      if ((await holderOf(this.#store, key, offset)) === id) {
        claims.push({ slot: request.slot, range: key, offset });
      }
    }
    return { id, owner, claims, version: 0, createdAt: this.#now() };
  }

  /**
   * Writes the record of an owner created without one (`unrecorded`), as its first change would:
   * for a deployment with no cluster to name it from (a local server without a kubeconfig), so
   * that who holds one of its values can be told by the value. A record already there (a change
   * of the owner came first) is left as it is.
   */
  async recordCreated(id: string, owner: Owner, claims: readonly Claim[]): Promise<void> {
    try {
      await putAfter(
        this.#store,
        0,
        ownerRecord({ id, owner, createdAt: this.#now() }, claims, []),
      );
    } catch (error) {
      if (!(error instanceof OwnerVersionConflictError)) throw error;
    }
  }

  /**
   * Makes owner `id` hold exactly the requested slots: slots it already holds with a matching
   * value are kept, new ones allocated, the rest released. All or nothing: when a request fails,
   * what this call claimed is given back and the error thrown. With `dryRun` nothing is written
   * and a dynamic answer is a value that was free when read.
   */
  async assign(
    id: string,
    owner: Owner,
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
    owner: Owner,
    requests: readonly ValueRequest[],
    options: AssignOptions,
    picks: Picks,
  ): Promise<Assignment> {
    const fresh = options.current === 'none';
    const previous = fresh ? undefined : (options.current ?? (await this.holding(id)));
    const now = this.#now();
    const plan = await planAssignment(previous, requests, picks, { now, base: options.base });
    const operation = new AssignOperation(
      { store: this.#store, view: this.#view, picks },
      { id, owner, previous, plan, createdAt: previous?.createdAt ?? now, admittedAt: now },
    );
    const toClaim = await operation.unclaimed(options.dryRun === true);
    const answer = (releasing: readonly Claim[], conflicts: number): Assignment => ({
      grants: plan.values.map(grantOf),
      releasing,
      conflicts,
    });
    if (options.dryRun) return answer(plan.dropped, 0);
    if (toClaim.length === 0 && plan.dropped.length === 0 && plan.takenBack === 0 && previous) {
      return answer([], 0);
    }
    const unrecorded = fresh && options.unrecorded === true;
    return answer(plan.dropped, await operation.commit(toClaim, { fresh, unrecorded }));
  }

  /**
   * Writes into the record of an owner created with generateName the name the apiserver gave it
   * (`owner`, named): from then on it is that object, and a CREATE carrying its id is a copy.
   * A record already named is left alone. Answers the record as left; undefined when absent.
   */
  learnName(
    id: string,
    known: OwnerRecord | undefined,
    owner: Owner,
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
            releasing: [...(record.releasing ?? []), ...givenBack(record.claims, this.#now())],
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
    await releaseAll(this.#store, record.id, decision.free);
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
    try {
      await putAfter(this.#store, record.version, ownerRecord(record, claims, releasing));
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
      try {
        return await putAfter(this.#store, record.version, next);
      } catch (error) {
        if (!(error instanceof OwnerVersionConflictError) || attempt >= RECORD_ATTEMPTS)
          throw error;
      }
    }
  }
}

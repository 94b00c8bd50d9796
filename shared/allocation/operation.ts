/**
 * The writes of an owner's assignment once it is planned, as the kube-apiserver's
 * `PortAllocationOperation` keeps them apart from its bitmap: the owner record (the intent)
 * first, then the claims, a lost pick picked again, and on a failure every claim given back and
 * the record put back as it was. Its record writes and releases are the ones the allocator's
 * other changes of a record make too (a name learned, values given back, a settle).
 */

import { blockIndexOf, compareOffsets, type Offset, slotOf } from '../net/offset.js';
import type { Owner } from '../vocabulary/owner.js';
import type { BlockView } from './block-view.js';
import { AllocationContentionError, RangeFullError, ValueAllocatedError } from './errors.js';
import type { Picks } from './picks.js';
import { type AssignmentPlan, type Chosen, choose, claimOf, type PlannedValue } from './plan.js';
import type { AllocationStore, Claim, OwnerRecord, ReleasingClaim } from './store.js';

/** How often a dynamic pick may lose a race before the request gives up (never unbounded). */
const MAX_CLAIM_ATTEMPTS = 16;

/** The record of `base`'s owner holding `claims` and giving back `releasing` (none: no list). */
export function ownerRecord(
  base: Pick<OwnerRecord, 'id' | 'owner' | 'createdAt'>,
  claims: readonly Claim[],
  releasing: readonly ReleasingClaim[],
): Omit<OwnerRecord, 'version'> {
  return {
    id: base.id,
    owner: base.owner,
    claims,
    ...(releasing.length > 0 ? { releasing } : {}),
    createdAt: base.createdAt,
  };
}

/** Writes `record` as the version after `version`, if the store still holds that one (0: none). */
export async function putAfter(
  store: AllocationStore,
  version: number,
  record: Omit<OwnerRecord, 'version'>,
): Promise<OwnerRecord> {
  const next = { ...record, version: version + 1 };
  await store.putOwner(next, version);
  return next;
}

/** Frees each of `claims` that owner `id` still holds, one after the other. */
export async function releaseAll(
  store: AllocationStore,
  id: string,
  claims: readonly Claim[],
): Promise<void> {
  for (const claim of claims) await store.release(claim.range, claim.offset, id);
}

/** Who holds a value now, from the store; undefined when it is free. */
export async function holderOf(
  store: AllocationStore,
  key: string,
  offset: Offset,
): Promise<string | undefined> {
  const index = blockIndexOf(offset);
  for await (const block of store.scanBlocks(key, index, index)) {
    return block.holders.get(slotOf(offset));
  }
  return undefined;
}

/** What an operation writes for: the owner, its record before, and its plan. */
export interface Intent {
  readonly id: string;
  readonly owner: Owner;
  /** The record read before planning; undefined when there is none. */
  readonly previous: OwnerRecord | undefined;
  readonly plan: AssignmentPlan;
  /** Epoch milliseconds of the record's first write. */
  readonly createdAt: number;
  /** Epoch milliseconds of this admission: each value it claims is stamped with it. */
  readonly admittedAt: number;
}

/** The claims and record writes of one planned assignment. */
export class AssignOperation {
  readonly #store: AllocationStore;
  readonly #view: BlockView;
  readonly #picks: Picks;
  readonly #intent: Intent;
  readonly #chosen: Chosen = new Map();
  readonly #claimed: PlannedValue[] = [];
  /** The version of the record as last written (0: none). */
  #version: number;
  /** False for an owner whose object says what it holds (`unrecorded`): no record is written. */
  #recorded = true;
  /** The intent, then each amendment after a lost race: each conditions on the one before. */
  #writes: Promise<void> = Promise.resolve();
  #conflicts = 0;

  constructor(deps: { store: AllocationStore; view: BlockView; picks: Picks }, intent: Intent) {
    this.#store = deps.store;
    this.#view = deps.view;
    this.#picks = deps.picks;
    this.#intent = intent;
    this.#version = intent.previous?.version ?? 0;
    for (const value of intent.plan.values) choose(this.#chosen, value.key, value.offset);
  }

  /**
   * The planned values a write must claim: recorded values the owner already holds need none. A
   * dry run reads a static value's holder because it will not try the conditional write that
   * would otherwise tell. Throws when a static value is held by another owner.
   */
  async unclaimed(dryRun: boolean): Promise<PlannedValue[]> {
    const { id, plan } = this.#intent;
    const toClaim: PlannedValue[] = [];
    for (const value of plan.values) {
      const { request } = value;
      const isStatic = request.value !== undefined;
      if (value.recorded || (dryRun && isStatic)) {
        const holder = await holderOf(this.#store, value.key, value.offset);
        if (holder === id && value.recorded) continue;
        if (holder !== undefined && isStatic) {
          throw new ValueAllocatedError(request.range, request.value ?? '', request.slot);
        }
      }
      toClaim.push(value);
    }
    return toClaim;
  }

  /**
   * Writes the intent and claims `toClaim`; answers the claims lost to a concurrent writer. On a
   * failure, gives back what it claimed and puts the record back, then throws. `fresh`: the id
   * was just made up (no record can exist); `unrecorded`: no record is written (`AssignOptions`).
   */
  async commit(
    toClaim: readonly PlannedValue[],
    mode: { readonly fresh: boolean; readonly unrecorded: boolean },
  ): Promise<number> {
    this.#recorded = !mode.unrecorded;
    // The intent must be durable before a claim whenever a retry could come back with this id.
    // A fresh id is known to nobody else, so its intent and its claims are written at once; an
    // owner-naming one needs none (its object will say what it holds).
    const intent = this.#recorded ? this.#write() : Promise.resolve();
    if (!mode.fresh) await intent;
    this.#writes = intent;
    // Requested values are claimed one at a time, in one order for every admission (range, then
    // value), as the apiserver claims a Service's IP before its ports: of concurrent requests for
    // the same values, the one that wins the first goes on to the rest, instead of each winning
    // one and every one of them giving up. Picked values cannot collide that way: in parallel.
    const requested = toClaim
      .filter((value) => value.request.value !== undefined)
      .sort((a, b) =>
        a.key === b.key ? compareOffsets(a.offset, b.offset) : a.key < b.key ? -1 : 1,
      );
    const claimInOrder = async () => {
      for (const value of requested) await this.#claim(value);
    };
    const picked = toClaim.filter((value) => value.request.value === undefined);
    const claims = [intent, claimInOrder(), ...picked.map((value) => this.#claim(value))];
    const failure = (await Promise.allSettled(claims)).find(
      (outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected',
    );
    if (failure) {
      await this.#writes.catch(() => undefined);
      await this.#rollback();
      throw failure.reason;
    }
    await this.#writes;
    return this.#conflicts;
  }

  /** Claims one value; a dynamic one lost to a concurrent writer is picked again and recorded. */
  async #claim(value: PlannedValue): Promise<void> {
    const { id } = this.#intent;
    const { request } = value;
    for (let attempt = 1; ; attempt++) {
      const stamp = this.#view.stamp();
      const outcome = await this.#store.claim(value.key, value.offset, id, this.#intent.admittedAt);
      if (outcome.block) {
        const taken = outcome.taken ? { offset: value.offset, holder: id } : undefined;
        this.#view.apply(value.key, outcome.block, stamp, taken);
      }
      if (outcome.taken) break;
      if (request.value !== undefined) {
        throw new ValueAllocatedError(request.range, request.value, request.slot);
      }
      this.#conflicts++;
      if (attempt >= MAX_CLAIM_ATTEMPTS) {
        throw new AllocationContentionError(request.range, attempt, request.slot);
      }
      const next = await this.#picks.repick(value, outcome.block, this.#chosen.get(value.key));
      if (next === undefined) throw new RangeFullError(request.range, request.slot);
      choose(this.#chosen, value.key, next);
      value.offset = next;
      await this.#amend();
    }
    this.#claimed.push(value);
  }

  /** Records a value picked again, once every earlier write of the record has landed. */
  #amend(): Promise<void> {
    if (this.#recorded) this.#writes = this.#writes.then(() => this.#write());
    return this.#writes;
  }

  /** Writes the record as the plan stands now, as the next version. */
  async #write(): Promise<void> {
    const { plan } = this.#intent;
    const record = ownerRecord(this.#intent, plan.values.map(claimOf), plan.releasing);
    await putAfter(this.#store, this.#version, record);
    this.#version++;
  }

  /** Gives back what this operation claimed, then the record as it was before. */
  async #rollback(): Promise<void> {
    const { id, previous } = this.#intent;
    await releaseAll(this.#store, id, this.#claimed.map(claimOf));
    if (!this.#recorded) return;
    if (previous?.version === 0) {
      // Built by `recorded`, never stored: nothing to put back.
      await this.#store.deleteOwner(id, this.#version);
    } else if (previous) {
      await putAfter(this.#store, this.#version, previous);
    } else {
      await this.#store.deleteOwner(id);
    }
  }
}

/**
 * An owner's assignment planned before anything is written, as the kube-apiserver keeps its
 * bitmap logic apart from the operation that claims: from the owner record and the requests,
 * which values each slot keeps, takes back from `releasing`, asks for or picks fresh, and which
 * values the owner gives back. No I/O and no clock of its own: fresh values come from the view
 * of the ranges passed in, and the admission's time is an argument.
 */

import type { Offset } from '../net/offset.js';
import type { ValueRange } from '../net/value-range.js';
import { RangeFullError, ValueAllocatedError, ValueNotInRangeError } from './errors.js';
import type { Claim, OwnerRecord, ReleasingClaim } from './store.js';

/** One value an owner needs, named by its slot (e.g. `spec.clusterIPs[0]`). */
export interface ValueRequest {
  readonly slot: string;
  readonly range: ValueRange;
  /** The value asked for (a static request); absent for a dynamic pick. */
  readonly value?: string;
}

/** A value an owner holds. */
export interface Grant {
  readonly slot: string;
  readonly range: ValueRange;
  readonly value: string;
}

/** Store key of a range: its kind and name. */
export function rangeKey(range: ValueRange): string {
  return `${range.kind}#${range.name}`;
}

/** One value of one range, as a map key. */
export function claimKey(claim: { readonly range: string; readonly offset: Offset }): string {
  return `${claim.range}#${claim.offset}`;
}

/** A value the assignment gives a slot: kept, taken back, asked for, or picked fresh. */
export interface PlannedValue {
  readonly request: ValueRequest;
  /** The range's store key. */
  readonly key: string;
  /** Moved by the operation when a fresh pick loses its claim's race and is picked again. */
  offset: Offset;
  /** Listed in the owner record already: it may be claimed, or a crash may have stopped short. */
  readonly recorded: boolean;
  /** When an admission last added it to this owner, and on which stored version (`Claim`). */
  readonly claimedAt?: number;
  readonly addedOn?: string;
}

/** What an assignment will hold and give back. */
export interface AssignmentPlan {
  /** The values of the requests a record or a value decides, in request order; then fresh picks. */
  readonly values: readonly PlannedValue[];
  /** Recorded values no request keeps: still held, now given back. */
  readonly dropped: readonly Claim[];
  /** The record's `releasing` list after: what no request took back, then `dropped`. */
  readonly releasing: readonly ReleasingClaim[];
  /** How many values were taken back from `releasing`. */
  readonly takenBack: number;
}

/** The admission a plan is made for. */
export interface Admission {
  /** Epoch milliseconds: what the values it adds or gives back are stamped with. */
  readonly now: number;
  /** For an UPDATE, the resourceVersion it applies to (`AssignOptions.base`). */
  readonly base?: string | undefined;
}

/** The ranges as a plan sees them, read-only: where fresh values come from. */
export interface RangeView {
  /** A value of `range` (store key `key`) that is free and not `excluded`; undefined when none is. */
  pick(
    range: ValueRange,
    key: string,
    excluded: ReadonlySet<Offset> | undefined,
  ): Promise<Offset | undefined>;
}

/** Offsets per range store key: the values an assignment has chosen, which later picks pass over. */
export type Chosen = Map<string, Set<Offset>>;

/** Adds a value to `chosen`. */
export function choose(chosen: Chosen, key: string, offset: Offset): void {
  const set = chosen.get(key) ?? new Set<Offset>();
  set.add(offset);
  chosen.set(key, set);
}

/** Claims given back at `since`: still held, until the settle step frees them. */
export function givenBack(claims: readonly Claim[], since: number): ReleasingClaim[] {
  return claims.map((claim) => ({ ...claim, since }));
}

/** The claim the owner record lists for a planned value. */
export function claimOf(value: PlannedValue): Claim {
  return { slot: value.request.slot, range: value.key, offset: value.offset, ...addedBy(value) };
}

/** The grant an assignment answers for a planned value. */
export function grantOf(value: PlannedValue): Grant {
  const { slot, range } = value.request;
  return { slot, range, value: range.valueAt(value.offset) };
}

/** The stamps of the admission that added a value, carried over as they are. */
function addedBy(claim: { readonly claimedAt?: number; readonly addedOn?: string }) {
  return {
    ...(claim.claimedAt === undefined ? {} : { claimedAt: claim.claimedAt }),
    ...(claim.addedOn === undefined ? {} : { addedOn: claim.addedOn }),
  };
}

/**
 * Plans the assignment of `requests` to the owner of `previous` (undefined: it holds nothing).
 * Throws as the kube-apiserver would: a value outside its range, one value asked for by two
 * slots, a range with no free value for a dynamic request.
 */
export async function planAssignment(
  previous: OwnerRecord | undefined,
  requests: readonly ValueRequest[],
  view: RangeView,
  admission: Admission,
): Promise<AssignmentPlan> {
  /** Stamps a value this admission adds (allocated, or taken back from `releasing`). */
  const addedNow = {
    claimedAt: admission.now,
    ...(admission.base === undefined ? {} : { addedOn: admission.base }),
  };
  const recorded = new Map((previous?.claims ?? []).map((claim) => [claim.slot, claim]));
  const releasing = new Map((previous?.releasing ?? []).map((claim) => [claimKey(claim), claim]));
  const values: PlannedValue[] = [];
  const chosen: Chosen = new Map();
  const add = (value: PlannedValue) => {
    values.push(value);
    choose(chosen, value.key, value.offset);
  };
  let takenBack = 0;
  const unresolved: ValueRequest[] = [];
  for (const request of requests) {
    const key = rangeKey(request.range);
    const wanted = request.value === undefined ? undefined : request.range.offsetOf(request.value);
    if (request.value !== undefined && wanted === undefined) {
      throw new ValueNotInRangeError(request.range, request.value, request.slot);
    }
    const have = recorded.get(request.slot);
    // A slot recorded with a matching value keeps it: a retry gets the same value back.
    if (have && have.range === key && (wanted === undefined || wanted === have.offset)) {
      recorded.delete(request.slot);
      add({ request, key, offset: have.offset, recorded: true, ...addedBy(have) });
    } else if (wanted !== undefined) {
      if (chosen.get(key)?.has(wanted)) {
        throw new ValueAllocatedError(request.range, request.value ?? '', request.slot);
      }
      const value = claimKey({ range: key, offset: wanted });
      // Asked for again before it was freed (a refused change retried): it stays held, and
      // counts as added now (this admission's write carries it again).
      const back = releasing.delete(value);
      if (back) takenBack++;
      const elsewhere = previous?.claims.find((claim) => claimKey(claim) === value);
      const stamps = back || elsewhere === undefined ? addedNow : addedBy(elsewhere);
      add({ request, key, offset: wanted, recorded: back || elsewhere !== undefined, ...stamps });
    } else {
      unresolved.push(request);
    }
  }
  for (const request of unresolved) {
    const key = rangeKey(request.range);
    const offset = await view.pick(request.range, key, chosen.get(key));
    if (offset === undefined) throw new RangeFullError(request.range, request.slot);
    add({ request, key, offset, recorded: false, ...addedNow });
  }
  return { values, takenBack, ...givenUp(recorded, releasing, chosen, admission.now) };
}

/** What the owner gives back: recorded values no slot has chosen, and `releasing` as it becomes. */
function givenUp(
  recorded: ReadonlyMap<string, Claim>,
  releasing: ReadonlyMap<string, ReleasingClaim>,
  chosen: Chosen,
  now: number,
): Pick<AssignmentPlan, 'dropped' | 'releasing'> {
  // A recorded value that moved to another slot of the same owner is kept, not given back.
  const dropped = [...recorded.values()].filter(
    (claim) => !chosen.get(claim.range)?.has(claim.offset),
  );
  return { dropped, releasing: [...releasing.values(), ...givenBack(dropped, now)] };
}

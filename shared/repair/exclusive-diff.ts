/**
 * The repair policy for exclusive values (cluster IPs, node ports): from the store's view taken
 * first and the live Services listed after it, decide what to record, what to free and what to
 * report. Pure: the pass (`pass.ts`) reads and writes.
 *
 * Per value, with H the holder in the snapshot and C the live owners carrying it (list order):
 * - C empty, H set: a leak suspect; freed (conditional on H) on the grace-th consecutive pass.
 * - C set: the primary is the claimant whose id is H, else the first one listed; every other
 *   claimant is a duplicate (AlreadyAllocated), never "fixed" by taking the value away.
 *   - H is the primary: fine; an owner record that lacks the claim is amended (an owner created
 *     without a record needs none: its object and the block agree).
 *   - H unset: the value is claimed for the primary (NotAllocated, "repairing").
 *   - H is no live object's id: the value moves from H to the primary in one conditional write.
 *   - H is a live object that does not carry it: H's hold counts down like a leak, then moves.
 * Owner records of ids no live object carries and holding nothing count down too, then go.
 * A value claimed, or a record written, less than the commit window (`COMMIT_WINDOW_MS`) before
 * the listing began is no suspect at all (no countdown starts): its object may be on its way to
 * etcd, and the listing could not have seen it.
 * A Service being deleted (a finalizer holds it) spares what it still holds and claims nothing:
 * its DELETE gave everything back, and the settle step frees it once the Service is gone.
 * An allocation made after the snapshot is never touched: it is not in the snapshot, and every
 * write is conditional on the holder the snapshot read.
 */
import { rangeKey } from '../allocation/allocator.js';
import type { Claim, OwnerRecord } from '../allocation/store.js';
import type { Offset } from '../net/offset.js';
import type { ValueRange } from '../net/value-range.js';
import { COMMIT_WINDOW_MS } from '../vocabulary/commit-window.js';
import type { Owner } from '../vocabulary/owner.js';
import { alreadyAllocated, type Finding, leaked, notAllocated } from './findings.js';
import { countSighting, type LeakCounter } from './ledger.js';
import { type LiveOwner, type ServiceReading, valueKey } from './live.js';

/** Ledger key prefix of suspected leaked values. */
export const VALUE_LEAK_PREFIX = 'value#';
/** Ledger key prefix of suspected stale owner records. */
export const OWNER_LEAK_PREFIX = 'owner#';
/** Ledger key prefix of claims a record lists but its owner neither holds nor carries. */
export const STALE_CLAIM_PREFIX = 'claim#';

/** The store as the pass read it before listing anything. */
export interface ExclusiveSnapshot {
  readonly ranges: readonly ValueRange[];
  /** Range store key (`rangeKey`) → offset → holder id. */
  readonly held: ReadonlyMap<string, ReadonlyMap<Offset, string>>;
  /** Range store key → offset → when its holder claimed it (epoch ms), where the block says. */
  readonly claimedAt?: ReadonlyMap<string, ReadonlyMap<Offset, number>>;
  readonly owners: ReadonlyMap<string, OwnerRecord>;
}

/** A value the pass writes, named by range and offset. */
export interface ValueTarget {
  readonly range: ValueRange;
  readonly offset: Offset;
}

/** Take a free value for a live owner. */
export interface ClaimAction extends ValueTarget {
  readonly owner: string;
  /**
   * Reported only if the claim is taken: the store may have been read just before the owner's
   * own allocation landed, and a value its owner already holds is no finding.
   */
  readonly finding: Finding;
}

/** Move a value from the holder read in the snapshot to a live owner, conditional on `from`. */
export interface TransferAction extends ValueTarget {
  readonly from: string;
  readonly to: string;
  /** Set when `from` is a live object whose hold counted down: the move also frees a leak. */
  readonly leak?: Finding;
}

/** Free a leaked value, conditional on `holder`. */
export interface FreeAction extends ValueTarget {
  readonly holder: string;
  readonly leak: Finding;
}

/** Claims to add to (or create) an owner record, written before the values are taken. */
export interface RecordIntent {
  readonly id: string;
  readonly owner: Owner;
  readonly claims: readonly Claim[];
}

/** Claims to drop from a record after their values were freed or moved away. */
export interface RecordCleanup {
  readonly id: string;
  readonly claims: readonly { readonly range: string; readonly offset: Offset }[];
  /** The id belongs to no live object: delete the record once it lists nothing it holds. */
  readonly ownerGone: boolean;
}

/** A stale record to delete, if it is still at the version read. */
export interface RecordDeletion {
  readonly id: string;
  readonly version: number;
}

/** Everything one pass decided about exclusive values. */
export interface ExclusivePlan {
  /** Findings on live objects (each becomes an Event and a summary count). */
  readonly findings: readonly Finding[];
  readonly intents: readonly RecordIntent[];
  readonly claims: readonly ClaimAction[];
  readonly transfers: readonly TransferAction[];
  readonly frees: readonly FreeAction[];
  readonly cleanups: readonly RecordCleanup[];
  readonly deletions: readonly RecordDeletion[];
  /**
   * Claims to drop from the records of live owners: listed, yet neither held in the store nor
   * carried by the object (an intent a crash or a refused write left behind).
   */
  readonly trims: readonly { readonly id: string; readonly claims: readonly Claim[] }[];
  /** Leak counters still counting down after this pass. */
  readonly counters: readonly LeakCounter[];
}

/** What the policy decides from. */
export interface ExclusiveDiffInput {
  readonly snapshot: ExclusiveSnapshot;
  readonly services: readonly ServiceReading[];
  readonly counters: ReadonlyMap<string, LeakCounter>;
  readonly grace: number;
  /** Epoch ms, stamped on new counters. */
  readonly now: number;
  /**
   * Epoch ms just before the first Service was listed: what was claimed less than the commit
   * window before it may belong to an object the apiserver stored after the listing.
   */
  readonly listedAt: number;
}

interface Claimant {
  readonly owner: LiveOwner;
  readonly slot: string;
}

interface Carried {
  readonly range: ValueRange;
  readonly offset: Offset;
  readonly claimants: Claimant[];
}

/** Decides one pass over cluster IPs and node ports. */
export function diffExclusive(input: ExclusiveDiffInput): ExclusivePlan {
  const { snapshot, services, counters, grace, now } = input;
  const young = youngClaims(snapshot, input.listedAt - COMMIT_WINDOW_MS);
  const findings: Finding[] = services.flatMap((s) => s.problems);
  const liveIds = new Set(services.map((s) => s.owner.id));
  const carried = new Map<string, Carried>();
  /** Values a terminating Service carries and still holds: neither repaired nor freed. */
  const spared = new Set<string>();
  for (const { owner } of services) {
    if (owner.terminating) {
      for (const value of owner.values) {
        const holder = snapshot.held.get(rangeKey(value.range))?.get(value.offset);
        if (holder === owner.id) spared.add(valueKey(value.range, value.offset));
      }
      continue;
    }
    for (const value of owner.values) {
      const key = valueKey(value.range, value.offset);
      const entry = carried.get(key) ?? { range: value.range, offset: value.offset, claimants: [] };
      entry.claimants.push({ owner, slot: value.slot });
      carried.set(key, entry);
    }
  }

  const intents = new Map<string, { owner: Owner; claims: Claim[] }>();
  const intend = (owner: LiveOwner, claim: Claim) => {
    const entry = intents.get(owner.id) ?? {
      owner: { kind: 'Service', namespace: owner.object.namespace, name: owner.object.name },
      claims: [],
    };
    entry.claims.push(claim);
    intents.set(owner.id, entry);
  };
  const cleanups = new Map<string, { range: string; offset: Offset }[]>();
  const cleanUp = (id: string, range: ValueRange, offset: Offset) => {
    const list = cleanups.get(id) ?? [];
    list.push({ range: rangeKey(range), offset });
    cleanups.set(id, list);
  };
  const claims: ClaimAction[] = [];
  const transfers: TransferAction[] = [];
  const frees: FreeAction[] = [];
  const kept: LeakCounter[] = [];
  /** Ids that will still hold something after this pass's writes. */
  const stillHolding = new Set<string>();

  const countDown = (range: ValueRange, offset: Offset, holder: string) => {
    const key = `${VALUE_LEAK_PREFIX}${valueKey(range, offset)}`;
    const verdict = countSighting(counters.get(key), key, holder, grace, now);
    if (!verdict.free) kept.push(verdict.counter);
    return verdict.free;
  };

  // Values the live objects carry, in list order of their first claimant.
  for (const { range, offset, claimants } of carried.values()) {
    const holder = snapshot.held.get(rangeKey(range))?.get(offset);
    const first = claimants[0];
    if (!first) continue;
    const primary = claimants.find((c) => c.owner.id === holder) ?? first;
    const value = range.valueAt(offset);
    if (spared.has(valueKey(range, offset))) {
      // Held by a Service being deleted that still carries it: a duplicate until that one is gone.
      for (const other of claimants)
        findings.push(alreadyAllocated(range, value, other.owner.object));
      if (holder !== undefined) stillHolding.add(holder);
      continue;
    }
    for (const other of claimants) {
      if (other !== primary) findings.push(alreadyAllocated(range, value, other.owner.object));
    }
    const claim: Claim = { slot: primary.slot, range: rangeKey(range), offset };
    if (holder === primary.owner.id) {
      stillHolding.add(holder);
      const record = snapshot.owners.get(holder);
      const lists = (c: Claim) => c.range === claim.range && c.offset === offset;
      // An owner without a record (created unrecorded) is in order: its object carries the
      // value and the block holds it for it. A record that lacks the claim is amended. A value
      // given back but still carried waits for the settle step, which decides it.
      if (record && !record.claims.some(lists) && !record.releasing?.some(lists)) {
        intend(primary.owner, claim);
      }
      continue;
    }
    if (!primary.owner.recordable) {
      if (holder !== undefined) stillHolding.add(holder);
      continue;
    }
    if (holder === undefined) {
      intend(primary.owner, claim);
      claims.push({
        range,
        offset,
        owner: primary.owner.id,
        finding: notAllocated(range, value, primary.owner.object),
      });
      stillHolding.add(primary.owner.id);
      continue;
    }
    if (
      liveIds.has(holder) &&
      (young.value(range, offset, holder) || !countDown(range, offset, holder))
    ) {
      // A live object holds it without carrying it: maybe an update in flight; wait the grace.
      stillHolding.add(holder);
      continue;
    }
    findings.push(notAllocated(range, value, primary.owner.object));
    intend(primary.owner, claim);
    transfers.push({
      range,
      offset,
      from: holder,
      to: primary.owner.id,
      ...(liveIds.has(holder) ? { leak: leaked(range, value, holder) } : {}),
    });
    stillHolding.add(primary.owner.id);
    cleanUp(holder, range, offset);
  }

  // Values held that no live object carries: leak suspects.
  for (const range of snapshot.ranges) {
    const key = rangeKey(range);
    for (const [offset, holder] of snapshot.held.get(key) ?? []) {
      if (carried.has(valueKey(range, offset))) continue;
      if (
        spared.has(valueKey(range, offset)) ||
        young.value(range, offset, holder) ||
        !countDown(range, offset, holder)
      ) {
        stillHolding.add(holder);
        continue;
      }
      frees.push({ range, offset, holder, leak: leaked(range, range.valueAt(offset), holder) });
      cleanUp(holder, range, offset);
    }
  }

  // Owner records of ids no live object has, holding nothing: stale intents, counted down too.
  const deletions: RecordDeletion[] = [];
  for (const record of snapshot.owners.values()) {
    if (liveIds.has(record.id) || stillHolding.has(record.id) || cleanups.has(record.id)) continue;
    if (young.record(record)) continue;
    const key = `${OWNER_LEAK_PREFIX}${record.id}`;
    const verdict = countSighting(counters.get(key), key, `v${record.version}`, grace, now);
    if (verdict.free) deletions.push({ id: record.id, version: record.version });
    else kept.push(verdict.counter);
  }

  // Claims a live owner's record lists that nobody holds for it and it does not carry.
  const carriedBy = new Map<string, Set<string>>();
  for (const { owner } of services) {
    const keys = carriedBy.get(owner.id) ?? new Set<string>();
    for (const value of owner.values) keys.add(valueKey(value.range, value.offset));
    carriedBy.set(owner.id, keys);
  }
  const rangeByKey = new Map(snapshot.ranges.map((range) => [rangeKey(range), range]));
  const trims: { id: string; claims: Claim[] }[] = [];
  for (const record of snapshot.owners.values()) {
    if (!liveIds.has(record.id)) continue;
    const stale = record.claims.filter((claim) => {
      const range = rangeByKey.get(claim.range);
      if (!range || snapshot.held.get(claim.range)?.get(claim.offset) === record.id) return false;
      if (carriedBy.get(record.id)?.has(valueKey(range, claim.offset))) return false;
      if (young.claim(claim)) return false;
      const key = `${STALE_CLAIM_PREFIX}${record.id}#${claim.range}#${claim.offset}`;
      const verdict = countSighting(counters.get(key), key, record.id, grace, now);
      if (!verdict.free) kept.push(verdict.counter);
      return verdict.free;
    });
    if (stale.length > 0) trims.push({ id: record.id, claims: stale });
  }

  return {
    findings,
    trims,
    intents: [...intents].map(([id, { owner, claims: add }]) => ({ id, owner, claims: add })),
    claims,
    transfers,
    frees,
    cleanups: [...cleanups].map(([id, list]) => ({
      id,
      claims: list,
      ownerGone: !liveIds.has(id) && !stillHolding.has(id),
    })),
    deletions,
    counters: kept,
  };
}

/**
 * Which claims are too young to suspect: made after `since` (epoch ms), by the block's stamp or
 * by the holder's record (the admission that added the value, or the record's first write).
 */
function youngClaims(snapshot: ExclusiveSnapshot, since: number) {
  const claim = (c: Claim) => (c.claimedAt ?? Number.NEGATIVE_INFINITY) > since;
  const record = (r: OwnerRecord) => r.createdAt > since || r.claims.some(claim);
  return {
    claim,
    record,
    value(range: ValueRange, offset: Offset, holder: string): boolean {
      const key = rangeKey(range);
      if ((snapshot.claimedAt?.get(key)?.get(offset) ?? Number.NEGATIVE_INFINITY) > since)
        return true;
      const owner = snapshot.owners.get(holder);
      const lists = (c: Claim) => c.range === key && c.offset === offset;
      return (
        owner !== undefined &&
        [...owner.claims, ...(owner.releasing ?? [])].some(
          (c) => lists(c) && (c.claimedAt ?? owner.createdAt) > since,
        )
      );
    },
  };
}

/** The claims of `record` after adding `add` (a slot taken again is replaced) and dropping `drop`. */
export function mergeClaims(
  current: readonly Claim[],
  add: readonly Claim[],
  drop: readonly { readonly range: string; readonly offset: Offset }[],
): Claim[] {
  const same = (a: { range: string; offset: Offset }, b: { range: string; offset: Offset }) =>
    a.range === b.range && a.offset === b.offset;
  const kept = current.filter(
    (c) => !drop.some((d) => same(c, d)) && !add.some((a) => a.slot === c.slot || same(a, c)),
  );
  return [...kept, ...add];
}

/** Summary counts per reason of a list of findings. */
export function countFindings(findings: readonly Finding[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const finding of findings) counts[finding.reason] = (counts[finding.reason] ?? 0) + 1;
  return counts;
}

/**
 * Watches leaks across repair passes, from outside berth: a leak is a value held in the store
 * that no listed Service carries, or a host port record whose pod is not listed running. Like
 * the repair pass (and the kube-apiserver's repair loop), it counts the completed passes in a
 * row that find one, and holds the pass to its promise: freed on the `grace`-th of them.
 *
 * Nor does it count what was claimed less than the commit window before the pass began: berth
 * never suspects that (its object may be on its way to etcd), and the watch's start of the pass
 * is no later than berth's, so it never counts a pass that berth did not.
 *
 * Each completed pass is observed by three readings: the store just before the pass (so the
 * pass's own snapshot, read after it, sees at least as much), what the pass listed (the same
 * objects the pass decided from), and the store just after. A skipped pass changes nothing; a
 * failed one only ends counts (see `failed`).
 */

import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';

/** The store as read around a pass. */
export interface StoreView {
  /** Value key → holder id. */
  readonly held: ReadonlyMap<string, string>;
  /** Value key → when its holder claimed it (epoch ms), where the block says. */
  readonly claimedAt?: ReadonlyMap<string, number>;
  /** Host port record id → the record's `namespace/id` and creation stamp. */
  readonly records: ReadonlyMap<string, { readonly owner: string; readonly createdAt: number }>;
}

/** What a pass listed. */
export interface ListingView {
  /** Value keys carried by a listed Service (terminating ones included: they still carry them). */
  readonly carried: ReadonlySet<string>;
  /** `namespace/allocation id` of pods listed not terminal. */
  readonly runningPods: ReadonlySet<string>;
  /** Epoch ms no later than the pass began listing; absent: every claim is old enough. */
  readonly listedAt?: number;
}

/** What the watch found. */
export interface LeakWatchReport {
  /** Distinct leaks found by at least one completed pass. */
  readonly leaks: number;
  /** Most completed passes that found one leak before it was gone. */
  readonly maxPassesToFree: number;
  /** Leaks still held after the pass that should have freed them. */
  readonly overdue: readonly string[];
  /** Leaks still held when the report was taken. */
  readonly open: number;
}

/** Counts completed passes per leak. */
export class LeakWatch {
  readonly #grace: number;
  /** Leak key (`value@holder` or `pod#id@createdAt`) → completed passes in a row that found it. */
  readonly #counts = new Map<string, number>();
  readonly #overdue: string[] = [];
  #leaks = 0;
  #maxPassesToFree = 0;

  constructor(grace: number) {
    this.#grace = grace;
  }

  /** One completed pass. */
  observe(before: StoreView, listing: ListingView, after: StoreView): void {
    const found = leaksOf(before, listing);
    // Everything still held by the same holder, leak or not.
    const stillHeld = leaksOf(after, { carried: new Set(), runningPods: new Set() });
    // Not found this time: carried or running again, or gone before the pass read the store.
    for (const [key, passes] of this.#counts) {
      if (found.has(key)) continue;
      this.#counts.delete(key);
      if (!stillHeld.has(key)) this.#freed(passes);
    }
    for (const key of found) {
      const passes = (this.#counts.get(key) ?? 0) + 1;
      if (passes === 1) this.#leaks++;
      if (!stillHeld.has(key)) {
        this.#counts.delete(key);
        this.#freed(passes);
        continue;
      }
      this.#counts.set(key, passes);
      if (passes === this.#grace) this.#overdue.push(`${key} still held after ${passes} passes`);
    }
  }

  /**
   * A pass that listed, then failed. It may have written its ledger before failing, resetting
   * the counters of what it did not find, so those start again here too; what it found is not
   * counted, since it may not have counted it either. So these counts never run ahead of berth's.
   */
  failed(before: StoreView, listing: ListingView): void {
    const found = leaksOf(before, listing);
    const heldBefore = leaksOf(before, { carried: new Set(), runningPods: new Set() });
    for (const [key, passes] of this.#counts) {
      if (found.has(key)) continue;
      this.#counts.delete(key);
      if (!heldBefore.has(key)) this.#freed(passes);
    }
  }

  /** What it found so far. */
  report(): LeakWatchReport {
    return {
      leaks: this.#leaks,
      maxPassesToFree: this.#maxPassesToFree,
      overdue: [...this.#overdue],
      open: this.#counts.size,
    };
  }

  #freed(passes: number): void {
    this.#maxPassesToFree = Math.max(this.#maxPassesToFree, passes);
  }
}

function leaksOf(view: StoreView, listing: ListingView): Set<string> {
  const young = (at: number | undefined) =>
    listing.listedAt !== undefined &&
    (at ?? Number.NEGATIVE_INFINITY) > listing.listedAt - COMMIT_WINDOW_MS;
  const keys = new Set<string>();
  for (const [value, holder] of view.held)
    if (!listing.carried.has(value) && !young(view.claimedAt?.get(value)))
      keys.add(`${value}@${holder}`);
  for (const [id, { owner, createdAt }] of view.records)
    if (!listing.runningPods.has(owner) && !young(createdAt)) keys.add(`pod#${id}@${createdAt}`);
  return keys;
}

/**
 * Leak counters that outlive a pass. The kube-apiserver keeps them in process memory, so every
 * restart starts the countdown again; berth persists them (DynamoDB adapter:
 * `shared/store/dynamo-leak-ledger.ts`), so a Lambda cold start or the next scheduled run goes on
 * counting where the last completed pass stopped.
 */

/** One suspected leak: what is held, by whom, and on how many consecutive passes it was seen. */
export interface LeakCounter {
  /** What is suspected, e.g. `value#nodePort#30000-32767#17`, `pod#<id>`, `owner#<id>`. */
  readonly key: string;
  /** Who held it when it was seen; a different holder restarts the countdown. */
  readonly holder: string;
  /** Consecutive passes that found it, this one included. */
  readonly passes: number;
  /** Epoch ms of the first sighting in this run of passes. */
  readonly firstSeenAt: number;
}

/** The changes one completed pass makes to the ledger. */
export interface LedgerChanges {
  readonly put: readonly LeakCounter[];
  /** Keys of counters to forget: the suspicion ended (owner seen again, value freed). */
  readonly remove: readonly string[];
}

/** Persisted leak counters of one cluster. */
export interface LeakLedger {
  /** Every counter, read strongly consistent. */
  list(): Promise<ReadonlyMap<string, LeakCounter>>;
  /** Writes the changes; written only by a pass that completed, under the repair lease. */
  apply(changes: LedgerChanges): Promise<void>;
}

/** The countdown's verdict for one suspect on this pass. */
export type Countdown =
  | { readonly free: false; readonly counter: LeakCounter }
  | { readonly free: true; readonly passes: number };

/**
 * Counts one more sighting of `key` held by `holder`: freed on the `grace`-th consecutive pass
 * that finds it (the kube-apiserver's `numRepairsBeforeLeakCleanup`), else counted. A counter
 * left by another holder does not count: that is a new suspicion.
 */
export function countSighting(
  previous: LeakCounter | undefined,
  key: string,
  holder: string,
  grace: number,
  now: number,
): Countdown {
  const same = previous !== undefined && previous.holder === holder;
  const passes = same ? previous.passes + 1 : 1;
  if (passes >= grace) return { free: true, passes };
  return {
    free: false,
    counter: { key, holder, passes, firstSeenAt: same ? previous.firstSeenAt : now },
  };
}

/**
 * The ledger changes of a pass: the counters it kept, and every earlier counter under the
 * prefixes it covered that it did not keep (seen again, freed, or gone).
 */
export function ledgerChanges(
  before: ReadonlyMap<string, LeakCounter>,
  kept: readonly LeakCounter[],
  coveredPrefixes: readonly string[],
): LedgerChanges {
  const keptKeys = new Set(kept.map((c) => c.key));
  const remove = [...before.keys()].filter(
    (key) => !keptKeys.has(key) && coveredPrefixes.some((prefix) => key.startsWith(prefix)),
  );
  return { put: kept, remove };
}

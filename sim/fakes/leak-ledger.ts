/** The in-memory `LeakLedger` of the pass tests that run repair without DynamoDB. */
import type { LeakCounter, LeakLedger, LedgerChanges } from '../../shared/repair/ledger.js';

/** Leak counters in a map, as the DynamoDB adapter keeps one item per key. */
export class MemoryLeakLedger implements LeakLedger {
  readonly #counters = new Map<string, LeakCounter>();

  async list(): Promise<ReadonlyMap<string, LeakCounter>> {
    return new Map(this.#counters);
  }

  async apply(changes: LedgerChanges): Promise<void> {
    for (const key of changes.remove) this.#counters.delete(key);
    for (const counter of changes.put) this.#counters.set(counter.key, counter);
  }
}

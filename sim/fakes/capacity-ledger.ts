/** The passes' capacity records kept in the process. */
import type { CapacityRecord, SourceFigures } from '../../shared/capacity/figures.js';
import type { CapacityLedger } from '../../shared/capacity/store.js';

/** A capacity ledger in this process: what the DynamoDB item keeps, as plain records. */
export class InProcessCapacityLedger implements CapacityLedger {
  readonly #records = new Map<string, CapacityRecord>();
  /** Reads asked of it, as a benchmark counts the table's. */
  reads = 0;

  async record(cluster: string, figures: SourceFigures): Promise<void> {
    // A copy, as a stored item is: the caller may change its figures afterwards.
    const stored = structuredClone(figures);
    this.#records.set(cluster, { ...this.#records.get(cluster), [figures.source]: stored });
  }

  async read(clusters: readonly string[]): Promise<ReadonlyMap<string, CapacityRecord>> {
    this.reads += Math.ceil(clusters.length / 100);
    return new Map(
      clusters.map((cluster) => [cluster, structuredClone(this.#records.get(cluster) ?? {})]),
    );
  }
}

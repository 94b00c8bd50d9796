/** Where the passes keep their capacity figures: one record per cluster, one part per pass. */
import type { CapacityRecord, SourceFigures } from './figures.js';

/** The capacity records of the table's clusters. */
export interface CapacityLedger {
  /** Replaces `figures.source`'s part of `cluster`'s record, leaving the other passes' parts. */
  record(cluster: string, figures: SourceFigures): Promise<void>;
  /**
   * The records of the clusters named, in as few reads as the table allows (one for up to 100
   * clusters); a cluster nothing has recorded for has an empty record.
   */
  read(clusters: readonly string[]): Promise<ReadonlyMap<string, CapacityRecord>>;
}

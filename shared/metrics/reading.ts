/** One cluster's metrics, read: its status, and the settle backlog from its owner records. */
import type { AllocationStore } from '../allocation/store.js';
import type { ClusterCapacity } from '../capacity/view.js';
import type { StatusReport } from '../status/report.js';
import type { MetricsReading, PassRecord, SettleBacklog } from './openmetrics.js';

/** The values given back and still held, and since when the oldest waits. */
export async function settleBacklog(
  owners: Pick<AllocationStore, 'listOwners'>,
): Promise<SettleBacklog> {
  let releasing = 0;
  let oldestSince: number | undefined;
  for await (const record of owners.listOwners()) {
    for (const claim of record.releasing ?? []) {
      releasing += 1;
      oldestSince = Math.min(oldestSince ?? claim.since, claim.since);
    }
  }
  return oldestSince === undefined ? { releasing } : { releasing, oldestSince };
}

/** What `/metrics` reports for one cluster. */
export async function metricsReading(
  runtime: {
    status(): Promise<StatusReport>;
    readonly allocationStore: Pick<AllocationStore, 'listOwners'>;
  },
  more: {
    /** This process's pass records. */
    readonly passes?: () => readonly PassRecord[];
    /** The cluster's capacity view. */
    readonly capacity?: () => Promise<ClusterCapacity | undefined>;
  } = {},
): Promise<MetricsReading> {
  const [status, settle, capacity] = await Promise.all([
    runtime.status(),
    settleBacklog(runtime.allocationStore),
    more.capacity?.(),
  ]);
  return {
    status,
    settle,
    ...(more.passes ? { passes: more.passes() } : {}),
    ...(capacity ? { capacity } : {}),
  };
}

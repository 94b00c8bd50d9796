/**
 * The capacity view as every host builds it: which passes a cluster runs (and so which figures
 * must be fresh), and the view of a process's clusters read from the table alone.
 */
import type { CapacitySource } from '../capacity/figures.js';
import type { CapacityLedger } from '../capacity/store.js';
import {
  type CapacityView,
  type ClusterCapacity,
  capacityView,
  type RecordingIntervals,
} from '../capacity/view.js';
import { UnknownClusterError } from '../clusters/cluster-set.js';
import type { BerthConfig } from '../config/schema.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { FRONTS_PASS_SECONDS, plannedPasses } from './local-passes.js';
import type { PassContext } from './pass-context.js';

/**
 * How often each pass of `config` records its figures: the repair pass records the host port
 * ranges (where there are any), the fronts pass the NLB's fronts (where there is an NLB pool).
 */
export function capacityIntervals(config: BerthConfig): RecordingIntervals {
  const intervals: Partial<Record<CapacitySource, number>> = {};
  for (const pass of plannedPasses(config)) {
    if (pass.off !== undefined) continue;
    if (pass.name === 'scale') intervals.scale = config.scale.intervalSeconds;
    if (pass.name === 'ENI') intervals.eni = config.eni.intervalSeconds;
    if (pass.name === 'repair' && Object.keys(config.hostPortRanges).length > 0)
      intervals.hostPorts = config.repair.intervalSeconds;
    if (pass.name === 'fronts' && config.fronts.nlb) intervals.fronts = FRONTS_PASS_SECONDS;
  }
  return intervals;
}

/**
 * The view of every cluster of `configs` (or of the one named) at the clock's time: one read of
 * the table for up to 100 clusters, never a read of a cluster.
 */
export function capacityReader(
  configs: readonly BerthConfig[],
  ledger: CapacityLedger,
  now: () => number = Date.now,
): (cluster?: string) => Promise<CapacityView> {
  const served = configs.map((config) => ({
    cluster: config.cluster,
    intervals: capacityIntervals(config),
  }));
  return async (cluster) => {
    const asked = cluster === undefined ? served : served.filter((s) => s.cluster === cluster);
    if (asked.length === 0) {
      throw new UnknownClusterError(
        cluster,
        served.map((s) => s.cluster),
      );
    }
    const records = await ledger.read(asked.map((s) => s.cluster));
    return capacityView(
      asked.map((s) => ({ ...s, record: records.get(s.cluster) ?? {} })),
      now(),
    );
  };
}

/**
 * One cluster's view over the table of its pass context: what the scale function publishes after
 * each pass and a `/metrics` scrape answers, read with the clients the host already holds.
 */
export function clusterCapacityReader(
  context: Pick<PassContext, 'config' | 'dynamo' | 'tableName' | 'meter' | 'now'>,
): () => Promise<ClusterCapacity> {
  const ledger = new DynamoCapacityLedger({
    client: context.dynamo,
    tableName: context.tableName,
    ...(context.meter ? { meter: context.meter } : {}),
  });
  const read = capacityReader([context.config], ledger, context.now);
  return async () => (await read()).clusters[0] as ClusterCapacity;
}

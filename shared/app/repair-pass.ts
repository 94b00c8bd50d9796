/** The repair pass, wired once per process, and the repair function's body. */
import type { Context } from 'aws-lambda';
import { exclusiveRangeUsage, type RangeUsage } from '../allocation/usage.js';
import { hostPortFigures } from '../capacity/figures.js';
import type { ClusterSet } from '../clusters/cluster-set.js';
import { hostPortRangeUsage } from '../hostports/allocator.js';
import { clusterIpRange, hostPortRange, nodePortRange } from '../net/value-range.js';
import { toHostPortRange } from '../repair/host-port-diff.js';
import { type RepairSummary, runRepairPass } from '../repair/pass.js';
import { ServiceCidrGate } from '../services/cidr-gate.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { DynamoHostPortStore } from '../store/dynamo-host-port-store.js';
import { DynamoLeakLedger } from '../store/dynamo-leak-ledger.js';
import type { Observability } from './observability.js';
import { type PassContext, passLease, storeOptions } from './pass-context.js';
import type { PassInput } from './pass-input.js';
import { recordRepairPass } from './pass-records.js';

/** How full each exclusive range is, for the "are we running out?" metrics. */
export function exclusiveUsage(context: PassContext): () => Promise<readonly RangeUsage[]> {
  const store = new DynamoAllocationStore(storeOptions(context));
  const ranges = [
    ...context.config.serviceCIDRs.map(clusterIpRange),
    nodePortRange(context.config.nodePortRange),
  ];
  return () => Promise.all(ranges.map((range) => exclusiveRangeUsage(store, range)));
}

/** Runs one repair pass; throws `RepairIncompleteError` when it could not complete. */
export type RepairRunner = (holder: string) => Promise<RepairSummary>;

/** Wires the repair pass over every configured range. */
export function repairRunner(context: PassContext): RepairRunner {
  const { config, clusterApi } = context;
  const now = context.now ?? Date.now;
  const stores = storeOptions(context);
  const deps = {
    cluster: clusterApi,
    allocations: new DynamoAllocationStore(stores),
    hostPorts: new DynamoHostPortStore(stores),
    ledger: new DynamoLeakLedger(stores),
    lease: passLease(context),
    now,
  };
  const serviceCidrs =
    context.serviceCidrs ??
    new ServiceCidrGate({
      configured: config.serviceCIDRs,
      follow: config.services.followClusterCIDRs,
    });
  const ranges = {
    clusterIps: config.serviceCIDRs.map(clusterIpRange),
    nodePorts: nodePortRange(config.nodePortRange),
    hostPorts: Object.entries(config.hostPortRanges).map(([name, ports]) =>
      hostPortRange(name, ports),
    ),
  };
  const capacity = new DynamoCapacityLedger(stores);
  /** The host port ranges' use as the table holds it after the pass, for the capacity view. */
  const recordHostPorts = async () => {
    const usage = await Promise.all(
      ranges.hostPorts.map(toHostPortRange).map(async (range) => {
        const { counts, foreign } = await deps.hostPorts.readCounts(range, 'eventual');
        return hostPortRangeUsage(range, counts, foreign);
      }),
    );
    await capacity.record(config.cluster, hostPortFigures(usage, now()));
  };
  return async (holder) => {
    const summary = await runRepairPass(
      { ...deps, holder },
      {
        ranges,
        leakGracePasses: config.repair.leakGracePasses,
        settleDelaySeconds: config.settle.delaySeconds,
        hostPortQuotas: config.hostPortQuotas,
        serviceCidrs,
      },
    );
    if (ranges.hostPorts.length > 0) await recordHostPorts();
    return summary;
  };
}

/** A cluster's repair pass and its range usage, as the repair function keeps them. */
export interface RepairPasses {
  readonly repair: RepairRunner;
  readonly usage: () => Promise<readonly RangeUsage[]>;
}

/** Wires the repair pass and the usage it reports for one cluster. */
export function repairPasses(context: PassContext): RepairPasses {
  return { repair: repairRunner(context), usage: exclusiveUsage(context) };
}

/**
 * The repair function's body (functions/repair/handler.ts; the cost meter runs the same): the
 * pass of the cluster the schedule names, recorded. A pass that cannot complete throws, failing
 * the invocation, and advances no leak counter.
 */
export function repairInvocation(
  passes: ClusterSet<RepairPasses>,
  observe: Observability,
): (input: PassInput, context: Pick<Context, 'awsRequestId'>) => Promise<RepairInvocationResult> {
  return async (input, context) => {
    const { config, value } = passes.get(input.cluster);
    observe.forCluster(config.cluster);
    const summary = await value.repair(context.awsRequestId);
    recordRepairPass(observe, summary, await value.usage());
    const { findings, released, recorded, durationMs } = summary;
    return { cluster: config.cluster, findings, released, recorded, durationMs };
  };
}

/** What a repair invocation answers. */
export type RepairInvocationResult = Pick<
  RepairSummary,
  'findings' | 'released' | 'recorded' | 'durationMs'
> & { readonly cluster: string };

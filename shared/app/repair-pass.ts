/** The repair pass, wired once per process. */
import { clusterIpRange, hostPortRange, nodePortRange } from '../allocation/range.js';
import { exclusiveRangeUsage, type RangeUsage } from '../allocation/usage.js';
import { type RepairSummary, runRepairPass } from '../repair/pass.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';
import { DynamoHostPortStore } from '../store/dynamo-host-port-store.js';
import { DynamoLeakLedger } from '../store/dynamo-leak-ledger.js';
import { type PassContext, passLease, storeOptions } from './pass-context.js';

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
  const ranges = {
    clusterIps: config.serviceCIDRs.map(clusterIpRange),
    nodePorts: nodePortRange(config.nodePortRange),
    hostPorts: Object.entries(config.hostPortRanges).map(([name, ports]) =>
      hostPortRange(name, ports),
    ),
  };
  return (holder) =>
    runRepairPass(
      { ...deps, holder },
      {
        ranges,
        leakGracePasses: config.repair.leakGracePasses,
        settleDelaySeconds: config.settle.delaySeconds,
      },
    );
}

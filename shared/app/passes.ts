/**
 * The scheduled passes, wired once per process (module scope in Lambda, once per `berth serve`)
 * so AWS clients and caches are reused between runs.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { clusterIpRange, hostPortRange, nodePortRange } from '../allocation/range.js';
import type { BerthConfig } from '../config/schema.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { createNodePool } from '../node-pool/create.js';
import { type RepairSummary, runRepairPass } from '../repair/pass.js';
import { runScalePass, type ScaleReport } from '../scale/pass.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';
import { DynamoHostPortStore } from '../store/dynamo-host-port-store.js';
import { DynamoLeakLedger } from '../store/dynamo-leak-ledger.js';
import { DynamoLease } from '../store/dynamo-lease.js';

/** What every pass is built from. */
export interface PassContext {
  readonly config: BerthConfig;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  readonly clusterApi: ClusterApi;
  readonly now?: () => number;
}

/** The passes, ready to run; `holder` names the runner in leases (a request id, a host and pid). */
export interface Passes {
  scale(holder: string, options?: { readonly dryRun?: boolean }): Promise<ScaleReport>;
  /** Throws `RepairIncompleteError` when the pass could not complete; no leak counter moved then. */
  repair(holder: string): Promise<RepairSummary>;
}

/** Wires the passes for one cluster. */
export function createPasses(context: PassContext): Passes {
  const { config, dynamo, tableName, clusterApi } = context;
  const now = context.now ?? Date.now;
  const lease = new DynamoLease({ client: dynamo, tableName, cluster: config.cluster, now });
  const pool = createNodePool(config.scale.nodePool, { eksClusterName: config.cluster });
  const stores = { client: dynamo, tableName, cluster: config.cluster };
  const allocations = new DynamoAllocationStore(stores);
  const hostPorts = new DynamoHostPortStore(stores);
  const ledger = new DynamoLeakLedger(stores);
  const ranges = {
    clusterIps: config.serviceCIDRs.map(clusterIpRange),
    nodePorts: nodePortRange(config.nodePortRange),
    hostPorts: Object.entries(config.hostPortRanges).map(([name, ports]) =>
      hostPortRange(name, ports),
    ),
  };
  return {
    scale: (holder, options = {}) =>
      runScalePass({ cluster: clusterApi, pool, lease, now, holder }, config.scale, {
        dryRun: options.dryRun ?? false,
      }),
    repair: (holder) =>
      runRepairPass(
        { cluster: clusterApi, allocations, hostPorts, ledger, lease, now, holder },
        { ranges, leakGracePasses: config.repair.leakGracePasses },
      ),
  };
}

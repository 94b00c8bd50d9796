/** What every scheduled pass is built from; each pass has its own wiring module, so a Lambda
 * bundles only the pass it runs. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { BerthConfig } from '../config/schema.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import type { ServiceCidrGate } from '../services/cidr-gate.js';
import type { CapacityMeter } from '../store/capacity.js';
import { DynamoLease } from '../store/dynamo-lease.js';

/** The cluster, the table and the clock a pass runs against. */
export interface PassContext {
  readonly config: BerthConfig;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  readonly clusterApi: ClusterApi;
  /** AWS Region of EC2 and the node pool; the SDK's default chain when absent. */
  readonly region?: string;
  readonly now?: () => number;
  /**
   * The Service ranges admission allocates from, which the repair pass updates from the cluster's
   * ServiceCIDRs; the repair pass makes its own when absent (a Lambda serves no admission).
   */
  readonly serviceCidrs?: ServiceCidrGate;
  /** Counts the capacity every store of the pass consumes (a benchmark's); each its own otherwise. */
  readonly meter?: CapacityMeter;
}

/** The table coordinates every berth store takes. */
export function storeOptions(context: Omit<PassContext, 'clusterApi'>) {
  const { dynamo: client, tableName, config, meter } = context;
  return { client, tableName, cluster: config.cluster, meter };
}

/** The lease that keeps two runs of one pass apart. */
export function passLease(context: Omit<PassContext, 'clusterApi'>): DynamoLease {
  return new DynamoLease({ ...storeOptions(context), now: context.now ?? Date.now });
}

/**
 * The scheduled passes, wired once per process (module scope in Lambda, once per `berth serve`)
 * so AWS clients and caches are reused between runs.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { clusterIpRange, hostPortRange, nodePortRange } from '../allocation/range.js';
import type { BerthConfig } from '../config/schema.js';
import { BudgetedEc2Network } from '../ec2/rate-budget.js';
import { ec2Client, SdkEc2Network } from '../ec2/sdk-ec2-network.js';
import { eniDeps } from '../eni/deps.js';
import { EniRequestError } from '../eni/errors.js';
import {
  type EniPassSummary,
  handleInstanceStateChange,
  parseInstanceStateChange,
  runEniPass,
} from '../eni/pass.js';
import { handleAssignIp, handleReleaseIp } from '../eni/service.js';
import type { HttpFault, NodeIpApi } from '../http/api.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { createNodePool } from '../node-pool/create.js';
import { type RepairSummary, runRepairPass } from '../repair/pass.js';
import { runScalePass, type ScaleReport } from '../scale/pass.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';
import { DynamoEniStore } from '../store/dynamo-eni-store.js';
import { DynamoHostPortStore } from '../store/dynamo-host-port-store.js';
import { DynamoLeakLedger } from '../store/dynamo-leak-ledger.js';
import { DynamoLease } from '../store/dynamo-lease.js';
import { DynamoRateBudget } from '../store/dynamo-rate-budget.js';

/** What every pass is built from. */
export interface PassContext {
  readonly config: BerthConfig;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  readonly clusterApi: ClusterApi;
  /** AWS Region of EC2 and the node pool; the SDK's default chain when absent. */
  readonly region?: string;
  readonly now?: () => number;
}

/** The passes, ready to run; `holder` names the runner in leases (a request id, a host and pid). */
export interface Passes {
  scale(holder: string, options?: { readonly dryRun?: boolean }): Promise<ScaleReport>;
  /** Throws `RepairIncompleteError` when the pass could not complete; no leak counter moved then. */
  repair(holder: string): Promise<RepairSummary>;
  /** Refills, trims and reconciles every ENI pool. */
  eni(): Promise<EniPassSummary>;
  /**
   * An EC2 instance state-change event's `detail`: runs the pass for that instance only;
   * undefined when the detail is not one.
   */
  instanceStateChange(detail: unknown): Promise<EniPassSummary | undefined>;
  /** `POST /v1/nodes/{node}/ips` and `DELETE /v1/nodes/{node}/ips/{ip}`. */
  readonly nodeIps: NodeIpApi;
}

/** The node IP API's client mistakes (400, 404, 409, 503), answered with their own status. */
export function nodeIpFault(error: unknown): HttpFault | undefined {
  return error instanceof EniRequestError
    ? { statusCode: error.statusCode, message: error.message }
    : undefined;
}

/** Wires the passes for one cluster. */
export function createPasses(context: PassContext): Passes {
  const { config, dynamo, tableName, clusterApi } = context;
  const now = context.now ?? Date.now;
  const lease = new DynamoLease({ client: dynamo, tableName, cluster: config.cluster, now });
  const pool = createNodePool(config.scale.nodePool, { eksClusterName: config.cluster });
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
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
  const budget = new DynamoRateBudget({ ...stores, now });
  const ec2 = new BudgetedEc2Network(new SdkEc2Network(ec2Client(context.region)), {
    budget,
    now,
    sleep,
    random: Math.random,
  });
  const eni = eniDeps({
    store: new DynamoEniStore(stores),
    ec2,
    cluster: clusterApi,
    clusterName: config.cluster,
    config: config.eni,
    now,
    sleep,
  });
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
    eni: () => runEniPass(eni, {}),
    async instanceStateChange(detail) {
      const change = parseInstanceStateChange(detail);
      return change ? handleInstanceStateChange(eni, change) : undefined;
    },
    nodeIps: {
      assign: (node, body) => handleAssignIp(eni, node, body),
      release: (node, ip) => handleReleaseIp(eni, node, ip),
    },
  };
}

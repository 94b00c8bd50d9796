/** The ENI pools: their pass, the instance state-change handler and the node IP API. */
import { z } from 'zod';
import type { Ec2Network } from '../ec2/network.js';
import {
  type BackoffPolicy,
  BudgetedEc2Network,
  DEFAULT_BACKOFF,
  NODE_WORK_BACKOFF,
} from '../ec2/rate-budget.js';
import { ec2Client, SdkEc2Network } from '../ec2/sdk-ec2-network.js';
import { eniDeps } from '../eni/deps.js';
import { EniRequestError } from '../eni/errors.js';
import {
  type EniPassSummary,
  handleInstanceStateChange,
  type InstanceStateChange,
  runEniPass,
} from '../eni/pass.js';
import { type RefillRequests, type RefillResult, refillAhead } from '../eni/refill.js';
import { handleAssignIp, handleLookUpIp, handleReleaseIp } from '../eni/service.js';
import type { HttpFault, NodeIpApi } from '../http/api.js';
import { DynamoEniStore } from '../store/dynamo-eni-store.js';
import { DynamoRateBudget } from '../store/dynamo-rate-budget.js';
import { type PassContext, storeOptions } from './pass-context.js';

/** The ENI function's event for one pool's background refill (sent by `LambdaRefillInvoker`). */
export const refillPoolEvent = z.strictObject({
  kind: z.literal('refill-pool'),
  /** The node's cluster; absent from a single-cluster stack's events. */
  cluster: z.string().min(1).optional(),
  node: z.string().min(1),
});

/** A background refill request as the ENI function receives it. */
export type RefillPoolEvent = z.infer<typeof refillPoolEvent>;

/** The ENI operations, ready to run. */
export interface EniRunner {
  /** Refills, trims and reconciles every pool. */
  pass(): Promise<EniPassSummary>;
  /** An EC2 state-change event (`parseInstanceStateChange`): that instance only. */
  instanceStateChange(change: InstanceStateChange): Promise<EniPassSummary>;
  /** A background refill an assign asked for: the node's pool, grown ahead of demand. */
  refill(node: string): Promise<RefillResult>;
  /**
   * `POST /v1/nodes/{node}/ips` and `DELETE /v1/nodes/{node}/ips/{ip}`, sending background
   * refills to `refills`: run in this process (`InProcessRefills` over `refill`, a long-lived
   * server) or handed to the ENI function (`LambdaRefillInvoker`).
   */
  nodeIps(refills: RefillRequests): NodeIpApi;
}

/**
 * The account and Region the EC2 budget meters: EC2's limits are per account and Region, and a
 * table lives in one account, so the Region names it (`local` where none is known: the local
 * stack's own EC2).
 */
function budgetScope(region: string | undefined): string {
  return region ?? 'local';
}

/** The node IP API's client mistakes (400, 404, 409, 503), answered with their own status. */
export function nodeIpFault(error: unknown): HttpFault | undefined {
  return error instanceof EniRequestError
    ? { statusCode: error.statusCode, message: error.message }
    : undefined;
}

/**
 * Wires the pools: EC2 behind the account's rate budget, the pool store, the cluster. `account`
 * replaces the SDK's EC2 (the simulator's EC2 fake); the budget is paid all the same.
 */
export function eniRunner(context: PassContext, account?: Ec2Network): EniRunner {
  const now = context.now ?? Date.now;
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const stores = storeOptions(context);
  const inner = account ?? new SdkEc2Network(ec2Client(context.region));
  const budget = new DynamoRateBudget({ ...stores, scope: budgetScope(context.region), now });
  const store = new DynamoEniStore(stores);
  /** The pools' dependencies, their EC2 calls waiting for budget as `backoff` allows. */
  const depsWaiting = (backoff: BackoffPolicy) =>
    eniDeps({
      store,
      ec2: new BudgetedEc2Network(inner, { budget, now, sleep, random: Math.random, backoff }),
      cluster: context.clusterApi,
      clusterName: context.config.cluster,
      config: context.config.eni,
      now,
      sleep,
    });
  const deps = depsWaiting(DEFAULT_BACKOFF);
  const nodeWork = depsWaiting(NODE_WORK_BACKOFF);
  return {
    pass: () => runEniPass(deps, {}),
    instanceStateChange: (change) => handleInstanceStateChange(nodeWork, change),
    refill: (node) => refillAhead(nodeWork, node),
    nodeIps(refills) {
      const assignDeps = { ...deps, refills };
      return {
        assign: (node, body) => handleAssignIp(assignDeps, node, body),
        release: (node, ip, holder) => handleReleaseIp(deps, node, ip, holder),
        lookUp: (node, holder) => handleLookUpIp(deps, node, holder),
      };
    },
  };
}

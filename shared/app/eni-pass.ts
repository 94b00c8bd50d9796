/**
 * The ENI pools: their pass, the instance state-change handler and the node IP API, and the ENI
 * function's body.
 */

import { z } from 'zod';
import type { CapacityLedger } from '../capacity/store.js';
import type { ClusterSet } from '../clusters/cluster-set.js';
import { lambdaSettings } from '../config/load.js';
import type { Ec2Network, InstanceTypeLimits } from '../ec2/network.js';
import {
  type BackoffPolicy,
  BudgetedEc2Network,
  DEFAULT_BACKOFF,
  type Ec2CallRecord,
  NODE_WORK_BACKOFF,
  type RateBudget,
} from '../ec2/rate-budget.js';
import { ec2Client, SdkEc2Network } from '../ec2/sdk-ec2-network.js';
import { type EniDeps, eniDeps } from '../eni/deps.js';
import { EniRequestError } from '../eni/errors.js';
import { handleNodeReport, handleNodeSet } from '../eni/handout/node-api.js';
import {
  type EniPassSummary,
  handleInstanceStateChange,
  type InstanceStateChange,
  parseInstanceStateChange,
  passedNoPool,
  runEniPass,
} from '../eni/pass.js';
import { ENI_INVOCATIONS, type EniInvocation } from '../eni/policy.js';
import { type RefillRequests, type RefillResult, refillAhead } from '../eni/refill.js';
import { handleAssignIp, handleLookUpIp, handleReleaseIp } from '../eni/service.js';
import type { EniStore } from '../eni/store.js';
import type { NodeIpApi } from '../http/api.js';
import type { HttpFault } from '../http/exchange.js';
import { autoModeComputeOf } from '../node-pool/auto-mode.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { DynamoEniStore } from '../store/dynamo-eni-store.js';
import { DynamoRateBudget } from '../store/dynamo-rate-budget.js';
import { lambdaPassContexts } from './lambda.js';
import type { Observability } from './observability.js';
import { type PassContext, storeOptions } from './pass-context.js';
import { failWhenNothingWorked } from './pass-failure.js';
import { passInput } from './pass-input.js';
import { recordEniPass, recordRefill } from './pass-records.js';

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
  /**
   * An EC2 state-change event (`parseInstanceStateChange`): that instance only. `startedAt`: when
   * the invocation began (now by default), which every cluster of it shares a deadline from.
   */
  instanceStateChange(change: InstanceStateChange, startedAt?: number): Promise<EniPassSummary>;
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
 * The node IP API's answers of its own (400, 404, 409, 429, 503), with `Retry-After` where a
 * retry is worth it.
 */
export function nodeIpFault(error: unknown): HttpFault | undefined {
  if (!(error instanceof EniRequestError)) return undefined;
  const { statusCode, message, retryAfterMs } = error;
  return retryAfterMs === undefined
    ? { statusCode, message }
    : { statusCode, message, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
}

/**
 * EC2 as every cluster of one process reaches it: one client (one connection pool) and one cache
 * of instance-type limits, which are facts of the account's Region whichever cluster asked. Each
 * cluster still pays its calls from its own share of the account's budget.
 */
export interface Ec2Account {
  /** EC2 unbudgeted. */
  readonly network: Ec2Network;
  /**
   * The account and Region the budget meters: EC2's limits are per account and Region, and a
   * table lives in one account, so the Region names it.
   */
  readonly scope: string | (() => Promise<string>);
  readonly instanceTypes: Map<string, InstanceTypeLimits>;
}

/** EC2 through the AWS SDK, metered under the Region its client resolves (a profile's too). */
export function sdkEc2Account(region?: string): Ec2Account {
  const client = ec2Client(region);
  return {
    network: new SdkEc2Network(client),
    scope: region ?? (() => client.config.region()),
    instanceTypes: new Map(),
  };
}

/** The local stack's EC2 (the simulator's fake), metered under `local`. */
export function localEc2Account(network: Ec2Network): Ec2Account {
  return { network, scope: 'local', instanceTypes: new Map() };
}

/** How an ENI runner waits and draws jitter: real timers by default; a simulated day's own. */
export interface EniWaits {
  readonly sleep: (ms: number) => Promise<void>;
  /** Uniform in [0, 1). */
  readonly random: () => number;
}

const REAL_WAITS: EniWaits = {
  sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  random: Math.random,
};

/**
 * A simulated day's own pool store and budget in place of the table's, which its virtual clock
 * cannot wait on (real I/O), and an ear on the cluster's EC2 calls.
 */
export interface EniAdapters {
  readonly store?: EniStore;
  /** The cluster's share of the account's EC2 budget. */
  readonly budget?: RateBudget;
  /** Told of every EC2 call the cluster makes, the throttled ones too. */
  readonly onCall?: (record: Ec2CallRecord) => void;
  /** Where the pass records the addresses it leaves free. */
  readonly capacity?: CapacityLedger;
}

/**
 * Wires one cluster's pools: the account's EC2 behind the cluster's share of the rate budget, the
 * pool store, the cluster. A process serving several clusters passes them one `account`.
 */
export function eniRunner(
  context: PassContext,
  account: Ec2Account = sdkEc2Account(context.region),
  waits: EniWaits = REAL_WAITS,
  adapters: EniAdapters = {},
): EniRunner {
  const now = context.now ?? Date.now;
  const { sleep, random } = waits;
  const stores = storeOptions(context);
  const { onCall } = adapters;
  const budget = adapters.budget ?? new DynamoRateBudget({ ...stores, scope: account.scope, now });
  const store = adapters.store ?? new DynamoEniStore(stores);
  const capacity = adapters.capacity ?? new DynamoCapacityLedger(stores);
  const budgeted = (backoff: BackoffPolicy) =>
    new BudgetedEc2Network(account.network, { budget, now, sleep, random, backoff, onCall });
  /** EC2 for pods waiting and for the pass; and for one node's work off the request path. */
  const brief = budgeted(DEFAULT_BACKOFF);
  const patient = budgeted(NODE_WORK_BACKOFF);
  const deps = eniDeps({
    store,
    ec2: brief,
    cluster: context.clusterApi,
    clusterName: context.config.cluster,
    config: context.config.eni,
    instanceTypes: account.instanceTypes,
    now,
    sleep,
    random,
    autoMode: autoModeComputeOf(context.config.scale.nodePool),
  });
  /**
   * The dependencies of one invocation of `kind` that began at `startedAt`: its deadline (the
   * instance-type lookups included, from the shared cache) and its lease.
   */
  const invocation = (kind: EniInvocation, ec2: BudgetedEc2Network, startedAt = now()): EniDeps => {
    const limits = ENI_INVOCATIONS[kind];
    const bounded = ec2.until(startedAt + limits.deadlineMs);
    return { ...deps, ec2: bounded, catalog: deps.catalog.using(bounded), leaseMs: limits.leaseMs };
  };
  return {
    async pass() {
      const summary = await runEniPass(invocation('work', brief), {});
      await capacity.record(context.config.cluster, {
        source: 'eni',
        atMs: now(),
        freeAddresses: summary.idleIps,
        pools: summary.pools,
      });
      return summary;
    },
    instanceStateChange: (change, startedAt) =>
      handleInstanceStateChange(invocation('work', patient, startedAt), change),
    refill: (node) => refillAhead(invocation('work', patient), node),
    nodeIps(refills) {
      return {
        assign: (node, body) =>
          handleAssignIp({ ...invocation('request', brief), refills }, node, body),
        release: (node, ip, holder) =>
          handleReleaseIp(invocation('request', brief), node, ip, holder),
        lookUp: (node, holder) => handleLookUpIp(invocation('request', brief), node, holder),
        nodeSet: (node) => handleNodeSet(invocation('request', brief), node),
        nodeReport: (node, body) => handleNodeReport(invocation('request', brief), node, body),
      };
    },
  };
}

/** An EventBridge rule's EC2 event; anything else (the schedule's input) runs the whole pass. */
const instanceStateChangeEvent = z.object({
  source: z.literal('aws.ec2'),
  'detail-type': z.literal('EC2 Instance State-change Notification'),
  detail: z.unknown(),
});

/**
 * The ENI function's body (functions/eni/handler.ts; the cost meter runs the same): a background
 * refill (`refillPoolEvent`), an EC2 instance state-change event (each served cluster looks at
 * the instance: only the cluster whose node it is has a pool to create or remove, and the others
 * make no EC2 call for it), or the schedule's pass of the cluster its input names. A pass whose
 * every action failed fails the invocation, once every cluster has looked.
 */
export function eniInvocation(
  runners: ClusterSet<EniRunner>,
  observe: Observability,
  now: () => number = Date.now,
): (event: unknown) => Promise<unknown> {
  const { logger } = observe;
  /** Records one cluster's pass and fails the invocation when none of its work could be done. */
  const record = (cluster: string, summary: EniPassSummary) => {
    observe.forCluster(cluster);
    recordEniPass(observe, summary);
    failWhenNothingWorked(
      'eni',
      summary.ipsAssigned +
        summary.ipsUnassigned +
        summary.enisCreated +
        summary.enisDeleted +
        summary.poolsCreated +
        summary.poolsRemoved,
      summary.failures,
    );
  };
  return async (event) => {
    const refill = refillPoolEvent.safeParse(event);
    if (refill.success) {
      const { config, value: eni } = runners.get(refill.data.cluster);
      observe.forCluster(config.cluster);
      const { outcome, failures } = await eni.refill(refill.data.node);
      recordRefill(observe, refill.data.node, outcome, failures);
      return { refill: outcome };
    }
    const change = instanceStateChangeEvent.safeParse(event);
    if (change.success) {
      const instance = parseInstanceStateChange(change.data.detail);
      if (!instance) {
        logger.warn('ignored an instance state-change event without an instance id');
        return { ignored: true };
      }
      const summaries: Record<string, EniPassSummary> = {};
      const failures: unknown[] = [];
      // One deadline for the invocation, however many clusters look in turn.
      const startedAt = now();
      for (const cluster of runners.names) {
        try {
          const summary = await runners.get(cluster).value.instanceStateChange(instance, startedAt);
          if (passedNoPool(summary)) continue;
          summaries[cluster] = summary;
          record(cluster, summary);
        } catch (error) {
          failures.push(error);
        }
      }
      if (failures.length === 1) throw failures[0];
      if (failures.length > 1) {
        throw new AggregateError(failures, 'ENI passes failed in several clusters');
      }
      return summaries;
    }
    const input = passInput.parse(event ?? {});
    const { config, value: eni } = runners.get(input.cluster);
    const summary = await eni.pass();
    record(config.cluster, summary);
    return summary;
  };
}

/**
 * The ENI function as the stack deploys it (functions/eni/handler.ts): every cluster of the
 * Lambda environment, all on one EC2 client and instance-type cache.
 */
export function lambdaEniInvocation(observe: Observability): (event: unknown) => Promise<unknown> {
  const settings = lambdaSettings();
  const account = sdkEc2Account(settings.region);
  return eniInvocation(
    lambdaPassContexts(settings).map((context) => eniRunner(context, account)),
    observe,
  );
}

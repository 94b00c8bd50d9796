/**
 * Public fronts, wired once per process and cluster: ELBv2 and Global Accelerator behind the
 * account's rate budget, the fronts store, the pool directory and the accelerator's kept port
 * mappings, handed to the pod webhooks, the worker and the pass. Nothing is built for a cluster
 * whose config has no fronts.
 */
import { randomUUID } from 'node:crypto';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { PodFrontsDeps } from '../admission/pods.js';
import type { CapacityLedger } from '../capacity/store.js';
import type { ClusterSet } from '../clusters/cluster-set.js';
import { UnknownClusterError } from '../clusters/cluster-set.js';
import { ConfigError } from '../config/errors.js';
import type { LambdaSettings } from '../config/load.js';
import { DEFAULT_BACKOFF, type RateBudget } from '../ec2/rate-budget.js';
import type { CustomRoutingApi } from '../fronts/accelerator.js';
import { CustomRoutingFront } from '../fronts/accelerator-front.js';
import type { BindingFrontsDeps } from '../fronts/binding-fronts.js';
import { BudgetedCustomRoutingApi, BudgetedElbv2Api } from '../fronts/budgeted.js';
import type { Elbv2Api } from '../fronts/elbv2.js';
import { hasFronts, healthCheckOf, NO_FRONTS } from '../fronts/front-spec.js';
import { type FrontsPassSummary, runFrontsPass } from '../fronts/pass.js';
import { Elbv2PoolDirectory, type NlbPoolStatus } from '../fronts/pool-directory.js';
import { acceleratorClient, SdkCustomRoutingApi } from '../fronts/sdk-accelerator.js';
import { elbv2Client, SdkElbv2Api } from '../fronts/sdk-elbv2.js';
import type { SlotChainStore } from '../fronts/slots/store.js';
import { SqsFrontQueue } from '../fronts/sqs-queue.js';
import type { FrontStore } from '../fronts/store.js';
import type { FrontQueue, FrontWork, FrontWorkOutcome } from '../fronts/work.js';
import { MalformedFrontWorkError, parseFrontWork } from '../fronts/work-message.js';
import { FRONT_WORK_BACKOFF, type FrontsWorkerDeps, handleFrontWork } from '../fronts/worker.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import type { Lease } from '../lease/lease.js';
import type { PortRange } from '../net/port-range.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { DynamoFrontStore } from '../store/dynamo-front-store.js';
import { DynamoRateBudget } from '../store/dynamo-rate-budget.js';
import { DynamoSlotChainStore } from '../store/dynamo-slot-chain-store.js';
import type { Observability } from './observability.js';
import { type PassContext, passLease, storeOptions } from './pass-context.js';
import { passInput } from './pass-input.js';

/** The two AWS services of fronts as one process reaches them, unbudgeted. */
export interface FrontsAccount {
  readonly elbv2: Elbv2Api;
  readonly accelerator: CustomRoutingApi;
  /** The account and Region the budget meters (as EC2's). */
  readonly scope: string | (() => Promise<string>);
}

/** ELBv2 in the stack's Region and Global Accelerator (in us-west-2, its API's one Region). */
export function sdkFrontsAccount(region?: string): FrontsAccount {
  const client = elbv2Client(region);
  return {
    elbv2: new SdkElbv2Api(client),
    accelerator: new SdkCustomRoutingApi(acceleratorClient()),
    scope: region ?? (() => client.config.region()),
  };
}

/** The SQS fronts queue named by `BERTH_FRONTS_QUEUE`. */
export function lambdaFrontQueue(settings: LambdaSettings): SqsFrontQueue {
  if (!settings.frontsQueueUrl) {
    throw new ConfigError(['BERTH_FRONTS_QUEUE: environment variable is not set']);
  }
  return new SqsFrontQueue(new SQSClient({ region: settings.region }), settings.frontsQueueUrl);
}

/** One cluster's fronts, wired. */
export interface FrontsWiring {
  readonly store: FrontStore;
  readonly pods: PodFrontsDeps;
  readonly binding: BindingFrontsDeps;
  /** The NLB pool as status shows it; absent without NLBs. */
  readonly poolStatus?: () => Promise<NlbPoolStatus>;
  /** The worker's dependencies over a cluster API (the webhooks read no more than a pod). */
  worker(kube: Pick<ClusterApi, 'getPod'>): FrontsWorkerDeps;
  pass(
    kube: Pick<ClusterApi, 'listPods' | 'listNodes' | 'getNode' | 'patchPod'>,
  ): Promise<FrontsPassSummary>;
}

/** Where fronts keep their state, meter the account and exclude each other: the table's items. */
export interface FrontsTables {
  readonly store: FrontStore;
  /** The NLB slot chains (slots mode). */
  readonly chains: SlotChainStore;
  readonly budget: RateBudget;
  /** Keeps two processes' accelerator plans apart. */
  readonly lease: Lease;
  /** Where the pass records the fronts it offers; a simulation that reads none leaves it out. */
  readonly capacity?: CapacityLedger;
}

/** A cluster's config and clock, with the DynamoDB table or tables given (a simulation's). */
export type FrontsContext =
  | Omit<PassContext, 'clusterApi'>
  | (Pick<PassContext, 'config' | 'now'> & { readonly tables: FrontsTables });

/** The items of the DynamoDB table fronts use. */
function dynamoFrontsTables(
  context: Omit<PassContext, 'clusterApi'>,
  scope: FrontsAccount['scope'],
  now: () => number,
): FrontsTables {
  const stores = storeOptions(context);
  return {
    store: new DynamoFrontStore(stores),
    chains: new DynamoSlotChainStore(stores),
    budget: new DynamoRateBudget({ ...stores, scope, now }),
    lease: passLease(context),
    capacity: new DynamoCapacityLedger(storeOptions(context)),
  };
}

/** What the wiring takes besides the cluster's pass context. */
export interface FrontsWiringOptions {
  readonly account: FrontsAccount;
  readonly queue: FrontQueue;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  /** Where what needs an operator is said (a load balancer of the pool gone). */
  readonly log?: { warn(line: string): void };
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Wires a cluster's fronts; undefined when its config has none. */
export function frontsWiring(
  context: FrontsContext,
  options: FrontsWiringOptions,
): FrontsWiring | undefined {
  const { config } = context;
  if (!hasFronts(config)) return undefined;
  const now = context.now ?? Date.now;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? realSleep;
  const { store, chains, budget, lease, capacity } =
    'tables' in context ? context.tables : dynamoFrontsTables(context, options.account.scope, now);
  // The webhooks' calls (the pool's reading) wait briefly; the worker's and the pass's longer.
  const budgeted = { budget, now, sleep, random, backoff: DEFAULT_BACKOFF };
  const patient = { ...budgeted, backoff: FRONT_WORK_BACKOFF };
  const elbv2 = new BudgetedElbv2Api(options.account.elbv2, budgeted);
  const workElbv2 = new BudgetedElbv2Api(options.account.elbv2, patient);
  const { nlb, accelerator: acceleratorConfig } = config.fronts;
  const pool = nlb
    ? new Elbv2PoolDirectory({
        api: elbv2,
        store,
        configured: nlb.loadBalancers,
        cluster: config.cluster,
        now,
        ...(options.log ? { warn: (line: string) => options.log?.warn(line) } : {}),
      })
    : undefined;
  const accelerator = acceleratorConfig
    ? new CustomRoutingFront({
        api: new BudgetedCustomRoutingApi(options.account.accelerator, patient),
        store,
        endpointGroupArn: acceleratorConfig.endpointGroupArn,
        exclusion: { lease, holder: `fronts-${randomUUID()}`, sleep },
      })
    : undefined;
  const slotRange = nlb?.mode === 'slots' ? nlb.range : undefined;
  const slots =
    nlb && pool && slotRange !== undefined
      ? {
          cluster: config.cluster,
          chains,
          elbv2: workElbv2,
          members: () => pool.members(),
          listenerPorts: nlb.listenerPorts,
          placement: nlb.placement,
          hostPorts: portsOf(config.hostPortRanges[slotRange]),
          healthCheck: healthCheckOf(nlb.healthCheck),
          nodeSelector: config.scale.nodeSelector,
          random,
          now,
        }
      : undefined;
  const pods: PodFrontsDeps = {
    offered: {
      ...NO_FRONTS,
      nlb: nlb !== undefined,
      ...(acceleratorConfig ? { acceleratorRange: acceleratorConfig.range } : {}),
      ...(slotRange !== undefined ? { slotRange } : {}),
    },
    // In slots mode a CREATE claims no listener: the node's seat has one already.
    ...(nlb && pool && slotRange === undefined
      ? {
          listeners: {
            store,
            pool,
            listenerPorts: nlb.listenerPorts,
            placement: nlb.placement,
            random,
            now,
          },
        }
      : {}),
    queue: options.queue,
    cluster: config.cluster,
    delaySeconds: config.settle.delaySeconds,
  };
  const binding: BindingFrontsDeps = {
    cluster: config.cluster,
    store,
    ...(pool ? { pool } : {}),
    ...(slots ? { chains } : {}),
    ...(accelerator ? { accelerator } : {}),
    queue: options.queue,
    now,
  };
  return {
    store,
    pods,
    binding,
    ...(pool ? { poolStatus: () => pool.status() } : {}),
    worker: (kube) => ({
      cluster: config.cluster,
      store,
      kube,
      ...(pool && nlb
        ? {
            nlb: {
              api: workElbv2,
              vpcIdOf: (arn: string) => pool.vpcIdOf(arn),
              healthCheck: healthCheckOf(nlb.healthCheck),
            },
          }
        : {}),
      ...(accelerator ? { accelerator } : {}),
      queue: options.queue,
      recheckSeconds: config.settle.delaySeconds,
      now,
    }),
    async pass(kube) {
      const summary = await runFrontsPass({
        cluster: config.cluster,
        store,
        kube,
        ...(pool && nlb
          ? {
              nlb: {
                api: workElbv2,
                loadBalancers: () => pool.arns(),
                listenerPorts: nlb.listenerPorts.size,
              },
            }
          : {}),
        ...(slots ? { slots } : {}),
        ...(accelerator ? { accelerator } : {}),
        queue: options.queue,
        now,
      });
      if (capacity && summary.offered) {
        await capacity.record(config.cluster, {
          source: 'fronts',
          atMs: now(),
          ...summary.offered,
        });
      }
      return summary;
    },
  };
}

/** What the fronts function's body is built from. */
export interface FrontMessagesDeps {
  /** Each served cluster's worker. */
  readonly workers: ClusterSet<FrontsWorkerDeps | undefined>;
  readonly observe: Pick<Observability, 'logger'>;
}

/**
 * The fronts function's body for a queue batch (functions/fronts/handler.ts): the batch's work
 * grouped by cluster and handed to each cluster's worker at once, so a burst's accelerator
 * destinations are one plan; an item that failed is a batch item failure, delivered again.
 */
export function frontMessages(
  deps: FrontMessagesDeps,
): (event: SQSEvent) => Promise<SQSBatchResponse> {
  const { logger } = deps.observe;
  return async (event) => {
    const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
    const byCluster = new Map<string | undefined, { work: FrontWork; messageId: string }[]>();
    for (const record of event.Records) {
      try {
        const work = parseFrontWork(record.body);
        const items = byCluster.get(work.cluster) ?? [];
        items.push({ work, messageId: record.messageId });
        byCluster.set(work.cluster, items);
      } catch (error) {
        if (!(error instanceof MalformedFrontWorkError)) throw error;
        logger.error('dropped a message that is not front work', { error: error.message });
      }
    }
    for (const [cluster, items] of byCluster) {
      let worker: FrontsWorkerDeps | undefined;
      try {
        worker = deps.workers.get(cluster).value;
      } catch (error) {
        if (!(error instanceof UnknownClusterError)) throw error;
        logger.error('dropped front work for a cluster not served', { error: error.message });
        continue;
      }
      if (worker === undefined) {
        logger.error('dropped front work for a cluster without fronts', { cluster });
        continue;
      }
      const outcomes = await handleFrontWork(
        worker,
        items.map((item) => item.work),
      );
      items.forEach((item, i) => {
        const outcome: FrontWorkOutcome | undefined = outcomes[i];
        if (outcome?.kind !== 'failed') return;
        logger.error('front work failed', { error: outcome.error, messageId: item.messageId });
        batchItemFailures.push({ itemIdentifier: item.messageId });
      });
    }
    return { batchItemFailures };
  };
}

/** One cluster's fronts as the fronts function keeps them; undefined without fronts. */
export interface FrontsRunner {
  readonly worker: FrontsWorkerDeps;
  pass(): Promise<FrontsPassSummary>;
}

/** Wires a cluster's worker and pass for the fronts function, over the account and queue given. */
export function frontsRunner(
  context: FrontsContext & {
    readonly clusterApi: Pick<
      ClusterApi,
      'getPod' | 'listPods' | 'listNodes' | 'getNode' | 'patchPod'
    >;
  },
  options: FrontsWiringOptions,
): FrontsRunner | undefined {
  const wiring = frontsWiring(context, options);
  if (wiring === undefined) return undefined;
  return { worker: wiring.worker(context.clusterApi), pass: () => wiring.pass(context.clusterApi) };
}

/** Whether an invocation's event is a queue batch (else it is the schedule's pass input). */
function isQueueBatch(event: unknown): event is SQSEvent {
  return typeof event === 'object' && event !== null && Array.isArray((event as SQSEvent).Records);
}

/**
 * The fronts function's body (functions/fronts/handler.ts): a batch from the fronts queue, or
 * the schedule's pass of the cluster its input names. A pass that cannot complete throws.
 */
export function frontsInvocation(
  runners: ClusterSet<FrontsRunner | undefined>,
  observe: Observability,
): (event: unknown) => Promise<unknown> {
  const messages = frontMessages({ workers: runners.map((runner) => runner?.worker), observe });
  return async (event) => {
    if (isQueueBatch(event)) return messages(event);
    const input = passInput.parse(event ?? {});
    const { config, value } = runners.get(input.cluster);
    observe.forCluster(config.cluster);
    if (value === undefined) return { cluster: config.cluster, skipped: 'no fronts configured' };
    const summary = await value.pass();
    observe.logger.info('fronts pass', { ...summary });
    return { cluster: config.cluster, ...summary };
  };
}

/** Every port of a host port range, in order (none for a range the config does not have). */
function portsOf(range: PortRange | undefined): number[] {
  return range === undefined ? [] : Array.from({ length: range.size }, (_, i) => range.base + i);
}

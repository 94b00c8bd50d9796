/**
 * What the CLI's one-shot commands run (`status`, `repair`, `scale`, `eni`, `fronts`,
 * `forget-cluster`, and the store `sim` runs on): the same runtime, passes and fronts the Lambdas
 * and the local server run, on the local store and the cluster kubectl would use. The CLI checks
 * the flags and prints what these answer.
 */
import { hostname } from 'node:os';
import { overlappingServiceCidrs } from '../clusters/cluster-set.js';
import { CLUSTER_NAME } from '../config/schema.js';
import type { FrontQueue, FrontWork } from '../fronts/work.js';
import { handleFrontWork } from '../fronts/worker.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { openStore, type StoreTarget } from '../local/store-target.js';
import { clusterItems, deleteItems, type ItemKey, itemKind } from '../store/cluster-items.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { ensureTable } from '../store/ensure-table.js';
import { capacityReader } from './capacity.js';
import { frontsWiring, sdkFrontsAccount } from './fronts.js';
import { optionalCluster, passContext, requiredCluster } from './local-cluster.js';
import { UsageError } from './local-errors.js';
import type { LocalOptions } from './local-options.js';
import { createPasses, type Passes } from './passes.js';
import { type BerthRuntime, createRuntime } from './runtime.js';
import { refreshServiceCidrs } from './service-cidrs.js';

function runtimeOn(
  options: LocalOptions,
  store: StoreTarget,
  clusterApi?: ClusterApi,
  withFronts = false,
): BerthRuntime {
  const fronts = withFronts ? statusFronts(options, store) : undefined;
  return createRuntime({
    config: options.config,
    dynamo: store.client,
    tableName: store.tableName,
    ...(clusterApi
      ? { clusterApi, serviceLister: clusterApi, nodeLister: clusterApi, podLister: clusterApi }
      : {}),
    ...(fronts ? { fronts } : {}),
  });
}

/** Status admits nothing, so it queues no front work. */
const NO_FRONT_WORK: FrontQueue = {
  submit: async () => {
    throw new Error('berth status queues no front work');
  },
};

/** The fronts status reads (the NLB pool through ELBv2), when the config has any. */
function statusFronts(options: LocalOptions, store: StoreTarget) {
  return frontsWiring(
    {
      config: options.config,
      dynamo: store.client,
      tableName: store.tableName,
      ...(options.region ? { region: options.region } : {}),
    },
    { account: sdkFrontsAccount(options.region), queue: NO_FRONT_WORK },
  );
}

/** Runs `run` on the store the flags name, closed after it. */
async function withStore<T>(
  options: LocalOptions,
  run: (store: StoreTarget) => Promise<T>,
  progress?: (line: string) => void,
): Promise<T> {
  const store = await openStore(options, progress ? { progress } : {});
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/**
 * Who holds a cluster IP, a node port, a host port, or what `namespace/name` holds
 * (`status --holder`). A holder whose Service wrote no owner record is named from the cluster,
 * when there is one.
 */
export function localHolders(options: LocalOptions, query: string) {
  const cluster = optionalCluster(options)?.api;
  return withStore(options, (store) => runtimeOn(options, store, cluster).holders(query));
}

/**
 * `berth status`: every cluster's report (a config with a section per cluster and no --cluster:
 * every cluster, one after another), and the configured Service CIDRs that overlap across them.
 */
export function localStatus(options: LocalOptions) {
  return withStore(options, async (store) => {
    const reports = [];
    // One cluster's nodes, where the kubeconfig reaches it: status counts its Auto Mode nodes.
    const cluster = options.clusters.length === 1 ? optionalCluster(options)?.api : undefined;
    for (const config of options.clusters) {
      // The NLB pool as ELBv2 answers now: a load balancer deleted outside berth shows there.
      const runtime = runtimeOn({ ...options, config }, store, cluster, true);
      // The cluster's ServiceCIDRs: what berth allocates from, and what holds a terminating one.
      if (cluster) await refreshServiceCidrs(runtime.serviceCidrs, cluster);
      reports.push(await runtime.status());
    }
    // Across clusters: configured Service CIDRs that overlap (the fleet's /v1/status lists them too).
    const overlaps = overlappingServiceCidrs(
      options.clusters.map((config) => ({ cluster: config.cluster, cidrs: config.serviceCIDRs })),
    );
    return { reports, overlaps };
  });
}

/**
 * `berth status --clusters`: every cluster's capacity as its passes last recorded it in the
 * table (those of `berth serve --passes`, or of the stack's functions when `--table` names its
 * table), read without reaching any cluster.
 */
export function localCapacity(options: LocalOptions) {
  return withStore(options, (store) =>
    capacityReader(
      options.clusters,
      new DynamoCapacityLedger({ client: store.client, tableName: store.tableName }),
    )(),
  );
}

/** Runs the passes once against the cluster kubectl would use (they need one); `holder` names this process. */
export async function withLocalPasses(
  options: LocalOptions,
  run: (passes: Passes, holder: string) => Promise<number>,
): Promise<number> {
  const clusterApi = requiredCluster(options).api;
  return withStore(options, (store) =>
    run(
      createPasses(passContext(options, options.config, store, clusterApi)),
      `${hostname()}-${process.pid}`,
    ),
  );
}

/** A queue that keeps what the pass hands it, for the command to do before it ends. */
class CollectedWork implements FrontQueue {
  readonly items: FrontWork[] = [];
  async submit(work: FrontWork): Promise<void> {
    this.items.push(work);
  }
}

/**
 * `berth fronts`: one fronts pass against the cluster kubectl would use, with the binds it
 * queues made before the command ends; or, with `addNlb`, that load balancer added to the
 * cluster's pool (checked first: it must be a Network Load Balancer ELBv2 knows). Undefined when
 * the config has no fronts.
 */
export function localFronts(options: LocalOptions, addNlb: string | undefined) {
  return withStore(options, async (store) => {
    const queue = new CollectedWork();
    const account = sdkFrontsAccount(options.region);
    const wiring = frontsWiring(
      {
        config: options.config,
        dynamo: store.client,
        tableName: store.tableName,
        ...(options.region ? { region: options.region } : {}),
      },
      { account, queue },
    );
    if (wiring === undefined) return undefined;
    if (addNlb !== undefined) {
      await account.elbv2.describeLoadBalancers([addNlb]);
      await wiring.store.addToPool(addNlb);
      return { added: addNlb } as const;
    }
    const clusterApi = requiredCluster(options).api;
    const summary = await wiring.pass(clusterApi);
    const outcomes = await handleFrontWork(wiring.worker(clusterApi), queue.items);
    const bindsFailed = outcomes.filter((outcome) => outcome.kind === 'failed').length;
    return { pass: { ...summary, binds: queue.items.length, bindsFailed } } as const;
  });
}

/** What `forget-cluster` found of a cluster, and what it deleted. */
export interface ForgetReport {
  readonly table: string;
  readonly items: number;
  readonly byKind: Readonly<Record<string, number>>;
  readonly deleted: number;
  /** Items of the cluster that appeared while it deleted: the cluster still runs. */
  readonly left: number;
}

/**
 * `berth forget-cluster NAME [--yes]`: lists every item the cluster owns in the table and, with
 * `yes`, deletes exactly those and counts what is left. The other clusters' items, and what the
 * clusters share (the account's EC2 budget, subnet marks), are not touched.
 */
export function forgetCluster(
  options: LocalOptions,
  cluster: string,
  yes: boolean,
  progress: (line: string) => void,
): Promise<ForgetReport> {
  if (!CLUSTER_NAME.test(cluster)) {
    throw new UsageError(
      `forget-cluster: "${cluster}" is not a cluster name (a DNS label, as the config's "cluster")`,
    );
  }
  return withStore(
    options,
    async (store) => {
      const keys: ItemKey[] = [];
      for await (const key of clusterItems(store.client, store.tableName, cluster, (scanned) =>
        progress(`  scanned ${scanned} items of ${store.tableName}…`),
      )) {
        keys.push(key);
      }
      const byKind: Record<string, number> = {};
      for (const key of keys) byKind[itemKind(key.pk)] = (byKind[itemKind(key.pk)] ?? 0) + 1;
      let deleted = 0;
      let left = 0;
      if (yes && keys.length > 0) {
        deleted = await deleteItems(store.client, store.tableName, keys, (done) =>
          progress(`  deleted ${done} of ${keys.length}…`),
        );
        for await (const _ of clusterItems(store.client, store.tableName, cluster)) left++;
      }
      return { table: store.tableName, items: keys.length, byKind, deleted, left };
    },
    progress,
  );
}

/**
 * The store of one `berth sim` run: DynamoDB Local or `--dynamodb-endpoint`, never a table the
 * flags name, with a table of its own, so what an earlier run or `berth serve` left never meets
 * this day's invariants.
 */
export async function openSimStore(
  options: LocalOptions,
  progress: (line: string) => void,
): Promise<StoreTarget> {
  const store = await openStore({ ...options, table: undefined }, { progress });
  try {
    const tableName = `berth-sim-${Date.now()}`;
    await ensureTable(store.client, tableName);
    return { ...store, tableName };
  } catch (error) {
    await store.close();
    throw error;
  }
}

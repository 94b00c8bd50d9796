/**
 * The local server, `berth serve`, built for every cluster of the config from one process and
 * one DynamoDB Local, each read through its own kubeconfig context: its routes under
 * `/clusters/<name>` (plain paths too when there is one cluster), its own runtime, settle queue,
 * and (with `passes`) its own pass timers. The CLI prints what it built and stops it.
 */
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { formatDecision } from '../admission/decision.js';
import type { CapacityView } from '../capacity/view.js';
import { ClusterSet, type ServiceCidrOverlap } from '../clusters/cluster-set.js';
import { clusterPathPrefix, clusterRoutes, type HttpHandler } from '../clusters/http-routes.js';
import type { BerthConfig } from '../config/schema.js';
import { InProcessRefills } from '../eni/refill.js';
import { hasFronts } from '../fronts/front-spec.js';
import { InProcessFrontQueue } from '../fronts/in-process-queue.js';
import type { FrontWorkOutcome } from '../fronts/work.js';
import { handleFrontWork } from '../fronts/worker.js';
import { createHttpApi } from '../http/api.js';
import { withCapacity } from '../http/capacity-route.js';
import type { HttpFault, HttpRequest, HttpResponse } from '../http/exchange.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import type { ClusterServiceCidr } from '../k8s/service-cidrs.js';
import { startServer } from '../local/server.js';
import { openStore, type StoreTarget } from '../local/store-target.js';
import { startPassTimers } from '../local/timers.js';
import { ensureLocalTls } from '../local/tls.js';
import { metricsText, PassRecorder } from '../metrics/openmetrics.js';
import { metricsReading } from '../metrics/reading.js';
import { InProcessSettleQueue } from '../settle/in-process-queue.js';
import { ImmediateSettler, QueueSettler } from '../settle/settler.js';
import type { StatusReport } from '../status/report.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { clusterViewReader } from '../ui/cluster-view.js';
import { WEB_VIEW_PAGE } from '../ui/page.js';
import { capacityReader, clusterCapacityReader } from './capacity.js';
import { clusterContexts } from './cluster-contexts.js';
import { type Ec2Account, nodeIpFault, sdkEc2Account } from './eni-pass.js';
import { type FrontsWiring, frontsWiring, sdkFrontsAccount } from './fronts.js';
import {
  checkClusterAnswers,
  hasKubeconfig,
  kubeconfigContexts,
  type LocalCluster,
  passContext,
  requiredCluster,
} from './local-cluster.js';
import { EnvironmentError } from './local-errors.js';
import type { LocalOptions } from './local-options.js';
import {
  FRONTS_PASS_SECONDS,
  type PlannedPass,
  passesCallingAws,
  plannedPasses,
} from './local-passes.js';
import { createPasses } from './passes.js';
import { createRuntime } from './runtime.js';
import { type ServeLog, warnAtMostEvery } from './serve-log.js';
import { checkServiceCidrs, type ServiceCidrStart, watchServiceCidrs } from './service-cidrs.js';
import { settleRunner } from './settle.js';
import { recoverLocalSettles } from './settle-recovery.js';

/** The capacity view of the server's clusters, or of the one named. */
type CapacityRead = (cluster?: string) => Promise<CapacityView>;
/** One cluster of the config as the server runs it, and what its banner says of it. */
export interface ServedCluster {
  readonly config: BerthConfig;
  /** The cluster it reads, if a kubeconfig was found. */
  readonly cluster: LocalCluster | undefined;
  /** Its passes as `--passes` runs them on timers (which run, which are off and why); none without. */
  readonly passes: readonly PlannedPass[] | undefined;
  /** Whether values its Services give back wait for the cluster to store the change. */
  readonly settles: boolean;
}

/** A served cluster as the server assembles it. */
interface AssembledCluster extends ServedCluster {
  readonly handle: HttpHandler;
  /** Its ranges and pools, as its `/v1/status` answers them. */
  readonly status: () => Promise<StatusReport>;
  /** Starts its pass timers, if it has passes; answers how to stop them. */
  startTimers(): () => Promise<void>;
  /** Drops waiting settle looks and lets running refills finish. */
  close(): Promise<void>;
}

/** Assembles one cluster: its runtime, settle queue, passes and HTTP API. */
function serveCluster(
  options: LocalOptions,
  config: BerthConfig,
  cluster: LocalCluster | undefined,
  store: StoreTarget,
  account: Ec2Account,
  log: ServeLog,
  serviceCidrs: readonly ClusterServiceCidr[] | undefined,
  aws: boolean,
  capacity: CapacityRead,
): AssembledCluster {
  const clusterApi = cluster?.api;
  // Log lines name their cluster where the server has several.
  const tag = options.clusters.length > 1 ? `[${config.cluster}] ` : '';
  // With a cluster, values a Service gives back are freed once its stored object shows it.
  const settleQueue = clusterApi
    ? new InProcessSettleQueue(settleRunner(passContext(options, config, store, clusterApi)), {
        settled: (task, outcome) => {
          if (outcome.freed > 0 || outcome.kept > 0)
            log.info(`${tag}settle ${task.id}: freed ${outcome.freed}, held again ${outcome.kept}`);
        },
        failed: (task, error) =>
          log.warn(
            `${tag}settle ${task.id} failed, looking again shortly: ${(error as Error).message}`,
          ),
      })
    : undefined;
  // Public fronts need the cluster: a binding's node, and a deleted pod seen gone before release.
  const fronts = clusterApi ? serveFronts(options, config, store, clusterApi, log, tag) : undefined;
  const holder = `${hostname()}-${process.pid}`;
  // Admissions trigger scale-up passes between the timer's (shared/scale/admission-trigger.ts),
  // run here one at a time; the runtime counts them only while the scale timer runs.
  let triggered: Promise<void> | undefined;
  const askScale = async () => {
    if (passes === undefined || triggered !== undefined) return;
    triggered = passes
      .scale(holder, { triggered: true })
      .then(
        () => undefined,
        (error: unknown) =>
          log.error(`${tag}triggered scale pass failed: ${(error as Error).message}`),
      )
      .finally(() => {
        triggered = undefined;
      });
  };
  const runtime = createRuntime({
    config,
    dynamo: store.client,
    tableName: store.tableName,
    ...(fronts ? { fronts: fronts.wiring } : {}),
    ...(clusterApi && options.passes
      ? {
          scaleTrigger: {
            ask: askScale,
            failed: (error: unknown) =>
              log.warn(`${tag}scale-up trigger failed: ${(error as Error).message}`),
          },
        }
      : {}),
    ...(clusterApi
      ? { clusterApi, serviceLister: clusterApi, nodeLister: clusterApi, podLister: clusterApi }
      : {}),
    ...(settleQueue
      ? {
          settler: () =>
            new QueueSettler(settleQueue, config.settle.delaySeconds, (task, error) =>
              log.warn(
                `${tag}settle ${task.id} not queued (the repair pass finishes it): ${String(error)}`,
              ),
            ),
        }
      : // No cluster to name a Service from: its CREATE records its owner, so that who holds one
        // of its values can be told by the value (`status --holder IP`, the web view).
        { settler: (allocator) => new ImmediateSettler(allocator, { recordCreates: true }) }),
    log: { info: (line) => log.info(`${tag}${line}`), warn: (line) => log.warn(`${tag}${line}`) },
  });
  // The cluster's ServiceCIDRs as read at start; each repair pass reads them again.
  if (clusterApi) runtime.serviceCidrs.apply(serviceCidrs);
  // A restart lost the settle looks that were waiting: the store says what they were.
  const recovery = recoverLocalSettles({
    config,
    dynamo: store.client,
    tableName: store.tableName,
    ...(clusterApi ? { clusterApi } : {}),
    ...(settleQueue ? { queue: settleQueue } : {}),
    log: { info: (line) => log.info(`${tag}${line}`), warn: (line) => log.warn(`${tag}${line}`) },
  });
  // The passes change the cluster (cordon, delete nodes, EC2): only when asked for.
  const passes =
    clusterApi && options.passes
      ? createPasses(
          {
            ...passContext(options, config, store, clusterApi),
            serviceCidrs: runtime.serviceCidrs,
          },
          account,
        )
      : undefined;
  // Background pool refills run in this process, beside the requests that ask for them; the
  // node IP API calls EC2, so it is served only where a Region was found.
  const refills =
    passes && aws
      ? new InProcessRefills(
          (node) => passes.eni.refill(node),
          (node, error) =>
            log.error(
              `${tag}background refill of node ${node} failed: ${(error as Error).message}`,
            ),
        )
      : undefined;
  // With a cluster, the view draws its game-server nodes too, as berth sim's does.
  const readView = clusterApi ? clusterViewReader(clusterApi, config.scale, Date.now) : undefined;
  // An outage answers every request 503 naming what failed; the log says so once a minute.
  const unavailable = warnAtMostEvery(60_000, (line) => log.warn(`${tag}answering ${line}`));
  const unavailableFault = (fault: HttpFault) =>
    unavailable(`${fault.statusCode}: ${fault.message}`);
  // Each pass's outcomes as this process ran them, for /metrics.
  const passRecords = new PassRecorder();
  return {
    config,
    cluster,
    status: () => runtime.status(),
    passes: passes ? plannedPasses(config) : undefined,
    settles: settleQueue !== undefined,
    handle: createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      status: () => runtime.status(),
      ...(passes && refills ? { nodeIps: passes.eni.nodeIps(refills) } : {}),
      classify: nodeIpFault,
      storeName: `${store.place}, table ${store.tableName}`,
      onUnavailable: unavailableFault,
      metrics: async (format) =>
        metricsText(
          format,
          [
            await metricsReading(runtime, {
              passes: () => passRecords.records(),
              capacity: clusterCapacityReader({
                config,
                dynamo: store.client,
                tableName: store.tableName,
              }),
            }),
          ],
          Date.now(),
        ),
      onDecision: (decision) => log.info(`${tag}admission ${formatDecision(decision)}`),
      webView: {
        page: WEB_VIEW_PAGE,
        state: async () => ({
          ...(await runtime.uiState()),
          ...(readView ? { clusterView: await readView() } : {}),
          capacity: await capacity(),
        }),
        holders: (query) => runtime.holders(query),
      },
    }),
    startTimers: () => {
      // Without a repair pass to read them, the cluster's ServiceCIDRs are read on its interval.
      const stopCidrs =
        clusterApi && !passes && config.repair.intervalSeconds > 0
          ? watchServiceCidrs(
              runtime.serviceCidrs,
              clusterApi,
              config.repair.intervalSeconds * 1000,
              (error) =>
                log.warn(
                  `${tag}reading the cluster's ServiceCIDRs failed: ${(error as Error).message}`,
                ),
            )
          : async () => {};
      const stopPasses = passes
        ? startPassTimers(
            [
              {
                name: 'repair',
                intervalSeconds: config.repair.intervalSeconds,
                run: () => passes.repair(holder),
              },
              {
                name: 'scale',
                intervalSeconds: config.scale.intervalSeconds,
                run: () => passes.scale(holder),
              },
              {
                name: 'eni',
                intervalSeconds: config.eni.intervalSeconds,
                run: () => passes.eni.pass(),
              },
              ...(fronts && clusterApi
                ? [
                    {
                      name: 'fronts',
                      intervalSeconds: FRONTS_PASS_SECONDS,
                      run: () => fronts.wiring.pass(clusterApi),
                    },
                  ]
                : []),
            ],
            {
              result: (name, result) => {
                passRecords.ended(name, true);
                log.info(`${tag}${name} pass: ${JSON.stringify(result)}`);
              },
              failure: (name, error) => {
                passRecords.ended(name, false);
                log.error(`${tag}${name} pass failed: ${(error as Error).message}`);
              },
            },
          )
        : async () => {};
      return async () => {
        await stopPasses();
        await stopCidrs();
      };
    },
    async close() {
      recovery.stop();
      // Waiting looks are dropped: the values stay marked, and the next start finishes them.
      await settleQueue?.close();
      // Waiting front work is dropped too: the fronts pass finds what it would have done.
      await fronts?.queue.close();
      // No request can ask for another now; let the running ones finish before the store closes.
      await refills?.settled();
      await triggered;
    },
  };
}

/**
 * A cluster's public fronts in this process: ELBv2 and Global Accelerator through the AWS SDK
 * (the default credential chain, `--region`), front work on in-process timers gathered a second
 * at a time as the SQS queue gathers it in AWS. Undefined when the config has no fronts.
 */
function serveFronts(
  options: LocalOptions,
  config: BerthConfig,
  store: StoreTarget,
  clusterApi: ClusterApi,
  log: ServeLog,
  tag: string,
): { readonly wiring: FrontsWiring; readonly queue: InProcessFrontQueue } | undefined {
  if (!hasFronts(config)) return undefined;
  let wiring: FrontsWiring | undefined;
  const queue = new InProcessFrontQueue({
    handle: async (batch) =>
      wiring ? handleFrontWork(wiring.worker(clusterApi), batch) : batch.map(() => NOT_READY),
    log: {
      handled: (work, outcome) => {
        if (outcome.kind === 'failed') {
          log.warn(
            `${tag}front ${work.kind} of ${work.namespace}/${work.pod} failed: ${String(outcome.error)}`,
          );
        } else if (outcome.kind === 'skipped') {
          log.warn(
            `${tag}front ${work.kind} of ${work.namespace}/${work.pod} skipped: ${outcome.reason}`,
          );
        }
      },
    },
  });
  wiring = frontsWiring(
    {
      config,
      dynamo: store.client,
      tableName: store.tableName,
      ...(options.region ? { region: options.region } : {}),
    },
    {
      account: sdkFrontsAccount(options.region),
      queue,
      log: { warn: (line) => log.warn(`${tag}${line}`) },
    },
  );
  return wiring ? { wiring, queue } : undefined;
}

const NOT_READY: FrontWorkOutcome = { kind: 'failed', error: new Error('fronts not wired yet') };

/** Every request gets one log line: method, path (without a secret), status and time taken. */
function requestLogged(handle: HttpHandler, log: ServeLog): HttpHandler {
  return async (request: HttpRequest): Promise<HttpResponse> => {
    const started = performance.now();
    const response = await handle(request);
    const ms = Math.round((performance.now() - started) * 10) / 10;
    log.info(`${request.method} ${request.path} ${response.statusCode} ${ms} ms`);
    return response;
  };
}

/**
 * A plain `GET /v1/status` on a server of several clusters answers for all of them: each
 * cluster's report under `clusters` (what `berth status --json` prints, one per cluster), and
 * every range with its cluster under `ranges`, the key a single-cluster server answers with.
 * Everything else goes to `routes`.
 */
function withFleetStatus(
  served: readonly AssembledCluster[],
  routes: HttpHandler,
  overlaps: readonly ServiceCidrOverlap[],
): HttpHandler {
  if (served.length === 1) return routes;
  return async (request) => {
    if (request.method !== 'GET' || request.path !== '/v1/status') return routes(request);
    const clusters = await Promise.all(served.map((one) => one.status()));
    const ranges = clusters.flatMap((report) =>
      report.ranges.map((range) => ({ cluster: report.cluster, ...range })),
    );
    return {
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      // Findings across clusters: Service CIDRs that overlap (read at start).
      body: JSON.stringify({
        clusters,
        ranges,
        ...(overlaps.length > 0 ? { findings: overlaps } : {}),
      }),
    };
  };
}

/** The server, and the TLS material it serves with (none with --http). */
interface Listening {
  readonly server: Awaited<ReturnType<typeof startServer>>;
  readonly tls: Awaited<ReturnType<typeof ensureLocalTls>> | undefined;
}

/** Serves every cluster on the flags' address: HTTPS from the data dir's TLS unless --http. */
async function listen(
  options: LocalOptions,
  served: readonly AssembledCluster[],
  handlers: ClusterSet<HttpHandler>,
  log: ServeLog,
  cidrStart: ServiceCidrStart,
  capacity: CapacityRead,
): Promise<Listening> {
  for (const overlap of cidrStart.overlaps) log.warn(overlap.message);
  const tls = options.http
    ? undefined
    : await ensureLocalTls(
        join(resolve(options.dataDir), 'tls'),
        Date.now,
        [options.host, options.advertiseAddress].filter((name): name is string => !!name),
        { newCa: options.newCa === true },
      );
  const server = await startServer({
    host: options.host,
    port: options.port,
    ...(tls ? { tls } : {}),
    handle: requestLogged(
      withCapacity(
        capacity,
        withFleetStatus(
          served,
          clusterRoutes(handlers, { unknown: 'explain' }),
          cidrStart.overlaps,
        ),
      ),
      log,
    ),
    onError: (error, request) => {
      log.error(
        `${request.method} ${request.path} failed: ${(error as Error).stack ?? String(error)}`,
      );
    },
  }).catch((error: unknown) => {
    throw listenRefused(error, options.host, options.port);
  });
  return { server, tls };
}

/**
 * Whether AWS can be addressed (a Region is found, from `--region`, AWS_REGION or the profile).
 * Refused (3) when a pass that will run calls AWS and none is found, naming each such pass and
 * how to turn it off; answers false when no pass needs AWS and no Region is found.
 */
async function awsRegionFor(
  clusters: readonly BerthConfig[],
  account: Ec2Account,
): Promise<boolean> {
  if (typeof account.scope !== 'function') return true;
  const found = await account.scope().then(
    () => undefined,
    (error: unknown) => (error as Error).name,
  );
  if (found === undefined) return true;
  const needs = clusters.flatMap((config) =>
    passesCallingAws(plannedPasses(config)).map((pass) => ({ cluster: config.cluster, pass })),
  );
  if (needs.length === 0) return false;
  const tag = (cluster: string) => (clusters.length > 1 ? ` of cluster ${cluster}` : '');
  const which = needs
    .map(({ cluster, pass }) => `the ${pass.name} pass${tag(cluster)} calls ${pass.aws}`)
    .join(', ');
  const off = [...new Set(needs.map(({ pass }) => PASS_OFF[pass.name]))].join(', ');
  // Not its cause: the fix is said here once.
  throw new EnvironmentError(
    `--passes: ${which}, which needs an AWS Region, and none was found (${found}): set AWS_REGION, pass --region, or use an AWS profile that names a Region; or run without AWS (${off})`,
  );
}

/** How the config turns off a pass that calls AWS. */
const PASS_OFF: Readonly<Record<PlannedPass['name'], string>> = {
  repair: 'repair.intervalSeconds: 0',
  scale: 'scale.intervalSeconds: 0, or scale.nodePool of type none, kubernetes or karpenter',
  ENI: 'eni.intervalSeconds: 0',
  fronts: 'no fronts in the config',
};

/** A listen the system refused, said with its fix (exit 3); anything else as it came. */
function listenRefused(error: unknown, host: string, port: number): unknown {
  const at = `${host}:${port}`;
  switch ((error as { code?: unknown }).code) {
    case 'EADDRINUSE':
      return new EnvironmentError(
        `${at} is in use: stop what listens there, or pass --port N (0 picks a free one)`,
        { cause: error },
      );
    case 'EACCES':
      return new EnvironmentError(
        `${at}: this user may not listen on port ${port}: pass --port N with N of 1024 or more`,
        { cause: error },
      );
    case 'EADDRNOTAVAIL':
      return new EnvironmentError(
        `${at}: ${host} is no address of this machine: pass --host ADDR`,
        {
          cause: error,
        },
      );
    default:
      return error;
  }
}

/** The local server, listening; its timers start when the caller is ready for their lines. */
export interface LocalServer {
  readonly url: string;
  /** Each served cluster and the URL its routes are under. */
  readonly served: readonly (ServedCluster & { readonly url: string })[];
  /** The local CA's certificate the server's is signed by (none with `http`). */
  readonly caPath: string | undefined;
  /** Where the store is, for the banner. */
  readonly store: Pick<StoreTarget, 'where' | 'tableName' | 'place'>;
  /**
   * Settles when the server cannot go on: the DynamoDB Local it started ended and would not start
   * again. The caller closes it and exits 3.
   */
  readonly failed: Promise<Error>;
  /** Starts every cluster's pass timers; answers how to stop them. */
  startTimers(): () => Promise<void>;
  /** Stops listening, lets running work finish, and closes the store. */
  close(): Promise<void>;
}

/**
 * Builds and starts the local server: refuses clusters whose API server does not answer (3) and
 * configured Service ranges a cluster does not have (2) before anything listens.
 */
export async function startLocalServer(options: LocalOptions, log: ServeLog): Promise<LocalServer> {
  const contexts = clusterContexts({
    flag: options.context,
    clusters: options.clusters.map((config) => config.cluster),
    configured: options.configuredClusters,
    available: () => kubeconfigContexts(options),
  });
  // No kubeconfig at all is no error: the clusters are served without reading them.
  const found = hasKubeconfig(options);
  const clusters = new Map(
    options.clusters.map((config) => [
      config.cluster,
      found ? requiredCluster(options, contexts.get(config.cluster)) : undefined,
    ]),
  );
  // A cluster whose API server does not answer is refused now (3), not at every binding.
  for (const cluster of clusters.values()) if (cluster) await checkClusterAnswers(cluster);
  // A configured Service range the cluster does not have is refused now (2), naming both.
  const cidrStart = await checkServiceCidrs(options.clusters, clusters);
  // No kubeconfig to be found: the environment refused (3), as for the CLI's passes.
  if (options.passes && [...clusters.values()].some((cluster) => cluster === undefined)) {
    throw new EnvironmentError(
      '--passes needs a cluster: pass --kubeconfig PATH, set KUBECONFIG, or create ~/.kube/config',
    );
  }
  // One EC2 client and instance-type cache for every cluster's passes.
  const account = sdkEc2Account(options.region);
  // A pass that calls AWS needs a Region: without one it could only fail every interval.
  const aws = options.passes ? await awsRegionFor(options.clusters, account) : false;
  // A DynamoDB Local that ends under the server is said so and started again; given up on, the
  // server ends (3) rather than answer 503 for ever.
  let storeFailed: (error: Error) => void = () => {};
  const failed = new Promise<Error>((done) => {
    storeFailed = done;
  });
  const store = await openStore(options, {
    share: true,
    progress: (line) => log.info(line),
    watch: {
      lost: (line) => log.error(line),
      restarted: (line) => log.info(line),
      failed: (error) => {
        log.error(`${error.message}: berth stops`);
        storeFailed(error);
      },
    },
  });
  // What the passes recorded, read from the table for every cluster at once.
  const capacity = capacityReader(
    options.clusters,
    new DynamoCapacityLedger({ client: store.client, tableName: store.tableName }),
  );
  const served = options.clusters.map((config) =>
    serveCluster(
      options,
      config,
      clusters.get(config.cluster),
      store,
      account,
      log,
      cidrStart.readings.get(config.cluster),
      aws,
      capacity,
    ),
  );
  // Every cluster is assembled up front (its timers start later), so the set only looks it up.
  const byName = new Map(served.map((one) => [one.config.cluster, one.handle]));
  const handlers = new ClusterSet(options.clusters, ({ cluster }) => {
    const handle = byName.get(cluster);
    if (!handle) throw new Error(`cluster ${cluster} was not assembled`);
    return handle;
  });
  const closeClusters = async () => {
    await Promise.all(served.map((one) => one.close()));
    await store.close();
  };
  let listening: Listening;
  try {
    listening = await listen(options, served, handlers, log, cidrStart, capacity);
  } catch (error) {
    // Nothing is served: the clusters and the store (DynamoDB Local, if this process started it)
    // go down with the command instead of keeping it alive.
    await closeClusters();
    throw error;
  }
  const { server, tls } = listening;
  return {
    url: server.url,
    served: served.map(({ config, cluster, passes, settles }) => ({
      config,
      cluster,
      passes,
      settles,
      url: served.length === 1 ? server.url : `${server.url}${clusterPathPrefix(config.cluster)}`,
    })),
    caPath: tls?.caPath,
    store: { where: store.where, tableName: store.tableName, place: store.place },
    failed,
    startTimers() {
      const stops = served.map((one) => one.startTimers());
      return async () => {
        await Promise.all(stops.map((stop) => stop()));
      };
    },
    async close() {
      await server.close();
      await closeClusters();
    },
  };
}

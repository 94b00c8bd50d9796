/**
 * Composition for the admission function alone. It is kept apart from ./lambda.ts, whose passes
 * need `@kubernetes/client-node`: the webhook only reads a pod and a node, so it reaches the
 * cluster through the small HTTPS reader and its bundle carries no Kubernetes client (cold start
 * and bundle size). Clients are created once per container, at the handler's module scope, and
 * shared by every cluster served; each cluster has its own runtime, path secret and queue tag.
 * Every cluster's secret is read during INIT, so a cold start's first review waits for none.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EKSClient } from '@aws-sdk/client-eks';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { AdmissionDecision } from '../admission/decision.js';
import { ClusterSet } from '../clusters/cluster-set.js';
import { clusterRoutes, type HttpHandler } from '../clusters/http-routes.js';
import { ConfigError } from '../config/errors.js';
import { lambdaSettings } from '../config/load.js';
import type { BerthConfig } from '../config/schema.js';
import { hasFronts } from '../fronts/front-spec.js';
import { createHttpApi } from '../http/api.js';
import type { HttpFault } from '../http/exchange.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { EksCredentials, SdkEksClusterLookup } from '../k8s/eks-credentials.js';
import { HttpsClusterReader } from '../k8s/https-node-reader.js';
import { metricsText } from '../metrics/openmetrics.js';
import { metricsReading } from '../metrics/reading.js';
import type { GateLog } from '../services/cidr-gate.js';
import { QueueSettler, taggedWithCluster } from '../settle/settler.js';
import type { SettleQueue, SettleTask } from '../settle/task.js';
import { dynamoClient } from '../store/client.js';
import { ownValueOf } from '../vocabulary/opaque.js';
import { clusterCapacityReader } from './capacity.js';
import { type FrontsAccount, frontsWiring, lambdaFrontQueue, sdkFrontsAccount } from './fronts.js';
import { lambdaSettleQueue } from './lambda-settle.js';
import { type BerthRuntime, createRuntime, type RuntimeDeps } from './runtime.js';
import { lambdaScaleAsks } from './scale-ask.js';

/** What the admission function hears besides its answers. */
export interface AdmissionObservers {
  /** A settle task the queue refused (the repair pass finishes it). */
  readonly onSettleLost: (task: SettleTask, error: unknown) => void;
  /** Every admission decision. */
  readonly onDecision: (decision: AdmissionDecision) => void;
  /** Hears a request answered 503 because the table or the Kubernetes API did not answer. */
  readonly onUnavailable?: (fault: HttpFault) => void;
  /** The cluster a request is for, before it is served (the metrics dimension, the log key). */
  readonly onCluster: (cluster: string) => void;
  /** What the cluster's ServiceCIDRs changed in the ranges Services draw from. */
  readonly serviceCidrs?: GateLog;
  /** What needs an operator in the public fronts (a load balancer of the pool gone). */
  readonly fronts?: Pick<GateLog, 'warn'>;
  /** A scale-up trigger's count, claim or ask that failed (the scheduled pass still comes). */
  readonly onScaleTriggerFailed?: (error: unknown) => void;
}

/** What one cluster's admission API is built from: on Lambda, and in the cost meter. */
export interface ClusterAdmissionDeps {
  readonly config: BerthConfig;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  /** The binding webhook's pod and node reads, and the ServiceCIDRs read before Service writes. */
  readonly reader: Pick<ClusterApi, 'getPod' | 'getNode' | 'listPods' | 'listServices'> &
    Required<Pick<ClusterApi, 'listServiceCidrs'>>;
  /** Where a Service's values that wait for the apiserver's commit are queued. */
  readonly queue: SettleQueue;
  readonly observers: Omit<AdmissionObservers, 'onCluster'>;
  /** Public fronts of the pod webhooks, when the config has any (./fronts.ts). */
  readonly fronts?: RuntimeDeps['fronts'];
  /** The host's clock and randomness by default; the cost meter's run on its simulated day. */
  readonly now?: () => number;
  readonly random?: () => number;
  /** Counts the capacity units the table stores use, for the cost meter. */
  readonly meter?: RuntimeDeps['meter'];
  /** How a scale-up pass is asked for when admissions exhaust the slack (./scale-ask.ts). */
  readonly scaleTrigger?: RuntimeDeps['scaleTrigger'];
}

/** One cluster's admission as the admission function wires it: its runtime, and its HTTP API. */
export function clusterAdmission(deps: ClusterAdmissionDeps): {
  readonly runtime: BerthRuntime;
  readonly api: (pathSecret: string) => HttpHandler;
} {
  const { config, observers } = deps;
  const now = deps.now ?? Date.now;
  const capacity = clusterCapacityReader({
    config,
    dynamo: deps.dynamo,
    tableName: deps.tableName,
    now,
    ...(deps.meter ? { meter: deps.meter } : {}),
  });
  const runtime = createRuntime({
    config,
    dynamo: deps.dynamo,
    tableName: deps.tableName,
    clusterApi: deps.reader,
    ...(deps.fronts ? { fronts: deps.fronts } : {}),
    // The cluster's ServiceCIDRs, read at most once a minute before a Service write.
    serviceCidrSource: deps.reader,
    ...(observers.serviceCidrs ? { log: observers.serviceCidrs } : {}),
    settler: () => new QueueSettler(deps.queue, config.settle.delaySeconds, observers.onSettleLost),
    now,
    ...(deps.random ? { random: deps.random } : {}),
    meter: deps.meter,
    ...(deps.scaleTrigger ? { scaleTrigger: deps.scaleTrigger } : {}),
  });
  return {
    runtime,
    api: (pathSecret) =>
      createHttpApi({
        admission: runtime.admission,
        healthy: () => runtime.healthy(),
        status: () => runtime.status(),
        // Behind the same secret path as the webhook: `/metrics/<secret>`, with the cluster's
        // capacity view (one more item read a scrape).
        metrics: async (format) =>
          metricsText(format, [await metricsReading(runtime, { capacity })], now()),
        pathSecret,
        onDecision: observers.onDecision,
        storeName: `DynamoDB table ${deps.tableName}`,
        ...(observers.onUnavailable ? { onUnavailable: observers.onUnavailable } : {}),
      }),
  };
}

/**
 * A cluster's webhook path secret, read from Secrets Manager and kept for the container's life.
 * Each cluster's own: one unreadable secret fails only its cluster's requests (HTTP 500, the
 * apiserver applies the failurePolicy), never another's, nor the container's INIT.
 */
async function readSecret(client: SecretsManagerClient, arn: string): Promise<string> {
  const out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
  if (!out.SecretString) throw new Error(`secret ${arn} has no string value`);
  return out.SecretString;
}

/** How long INIT waits for the clusters' secrets before the function takes requests. */
const INIT_SECRET_WAIT_MS = 2_000;

/** Resolves after `ms`, holding nothing open meanwhile. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** An API whose set-up has begun, and when that first attempt is over (never rejected). */
interface PreparedApi {
  readonly handler: HttpHandler;
  readonly settled: Promise<void>;
}

/**
 * An API whose set-up starts now rather than at its first request; a failed set-up is tried
 * again at the next request.
 */
function prepared(build: () => Promise<HttpHandler>): PreparedApi {
  let api: Promise<HttpHandler> | undefined;
  const attempt = () => {
    api = build().catch((error: unknown) => {
      api = undefined;
      throw error;
    });
    return api;
  };
  const first = attempt();
  return {
    handler: async (request) => (await (api ?? attempt()))(request),
    // Its failure is the first request's to report, not INIT's.
    settled: first.then(
      () => undefined,
      () => undefined,
    ),
  };
}

/**
 * The admission function's HTTP API for every cluster it serves, from the Lambda environment:
 * `/admission/<secret>` for a single cluster, `/clusters/<name>/admission/<secret>` for each of
 * several. Values a Service gives back go to the settle queue, tagged with their cluster.
 */
export async function lambdaAdmissionApi(observers: AdmissionObservers): Promise<HttpHandler> {
  const settings = lambdaSettings();
  // Every served cluster must have a secret: a cluster without would answer its path to anyone.
  const secretArnOf = (cluster: string) => ownValueOf(settings.webhookSecretArns, cluster);
  const missing = settings.configs.filter(({ cluster }) => !secretArnOf(cluster));
  if (missing.length > 0) {
    throw new ConfigError(
      missing.map(({ cluster }) => `BERTH_WEBHOOK_SECRETS: no secret for cluster ${cluster}`),
    );
  }
  const secretsManager = new SecretsManagerClient({ region: settings.region });
  const queue = lambdaSettleQueue(settings);
  // A single-cluster stack's tasks name no cluster, as before it could serve several (a settle
  // function of the previous version still reads them during a deploy).
  const several = settings.configs.length > 1;
  const dynamo = dynamoClient({ region: settings.region });
  const eks = new EKSClient({ region: settings.region });
  // Scale-up passes are asked of the scale function, with one client for every cluster.
  const scaleAsk = lambdaScaleAsks(settings);
  // One ELBv2 and one Global Accelerator client for every cluster with fronts, made on first use.
  let account: FrontsAccount | undefined;
  const frontsAccount = () => {
    account ??= sdkFrontsAccount(settings.region);
    return account;
  };
  const apiFor = (config: BerthConfig): PreparedApi => {
    // DescribeCluster once, then a bearer token from the function's role, renewed before EKS
    // stops honouring it.
    const access = new EksCredentials({
      cluster: config.cluster,
      region: settings.region,
      // The EKS client's own provider chain: the function's role, refreshed by the SDK.
      credentials: eks.config.credentials,
      lookup: new SdkEksClusterLookup(eks),
      now: Date.now,
    });
    const fronts = hasFronts(config)
      ? frontsWiring(
          { config, dynamo, tableName: settings.tableName, region: settings.region },
          {
            account: frontsAccount(),
            queue: lambdaFrontQueue(settings),
            ...(observers.fronts ? { log: observers.fronts } : {}),
          },
        )
      : undefined;
    const { api } = clusterAdmission({
      config,
      dynamo,
      tableName: settings.tableName,
      reader: new HttpsClusterReader({ access }),
      queue: several ? taggedWithCluster(queue, config.cluster) : queue,
      observers,
      ...(fronts ? { fronts } : {}),
      ...(scaleAsk
        ? {
            scaleTrigger: {
              ask: scaleAsk(several ? config.cluster : undefined),
              failed: (error: unknown) => observers.onScaleTriggerFailed?.(error),
            },
          }
        : {}),
    });
    const secretArn = secretArnOf(config.cluster) as string;
    return prepared(async () => api(await readSecret(secretsManager, secretArn)));
  };
  const apis = new ClusterSet(settings.configs, apiFor);
  // Every cluster is set up now, its secret read concurrently with the others'. INIT waits a
  // bounded time for them: a read that hangs (no route to Secrets Manager) goes on, and its
  // cluster's first request waits for it, or for the read that follows its failure.
  const readsDone = Promise.all(apis.names.map((name) => apis.get(name).value.settled));
  await Promise.race([readsDone, delay(INIT_SECRET_WAIT_MS)]);
  return clusterRoutes(
    apis.map((api) => api.handler),
    { unknown: 'opaque', onCluster: observers.onCluster },
  );
}

/** The commands of `berth`, each a function of the parsed command line to an exit status. */

import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { formatDecision } from '../shared/admission/decision.js';
import { nodeIpFault } from '../shared/app/eni-pass.js';
import type { PassContext } from '../shared/app/pass-context.js';
import { createPasses, type Passes } from '../shared/app/passes.js';
import { type BerthRuntime, createRuntime, type StatusReport } from '../shared/app/runtime.js';
import { settleRunner } from '../shared/app/settle.js';
import { InProcessRefills } from '../shared/eni/refill.js';
import { createHttpApi, type HttpRequest, type HttpResponse } from '../shared/http/api.js';
import { ClientNodeClusterApi } from '../shared/k8s/client-node-cluster-api.js';
import type { ClusterApi } from '../shared/k8s/cluster-api.js';
import { kubeconfigFiles, loadLocalKubeConfig } from '../shared/k8s/kubeconfig.js';
import { startServer } from '../shared/local/server.js';
import { openStore, type StoreTarget } from '../shared/local/store-target.js';
import { startPassTimers } from '../shared/local/timers.js';
import { ensureLocalTls } from '../shared/local/tls.js';
import { RepairIncompleteError } from '../shared/repair/errors.js';
import { InProcessSettleQueue } from '../shared/settle/in-process-queue.js';
import { QueueSettler } from '../shared/settle/settler.js';
import type { Holding } from '../shared/status/holders.js';
import { clusterViewReader } from '../shared/ui/cluster-view.js';
import { WEB_VIEW_PAGE } from '../shared/ui/page.js';
import { forgetClusterCommand } from './forget-cluster.js';
import { type CliOptions, UsageError } from './main.js';
import { manifestsCommand } from './manifests.js';
import { type ServeLog, serveLog } from './serve-log.js';
import { simCommand } from './sim.js';

/** One command. */
export type Command = (options: CliOptions) => Promise<number>;

/** The cluster as kubectl would find it: `--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`. */
interface LocalCluster {
  readonly api: ClusterApi;
  readonly context: string;
  readonly server: string;
}

function kubeconfigSource(options: CliOptions) {
  return {
    ...(options.kubeconfig ? { kubeconfigPath: options.kubeconfig } : {}),
    ...(options.kubeconfigEnv ? { kubeconfigEnv: options.kubeconfigEnv } : {}),
    ...(options.context ? { context: options.context } : {}),
  };
}

/** The cluster the passes need; a missing or unusable kubeconfig is an environment error. */
function requiredCluster(options: CliOptions): LocalCluster {
  const kubeConfig = loadLocalKubeConfig(kubeconfigSource(options));
  return {
    api: new ClientNodeClusterApi({ kubeConfig }),
    context: kubeConfig.getCurrentContext(),
    server: kubeConfig.getCurrentCluster()?.server ?? '?',
  };
}

/** The cluster `serve` reads, if kubectl would find one; none is no error for a local server. */
function optionalCluster(options: CliOptions): LocalCluster | undefined {
  const source = kubeconfigSource(options);
  if (!options.kubeconfig && kubeconfigFiles(source).length === 0) return undefined;
  return requiredCluster(options);
}

function runtimeOn(options: CliOptions, store: StoreTarget, clusterApi?: ClusterApi): BerthRuntime {
  return createRuntime({
    config: options.config,
    dynamo: store.client,
    tableName: store.tableName,
    ...(clusterApi ? { clusterApi, serviceLister: clusterApi } : {}),
  });
}

function passContext(options: CliOptions, store: StoreTarget, clusterApi: ClusterApi): PassContext {
  return {
    config: options.config,
    dynamo: store.client,
    tableName: store.tableName,
    clusterApi,
    ...(options.region ? { region: options.region } : {}),
  };
}

async function withRuntime<T>(
  options: CliOptions,
  run: (runtime: BerthRuntime) => Promise<T>,
  clusterApi?: ClusterApi,
) {
  const store = await openStore(options);
  try {
    return await run(runtimeOn(options, store, clusterApi));
  } finally {
    await store.close();
  }
}

const serve: Command = async (options) => {
  const cluster = optionalCluster(options);
  if (options.passes && !cluster) {
    throw new UsageError(
      '--passes needs a cluster: pass --kubeconfig PATH, set KUBECONFIG, or create ~/.kube/config',
    );
  }
  const clusterApi = cluster?.api;
  // With a cluster, the view draws its game-server nodes too, as berth sim's does.
  const readView = clusterApi
    ? clusterViewReader(clusterApi, options.config.scale, Date.now)
    : undefined;
  const webViewState = async () => ({
    ...(await runtime.uiState()),
    ...(readView ? { clusterView: await readView() } : {}),
  });
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const log = serveLog();
  const store = await openStore(options, { share: true, progress: (line) => log.info(line) });
  // With a cluster, values a Service gives back are freed once its stored object shows it.
  const settleQueue = clusterApi
    ? new InProcessSettleQueue(settleRunner(passContext(options, store, clusterApi)), {
        settled: (task, outcome) => {
          if (outcome.freed > 0 || outcome.kept > 0)
            log.info(`settle ${task.id}: freed ${outcome.freed}, held again ${outcome.kept}`);
        },
        failed: (task, error) =>
          log.warn(`settle ${task.id} failed, looking again shortly: ${(error as Error).message}`),
      })
    : undefined;
  const runtime = createRuntime({
    config: options.config,
    dynamo: store.client,
    tableName: store.tableName,
    ...(clusterApi ? { clusterApi, serviceLister: clusterApi } : {}),
    ...(settleQueue
      ? {
          settler: () =>
            new QueueSettler(settleQueue, options.config.settle.delaySeconds, (task, error) =>
              log.warn(
                `settle ${task.id} not queued (the repair pass finishes it): ${String(error)}`,
              ),
            ),
        }
      : {}),
  });
  const holder = `${hostname()}-${process.pid}`;
  // The passes change the cluster (cordon, delete nodes, EC2): only when asked for.
  const passes =
    clusterApi && options.passes
      ? createPasses(passContext(options, store, clusterApi))
      : undefined;
  // Background pool refills run in this process, beside the requests that ask for them.
  const refills = passes
    ? new InProcessRefills(
        (node) => passes.eni.refill(node),
        (node, error) =>
          log.error(`background refill of node ${node} failed: ${(error as Error).message}`),
      )
    : undefined;
  const tls = options.http
    ? undefined
    : await ensureLocalTls(
        join(resolve(options.dataDir), 'tls'),
        Date.now,
        [options.host, options.advertiseAddress].filter((name): name is string => !!name),
      );
  const server = await startServer({
    host: options.host,
    port: options.port,
    ...(tls ? { tls } : {}),
    handle: requestLogged(
      createHttpApi({
        admission: runtime.admission,
        healthy: () => runtime.healthy(),
        status: () => runtime.status(),
        ...(passes && refills ? { nodeIps: passes.eni.nodeIps(refills) } : {}),
        classify: nodeIpFault,
        onDecision: (decision) => log.info(`admission ${formatDecision(decision)}`),
        webView: { page: WEB_VIEW_PAGE, state: webViewState },
      }),
      log,
    ),
    onError: (error, request) => {
      log.error(
        `${request.method} ${request.path} failed: ${(error as Error).stack ?? String(error)}`,
      );
    },
  });
  // Listening for the stop signals before the banner: a supervisor may send one as soon as it
  // sees the server up, and an unhandled SIGTERM would skip the shutdown below.
  const stopped = new Promise<void>((done) => {
    process.once('SIGINT', () => done());
    process.once('SIGTERM', () => done());
  });
  out(`berth serving ${server.url} for cluster "${options.config.cluster}"`);
  out(`  admission webhook: POST ${server.url}/admission`);
  out(`  web view:          ${server.url}/ui`);
  if (tls) out(`  CA certificate:    ${tls.caPath}`);
  out(`  DynamoDB:          ${store.where} (table ${store.tableName})`);
  if (options.advertiseAddress)
    out(
      `  advertised as:     ${options.advertiseAddress} (in the certificate; berth manifests --local --advertise-address ${options.advertiseAddress})`,
    );
  out(
    cluster
      ? `  cluster:           context ${cluster.context}, server ${cluster.server} (read for bindings and settle)`
      : '  cluster:           none found (no --kubeconfig, KUBECONFIG or ~/.kube/config): bindings get no address',
  );
  out(
    passes
      ? '  passes:            repair, scale and ENI on timers (--passes): they change this cluster'
      : '  passes:            off (berth serve --passes runs them on timers)',
  );
  out(
    settleQueue
      ? `  settle:            values a Service gives back are freed once the cluster stores the change (first look after ${options.config.settle.delaySeconds} s)`
      : '  settle:            no cluster to read back: values a Service gives back are freed at admission',
  );
  const stopTimers = passes
    ? startPassTimers(
        [
          {
            name: 'repair',
            intervalSeconds: options.config.repair.intervalSeconds,
            run: () => passes.repair(holder),
          },
          {
            name: 'scale',
            intervalSeconds: options.config.scale.intervalSeconds,
            run: () => passes.scale(holder),
          },
          {
            name: 'eni',
            intervalSeconds: options.config.eni.intervalSeconds,
            run: () => passes.eni.pass(),
          },
        ],
        {
          result: (name, result) => log.info(`${name} pass: ${JSON.stringify(result)}`),
          failure: (name, error) => log.error(`${name} pass failed: ${(error as Error).message}`),
        },
      )
    : async () => {};
  await stopped;
  out('berth: shutting down');
  await stopTimers();
  await server.close();
  // Waiting looks are dropped: the values stay marked, and the repair pass finishes them.
  await settleQueue?.close();
  // No request can ask for another now; let the running ones finish before the store closes.
  await refills?.settled();
  await store.close();
  return 0;
};

/** Every request gets one log line: method, path (without a secret), status and time taken. */
function requestLogged(
  handle: (request: HttpRequest) => Promise<HttpResponse>,
  log: ServeLog,
): (request: HttpRequest) => Promise<HttpResponse> {
  return async (request) => {
    const started = performance.now();
    const response = await handle(request);
    const ms = Math.round((performance.now() - started) * 10) / 10;
    log.info(`${request.method} ${request.path} ${response.statusCode} ${ms} ms`);
    return response;
  };
}

/** Left-aligned columns, two spaces apart. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

const percent = (used: number, size: number) =>
  `${size === 0 ? '0.0' : ((100 * used) / size).toFixed(1)}%`;

function formatHoldings(query: string, holdings: readonly Holding[]): string {
  if (holdings.length === 0) return `nobody holds ${query}`;
  return table(
    ['VALUE', 'KIND', 'RANGE', 'HOLDER', 'STATE', 'ALLOCATION ID'],
    holdings.map((h) => [
      h.value,
      h.kind,
      h.range,
      h.holder.namespace
        ? `${h.holder.kind} ${h.holder.namespace}/${h.holder.name}`
        : `${h.holder.kind} ${h.holder.name}`,
      h.state,
      h.allocationId,
    ]),
  ).join('\n');
}

function formatStatus(report: StatusReport): string {
  // Host ports are use counts: what predicts Pending pods is how many pods share the busiest port.
  const ranges = table(
    ['RANGE', 'KIND', 'SIZE', 'USED', 'USE', 'PODS PER PORT'],
    report.ranges.map((r) => [
      r.name,
      r.kind,
      String(r.size),
      String(r.used),
      r.kind === 'hostPort' ? '' : percent(r.used, r.size),
      'minUse' in r ? `${r.minUse}-${r.maxUse}` : '',
    ]),
  );
  const pools =
    report.pools.length === 0
      ? ['no ENI pools']
      : table(
          ['NODE', 'INSTANCE', 'TYPE', 'ENIS', 'CAPACITY', 'ASSIGNED', 'IDLE', 'COOLING'],
          report.pools.map((p) => [
            p.node,
            p.instanceId,
            p.instanceType,
            String(p.enis),
            String(p.capacity),
            String(p.assigned),
            String(p.idle),
            String(p.cooling),
          ]),
        );
  return [`cluster ${report.cluster}`, ...ranges, '', ...pools].join('\n');
}

const status: Command = async (options) => {
  if (options.holder !== undefined) {
    const holder = options.holder;
    return withRuntime(
      options,
      async (runtime) => {
        const holdings = await runtime.holders(holder);
        process.stdout.write(
          `${options.json ? JSON.stringify(holdings, null, 2) : formatHoldings(holder, holdings)}\n`,
        );
        return 0;
      },
      // A holder whose Service wrote no owner record is named from the cluster, when there is one.
      optionalCluster(options)?.api,
    );
  }
  // A config with a section per cluster and no --cluster: every cluster, one after another.
  const store = await openStore(options);
  try {
    const reports = [];
    for (const config of options.clusters) {
      reports.push(await runtimeOn({ ...options, config }, store).status());
    }
    const text = options.json
      ? JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2)
      : reports.map(formatStatus).join('\n\n');
    process.stdout.write(`${text}\n`);
    return 0;
  } finally {
    await store.close();
  }
};

/** Runs a pass against the cluster kubectl would use; the passes need one. */
async function withPasses(
  options: CliOptions,
  run: (passes: Passes, holder: string) => Promise<number>,
) {
  if (!options.once)
    throw new UsageError(
      `${options.command} runs one pass: add --once (serve runs them on timers)`,
    );
  const clusterApi = requiredCluster(options).api;
  const store = await openStore(options);
  try {
    const passes = createPasses(passContext(options, store, clusterApi));
    return await run(passes, `${hostname()}-${process.pid}`);
  } finally {
    await store.close();
  }
}

const printJson = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

const scale: Command = (options) =>
  withPasses(options, async (passes, holder) => {
    const report = await passes.scale(holder, { dryRun: options.dryRun });
    printJson({ dryRun: report.dryRun, actions: report.actions });
    for (const note of report.notes) process.stderr.write(`note: ${JSON.stringify(note)}\n`);
    for (const failure of report.failures)
      process.stderr.write(`failed: ${JSON.stringify(failure)}\n`);
    if (report.leaseHeldBy)
      process.stderr.write(
        `skipped: another scale pass holds the lease (${report.leaseHeldBy.holder})\n`,
      );
    return report.failures.length > 0 ? 1 : 0;
  });

const repair: Command = (options) =>
  withPasses(options, async (passes, holder) => {
    try {
      const summary = await passes.repair(holder);
      const { findings, released, recorded, durationMs } = summary;
      printJson({ findings, released, recorded, durationMs });
      if (options.verbose) {
        const found = summary.notes.map((note) => [
          note.reason,
          note.object
            ? `${note.object.kind} ${note.object.namespace ?? ''}/${note.object.name}`
            : '',
          note.message,
        ]);
        process.stderr.write(`${table(['FINDING', 'OBJECT', 'MESSAGE'], found).join('\n')}\n\n`);
        const countdowns = summary.countdowns.map((c) => [
          c.key,
          c.holder,
          `${c.passes} of ${c.grace}`,
        ]);
        process.stderr.write(
          `${table(['SUSPECTED LEAK', 'HOLDER', 'PASSES SEEN'], countdowns).join('\n')}\n`,
        );
      }
      if (summary.skipped) process.stderr.write(`skipped: ${summary.skipped}\n`);
      return 0;
    } catch (error) {
      if (!(error instanceof RepairIncompleteError)) throw error;
      process.stderr.write(`berth repair: the pass could not complete: ${error.message}\n`);
      return 1;
    }
  });

const eni: Command = (options) =>
  withPasses(options, async (passes) => {
    const summary = await passes.eni.pass();
    printJson(summary);
    return summary.failures.length > 0 ? 1 : 0;
  });

/** Every command by name. */
export const commands: Readonly<Record<string, Command>> = {
  serve,
  sim: simCommand,
  status,
  scale,
  repair,
  eni,
  manifests: manifestsCommand,
  'forget-cluster': forgetClusterCommand,
};

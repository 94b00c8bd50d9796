/** The commands of `berth`, each a function of the parsed command line to an exit status. */

import { hostname } from 'node:os';
import { createPasses, type Passes } from '../shared/app/passes.js';
import { type BerthRuntime, createRuntime } from '../shared/app/runtime.js';
import { overlappingServiceCidrs } from '../shared/clusters/cluster-set.js';
import type { ClusterApi } from '../shared/k8s/cluster-api.js';
import { openStore, type StoreTarget } from '../shared/local/store-target.js';
import { RepairIncompleteError } from '../shared/repair/errors.js';
import { autoModeStatusLine } from '../shared/status/auto-mode.js';
import type { Holding } from '../shared/status/holders.js';
import type { StatusReport } from '../shared/status/report.js';
import { describeFailure, exitCodeOf, recordedFailureFix } from './errors.js';
import { forgetClusterCommand } from './forget-cluster.js';
import { frontsCommand } from './fronts.js';
import { optionalCluster, passContext, requiredCluster } from './local-cluster.js';
import { type CliOptions, UsageError } from './main.js';
import { manifestsCommand } from './manifests.js';
import { serve } from './serve.js';
import { refreshServiceCidrs, serviceCidrStatusLines } from './service-cidrs.js';
import { simCommand } from './sim.js';

/** One command. */
export type Command = (options: CliOptions) => Promise<number>;

function runtimeOn(options: CliOptions, store: StoreTarget, clusterApi?: ClusterApi): BerthRuntime {
  return createRuntime({
    config: options.config,
    dynamo: store.client,
    tableName: store.tableName,
    ...(clusterApi ? { clusterApi, serviceLister: clusterApi, nodeLister: clusterApi } : {}),
  });
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
    ['RANGE', 'KIND', 'SIZE', 'USED', 'USE', 'PODS PER PORT', 'LARGEST FREE BLOCK'],
    report.ranges.map((r) => [
      r.name,
      r.kind,
      // Past 2^53 (an IPv6 /64) the size is not exact, and a share of it says nothing: such a
      // range shows how many blocks of 32 its values spread over instead.
      Number.isSafeInteger(r.size) ? String(r.size) : r.size.toExponential(2),
      String(r.used),
      r.kind === 'hostPort'
        ? ''
        : 'blocks' in r && r.blocks !== undefined
          ? `${r.blocks} blocks`
          : percent(r.used, r.size),
      'minUse' in r ? `${r.minUse}-${r.maxUse}` : '',
      'largestFreeBlock' in r ? String(r.largestFreeBlock) : '',
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
  const autoMode = report.autoModeNodes ? [autoModeStatusLine(report.autoModeNodes)] : [];
  const cidrs = report.serviceCidrs ? ['', ...serviceCidrStatusLines(report.serviceCidrs)] : [];
  return [`cluster ${report.cluster}`, ...ranges, ...cidrs, '', ...pools, ...autoMode].join('\n');
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
    // One cluster's nodes, where the kubeconfig reaches it: status counts its Auto Mode nodes.
    const cluster = options.clusters.length === 1 ? optionalCluster(options)?.api : undefined;
    for (const config of options.clusters) {
      const runtime = runtimeOn({ ...options, config }, store, cluster);
      // The cluster's ServiceCIDRs: what berth allocates from, and what holds a terminating one.
      if (cluster) await refreshServiceCidrs(runtime.serviceCidrs, cluster);
      reports.push(await runtime.status());
    }
    // Across clusters: configured Service CIDRs that overlap (the fleet's /v1/status lists them too).
    const overlaps = overlappingServiceCidrs(
      options.clusters.map((config) => ({ cluster: config.cluster, cidrs: config.serviceCIDRs })),
    ).map((overlap) => `finding ${overlap.reason}: ${overlap.message}`);
    const text = options.json
      ? JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2)
      : [...reports.map(formatStatus), ...(overlaps.length > 0 ? [overlaps.join('\n')] : [])].join(
          '\n\n',
        );
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
    const passes = createPasses(passContext(options, options.config, store, clusterApi));
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
      process.stderr.write(
        `berth repair: the pass could not complete: ${describeFailure(error)}\n`,
      );
      // An API server or table that did not answer is the environment's refusal (3).
      return exitCodeOf(error) === 3 ? 3 : 1;
    }
  });

const eni: Command = (options) =>
  withPasses(options, async (passes) => {
    const summary = await passes.eni.pass();
    printJson(summary);
    if (summary.failures.length === 0) return 0;
    // Every EC2 call refused for want of a Region or credentials: the environment's (3), fixed so.
    const fixes = new Set(summary.failures.map(recordedFailureFix));
    if (fixes.has(undefined)) return 1;
    for (const fix of fixes) process.stderr.write(`berth eni: EC2 could not be reached: ${fix}\n`);
    return 3;
  });

/** Every command by name. */
export const commands: Readonly<Record<string, Command>> = {
  serve,
  sim: simCommand,
  status,
  scale,
  repair,
  eni,
  fronts: frontsCommand,
  manifests: manifestsCommand,
  'forget-cluster': forgetClusterCommand,
};

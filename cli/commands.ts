/** The commands of `berth`, each a function of the parsed command line to an exit status. */
import {
  localCapacity,
  localHolders,
  localStatus,
  withLocalPasses,
} from '../shared/app/local-commands.js';
import {
  describeFailure,
  exitCodeOf,
  passIncomplete,
  recordedFailureFix,
  UsageError,
} from '../shared/app/local-errors.js';
import type { Passes } from '../shared/app/passes.js';
import { forgetClusterCommand } from './forget-cluster.js';
import { frontsCommand } from './fronts.js';
import { manifestsCommand } from './manifests.js';
import type { CliOptions, Command } from './options.js';
import { serve } from './serve.js';
import { simCommand } from './sim.js';
import { formatCapacity, formatHoldings, formatStatus, table } from './status-text.js';

const status: Command = async (options) => {
  if (options.capacity) {
    const view = await localCapacity(options);
    process.stdout.write(
      `${options.json ? JSON.stringify(view, null, 2) : formatCapacity(view)}\n`,
    );
    return 0;
  }
  if (options.holder !== undefined) {
    const holdings = await localHolders(options, options.holder);
    process.stdout.write(
      `${options.json ? JSON.stringify(holdings, null, 2) : formatHoldings(options.holder, holdings)}\n`,
    );
    return 0;
  }
  const { reports, overlaps } = await localStatus(options);
  const findings = overlaps.map((overlap) => `finding ${overlap.reason}: ${overlap.message}`);
  const text = options.json
    ? JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2)
    : [...reports.map(formatStatus), ...(findings.length > 0 ? [findings.join('\n')] : [])].join(
        '\n\n',
      );
  process.stdout.write(`${text}\n`);
  return 0;
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
  return withLocalPasses(options, run);
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
      if (!passIncomplete(error)) throw error;
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

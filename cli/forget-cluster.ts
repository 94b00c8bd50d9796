/**
 * `berth forget-cluster NAME [--yes]`: takes one cluster out of a table shared by several. A dry
 * run first (the default) lists what the cluster owns, by kind; `--yes` deletes exactly that and
 * checks nothing is left. The other clusters' items, and what the clusters share (the account's
 * EC2 budget, subnet marks), are not touched.
 */
import { forgetCluster } from '../shared/app/local-commands.js';
import type { Command } from './options.js';

/** The command: the summary of what the cluster owns, and of what went with `--yes`. */
export const forgetClusterCommand: Command = async (options) => {
  const cluster = options.forget ?? '';
  const err = (line: string) => process.stderr.write(`${line}\n`);
  const { table, items, byKind, deleted, left } = await forgetCluster(
    options,
    cluster,
    options.yes,
    err,
  );
  if (left > 0) {
    err(
      `berth forget-cluster: ${left} items of ${cluster} appeared meanwhile: is it still running? Run again once it is stopped.`,
    );
    return 1;
  }
  const summary = { cluster, table, items, byKind, deleted, dryRun: !options.yes };
  if (options.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    const kinds = Object.entries(byKind)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, count]) => `  ${kind}: ${count}`);
    process.stdout.write(
      `${[
        `cluster ${cluster} owns ${items} items in ${table}${kinds.length ? ':' : ''}`,
        ...kinds,
        options.yes
          ? `deleted ${deleted}; the table holds nothing of ${cluster} now`
          : 'dry run: nothing deleted; run again with --yes to delete them',
      ].join('\n')}\n`,
    );
  }
  return 0;
};

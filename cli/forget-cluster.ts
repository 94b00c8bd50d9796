/**
 * `berth forget-cluster NAME [--yes]`: takes one cluster out of a table shared by several. A dry
 * run first (the default) lists what the cluster owns, by kind; `--yes` deletes exactly that and
 * checks nothing is left. The other clusters' items, and what the clusters share (the account's
 * EC2 budget, subnet marks), are not touched.
 */
import { CLUSTER_NAME } from '../shared/config/schema.js';
import { openStore } from '../shared/local/store-target.js';
import {
  clusterItems,
  deleteItems,
  type ItemKey,
  itemKind,
} from '../shared/store/cluster-items.js';
import type { Command } from './commands.js';
import { UsageError } from './errors.js';

export const forgetClusterCommand: Command = async (options) => {
  const cluster = options.forget ?? '';
  if (!CLUSTER_NAME.test(cluster)) {
    throw new UsageError(
      `forget-cluster: "${cluster}" is not a cluster name (a DNS label, as the config's "cluster")`,
    );
  }
  const err = (line: string) => process.stderr.write(`${line}\n`);
  const store = await openStore(options, { progress: err });
  try {
    const keys: ItemKey[] = [];
    for await (const key of clusterItems(store.client, store.tableName, cluster, (scanned) =>
      err(`  scanned ${scanned} items of ${store.tableName}…`),
    )) {
      keys.push(key);
    }
    const byKind: Record<string, number> = {};
    for (const key of keys) byKind[itemKind(key.pk)] = (byKind[itemKind(key.pk)] ?? 0) + 1;
    let deleted = 0;
    if (options.yes && keys.length > 0) {
      deleted = await deleteItems(store.client, store.tableName, keys, (done) =>
        err(`  deleted ${done} of ${keys.length}…`),
      );
      let left = 0;
      for await (const _ of clusterItems(store.client, store.tableName, cluster)) left++;
      if (left > 0) {
        err(
          `berth forget-cluster: ${left} items of ${cluster} appeared meanwhile: is it still running? Run again once it is stopped.`,
        );
        return 1;
      }
    }
    const summary = {
      cluster,
      table: store.tableName,
      items: keys.length,
      byKind,
      deleted,
      dryRun: !options.yes,
    };
    if (options.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    else {
      const kinds = Object.entries(byKind)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([kind, count]) => `  ${kind}: ${count}`);
      process.stdout.write(
        `${[
          `cluster ${cluster} owns ${keys.length} items in ${store.tableName}${kinds.length ? ':' : ''}`,
          ...kinds,
          options.yes
            ? `deleted ${deleted}; the table holds nothing of ${cluster} now`
            : 'dry run: nothing deleted; run again with --yes to delete them',
        ].join('\n')}\n`,
      );
    }
    return 0;
  } finally {
    await store.close();
  }
};

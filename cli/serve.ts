/**
 * `berth serve`: the local server (shared/app/local-server.ts builds it), its banner, and its
 * life until SIGINT or SIGTERM.
 */
import { type ServedCluster, startLocalServer } from '../shared/app/local-server.js';
import { serveLog } from '../shared/app/serve-log.js';
import type { Command } from './options.js';

/**
 * The passes line: those that run on timers, then each one off and why; every one off without
 * `--passes`.
 */
function passesText(passes: ServedCluster['passes']): string {
  if (passes === undefined) return 'off (berth serve --passes runs them on timers)';
  const running = passes.filter((pass) => pass.off === undefined).map((pass) => pass.name);
  const off = passes
    .filter((pass) => pass.off !== undefined)
    .map((pass) => `${pass.name} off (${pass.off})`);
  const runs =
    running.length === 0
      ? 'none on timers (--passes)'
      : `${listed(running)} on timers (--passes): they change this cluster`;
  return [runs, ...off].join('; ');
}

/** "a", "a and b", "a, b and c". */
function listed(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/** The banner lines of one cluster; `base` is where its routes are. */
function describeCluster(served: ServedCluster, base: string): string[] {
  const { cluster, config } = served;
  return [
    `  admission webhook: POST ${base}/admission`,
    `  web view:          ${base}/ui`,
    cluster
      ? `  cluster:           context ${cluster.context}, server ${cluster.server} (read for bindings and settle)`
      : '  cluster:           none found (no --kubeconfig, KUBECONFIG or ~/.kube/config): bindings get no address',
    `  passes:            ${passesText(served.passes)}`,
    served.settles
      ? `  settle:            values a Service gives back are freed once the cluster stores the change (first look after ${config.settle.delaySeconds} s)`
      : '  settle:            no cluster to read back: values a Service gives back are freed at admission',
  ];
}

/** Runs the local server until SIGINT or SIGTERM. */
export const serve: Command = async (options) => {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const local = await startLocalServer(options, serveLog());
  // Listening for the stop signals before the banner: a supervisor may send one as soon as it
  // sees the server up, and an unhandled SIGTERM would skip the shutdown below.
  const stopped = new Promise<void>((done) => {
    process.once('SIGINT', () => done());
    process.once('SIGTERM', () => done());
  });
  const names = local.served.map((one) => `"${one.config.cluster}"`);
  if (local.served.length === 1) {
    const [one] = local.served as [ServedCluster & { url: string }];
    out(`berth serving ${local.url} for cluster ${names[0]}`);
    for (const line of describeCluster(one, one.url)) out(line);
  } else {
    out(`berth serving ${local.url} for clusters ${names.join(', ')}`);
    for (const one of local.served) {
      out(`cluster "${one.config.cluster}":`);
      for (const line of describeCluster(one, one.url)) out(line);
    }
  }
  if (local.caPath) out(`  CA certificate:    ${local.caPath}`);
  out(`  DynamoDB:          ${local.store.where} (table ${local.store.tableName})`);
  if (options.advertiseAddress)
    out(
      `  advertised as:     ${options.advertiseAddress} (in the certificate; berth manifests --local --advertise-address ${options.advertiseAddress})`,
    );
  const stopTimers = local.startTimers();
  const failure = await Promise.race([stopped.then(() => undefined), local.failed]);
  out(`berth: shutting down${failure ? ': the store is gone' : ''}`);
  await stopTimers();
  await local.close();
  // The store would not start again: the environment's refusal (3), said in one line.
  if (failure) throw failure;
  return 0;
};

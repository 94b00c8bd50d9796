/**
 * A node staged in Linux network namespaces on this machine, for berth-cni's e2e script and its
 * benchmark: a node namespace whose links stand in for the node's berth ENIs (each with the MAC
 * address and primary address the EC2 fake gave the ENI), a "VPC" namespace behind them where the
 * subnet's router lives (10.0.0.1 on a bridge), and one namespace per pod, which Debian's `ptp`
 * plugin wires to the node. A driver runs inside the node namespace (`ip netns exec`), so
 * berth's node IP API on its loopback, the plugins and the node's routing all share it.
 *
 * Every namespace a run makes starts with the run's prefix and is removed again, even when the
 * run is interrupted; a later run first removes what a killed one left. Needs root, iproute2
 * and `containernetworking-plugins` (Debian puts the plugins in /usr/lib/cni).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where Debian (`containernetworking-plugins`) and the CNI default put the reference plugins. */
const PLUGIN_DIRS = ['/usr/lib/cni', '/opt/cni/bin'];

/** One `ip` invocation; its stdout. */
export async function ip(...args: string[]): Promise<string> {
  return (await run('ip', args)).stdout;
}

/** One `ip -j` invocation, parsed. */
export async function ipJson<T>(...args: string[]): Promise<T[]> {
  const out = (await ip('-j', ...args)).trim();
  return out ? (JSON.parse(out) as T[]) : [];
}

/** The names of a staged node's namespaces, all under one prefix. */
export interface StageNames {
  readonly prefix: string;
  readonly node: string;
  readonly vpc: string;
  /** The namespace of pod `name`; the pod is named as its namespace. */
  pod(name: string): string;
}

/** The namespaces of the stage under `prefix`. */
export function stageNames(prefix: string): StageNames {
  return {
    prefix,
    node: `${prefix}node`,
    vpc: `${prefix}vpc`,
    pod: (name) => `${prefix}pod-${name}`,
  };
}

/** What a run has, outside the node namespace, while its stage stands. */
export interface OutsideStage {
  readonly names: StageNames;
  /** A directory of the run's own, removed with the stage. */
  readonly work: string;
  /** Where the reference plugins the run asked for are. */
  readonly pluginDir: string;
  /** Runs the TypeScript module `driver` with `args` inside the node namespace; its exit code. */
  inside(driver: string, args: readonly string[]): Promise<number>;
}

/** What a staged run is and needs. */
export interface StageOptions {
  readonly prefix: string;
  /** Who speaks in messages (`e2e:cni`). */
  readonly label: string;
  /** The reference plugins the run needs, by file name (`ptp`, `host-local`). */
  readonly plugins: readonly string[];
}

async function namespacesOf(prefix: string): Promise<string[]> {
  const out = await ip('netns', 'list').catch(() => '');
  return out
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith(prefix));
}

/** Removes every namespace under `prefix` (their links go with them). */
async function removeNamespaces(prefix: string): Promise<void> {
  for (const name of await namespacesOf(prefix)) await ip('netns', 'del', name).catch(() => {});
}

function fail(label: string, message: string): never {
  process.stderr.write(`${label}: ${message}\n`);
  process.exit(2);
}

/**
 * Stages the node and the VPC behind it, calls `use`, and removes the stage whatever happens,
 * on SIGINT and SIGTERM too (exiting 130 then). Without root or the plugins it exits 2, saying
 * what is missing; it exits 2 as well should a namespace outlive the run.
 */
export async function withStagedNode<T>(
  options: StageOptions,
  use: (stage: OutsideStage) => Promise<T>,
): Promise<T> {
  const { label, prefix } = options;
  if (process.getuid?.() !== 0)
    fail(label, 'needs root (network namespaces); run it as root or in CI');
  const pluginDir = PLUGIN_DIRS.find((dir) =>
    options.plugins.every((plugin) => existsSync(join(dir, plugin))),
  );
  if (pluginDir === undefined) {
    fail(
      label,
      `no ${options.plugins.join(' and ')} in ${PLUGIN_DIRS.join(' or ')}: apt-get install containernetworking-plugins (puts them in /usr/lib/cni)`,
    );
  }
  const names = stageNames(prefix);
  await removeNamespaces(prefix); // what an interrupted earlier run may have left
  const work = await mkdtemp(join(tmpdir(), prefix));
  // The drivers running inside, each with its exit: an interrupted run waits for them (a few
  // seconds at most) before it removes the namespaces they still use.
  const children = new Map<ReturnType<typeof spawn>, Promise<number>>();
  const tearDown = async () => {
    await removeNamespaces(prefix);
    await rm(work, { recursive: true, force: true });
  };
  let interrupted = false;
  const stop = (signal: NodeJS.Signals) => {
    interrupted = true;
    for (const child of children.keys()) child.kill(signal);
    void Promise.race([Promise.all(children.values()), sleep(5_000)])
      .then(tearDown)
      .finally(() => process.exit(130));
  };
  const onInterrupt = () => stop('SIGINT');
  const onTerminate = () => stop('SIGTERM');
  process.once('SIGINT', onInterrupt);
  process.once('SIGTERM', onTerminate);
  try {
    for (const ns of [names.node, names.vpc]) {
      await ip('netns', 'add', ns);
      await ip('-n', ns, 'link', 'set', 'lo', 'up');
    }
    await ip('-n', names.vpc, 'link', 'add', 'router', 'type', 'bridge');
    await ip('-n', names.vpc, 'addr', 'add', '10.0.0.1/24', 'dev', 'router');
    await ip('-n', names.vpc, 'link', 'set', 'router', 'up');
    return await use({
      names,
      work,
      pluginDir,
      inside: (driver, args) => {
        const child = spawn(
          'ip',
          ['netns', 'exec', names.node, process.execPath, '--import', 'tsx', driver, ...args],
          { stdio: 'inherit' },
        );
        const exited = new Promise<number>((resolve) =>
          child.once('exit', (code) => {
            children.delete(child);
            resolve(code ?? 1);
          }),
        );
        children.set(child, exited);
        return exited;
      },
    });
  } finally {
    process.off('SIGINT', onInterrupt);
    process.off('SIGTERM', onTerminate);
    await tearDown();
    if (interrupted) process.exit(130);
    const left = await namespacesOf(prefix);
    if (left.length > 0) fail(label, `namespaces left behind: ${left.join(', ')}`);
  }
}

/** One of the node's berth ENIs, as the EC2 fake has it. */
export interface StagedEni {
  readonly macAddress: string;
  readonly primaryIp: string;
  readonly deviceIndex: number;
}

/**
 * From inside the node namespace: the node's ENIs as links `eni0` (the primary), `eni1`, …
 * (each with its ENI's MAC and primary address), their peers on the VPC's router bridge.
 */
export async function linkEnis(names: StageNames, enis: readonly StagedEni[]): Promise<void> {
  // eniN for device index N, the primary ENI's link first, so the main table's subnet route (the
  // first of the links' equal ones) and its default route leave by it, as on an EC2 node.
  const ordered = [...enis].sort((a, b) => a.deviceIndex - b.deviceIndex);
  for (const eni of ordered) {
    const link = `eni${eni.deviceIndex}`;
    const peer = `vpc${eni.deviceIndex}`;
    await ip('link', 'add', link, 'type', 'veth', 'peer', 'name', peer, 'netns', names.vpc);
    await ip('link', 'set', link, 'address', eni.macAddress);
    await ip('addr', 'add', `${eni.primaryIp}/24`, 'dev', link);
    await ip('link', 'set', link, 'up');
    await ip('-n', names.vpc, 'link', 'set', peer, 'master', 'router', 'up');
  }
  if (ordered[0]?.deviceIndex === 0) {
    await ip('route', 'add', 'default', 'via', '10.0.0.1', 'dev', 'eni0');
  }
}

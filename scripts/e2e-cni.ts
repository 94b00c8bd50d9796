/**
 * `npm run e2e:cni`: berth-cni behind Debian's `ptp` plugin, in network namespaces this script
 * makes on this machine and removes again, even when interrupted.
 *
 * The stage: a node namespace whose links stand in for the node's berth ENIs (each with the MAC
 * address and primary address the EC2 fake gave the ENI), a "VPC" namespace behind them where the
 * subnet's router lives (10.0.0.1 on a bridge, routing each pod address to the ENI that owns
 * it, as the VPC does), and one namespace per pod. berth's node IP API runs in the node namespace
 * on its loopback, over the EC2 fake. Then:
 * 1. 50 pods are ADDed concurrently: 50 distinct addresses, each configured in its namespace,
 *    with the rules and ENI routes on the node, and a ping to the router leaves through the
 *    pod's own ENI (checked with `ip route get` and answered);
 * 2. CHECK passes for every pod;
 * 3. DEL of all leaves no address, rule, route or link behind, and every address free in berth;
 * 4. an ADD while berth is down fails with a CNI error and leaves nothing half-configured.
 * Needs root, iproute2 and `containernetworking-plugins` (`ptp` in /usr/lib/cni).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PREFIX = 'berth-e2e-';
const NODE_NS = `${PREFIX}node`;
const VPC_NS = `${PREFIX}vpc`;
const PODS = 50;
const PLUGIN_DIRS = ['/usr/lib/cni', '/opt/cni/bin'];

async function ip(...args: string[]): Promise<string> {
  return (await run('ip', args)).stdout;
}

async function namespaces(): Promise<string[]> {
  const out = await ip('netns', 'list').catch(() => '');
  return out
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith(PREFIX));
}

/** Removes every namespace this script makes (their links go with them). */
async function cleanUp(): Promise<void> {
  for (const name of await namespaces()) await ip('netns', 'del', name).catch(() => undefined);
}

function fail(message: string): never {
  process.stderr.write(`e2e:cni: ${message}\n`);
  process.exit(2);
}

async function outer(): Promise<void> {
  if (process.getuid?.() !== 0) fail('needs root (network namespaces); run it as root or in CI');
  const ptpDir = PLUGIN_DIRS.find((dir) => existsSync(join(dir, 'ptp')));
  if (!ptpDir) {
    fail('no ptp plugin: apt-get install containernetworking-plugins (puts it in /usr/lib/cni)');
  }
  await cleanUp(); // what an interrupted earlier run may have left
  const work = await mkdtemp(join(tmpdir(), 'berth-e2e-cni-'));
  let child: ReturnType<typeof spawn> | undefined;
  const stop = async (signal: NodeJS.Signals) => {
    child?.kill(signal);
    await cleanUp();
    await rm(work, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  let code = 1;
  try {
    await ip('netns', 'add', NODE_NS);
    await ip('netns', 'add', VPC_NS);
    await ip('-n', NODE_NS, 'link', 'set', 'lo', 'up');
    await ip('-n', VPC_NS, 'link', 'set', 'lo', 'up');
    await ip('-n', VPC_NS, 'link', 'add', 'router', 'type', 'bridge');
    await ip('-n', VPC_NS, 'addr', 'add', '10.0.0.1/24', 'dev', 'router');
    await ip('-n', VPC_NS, 'link', 'set', 'router', 'up');
    // The driver runs inside the node namespace: berth's API and the plugins share its loopback.
    const driver = fileURLToPath(import.meta.url);
    child = spawn(
      'ip',
      [
        'netns',
        'exec',
        NODE_NS,
        process.execPath,
        '--import',
        'tsx',
        driver,
        '--inside',
        ptpDir ?? '',
        work,
      ],
      { stdio: 'inherit' },
    );
    code = await new Promise<number>((resolve) => child?.once('exit', (c) => resolve(c ?? 1)));
  } finally {
    await cleanUp();
    await rm(work, { recursive: true, force: true });
  }
  const left = await namespaces();
  if (left.length > 0) fail(`namespaces left behind: ${left.join(', ')}`);
  process.exit(code);
}

if (process.argv[2] === '--inside') {
  const { inside } = await import('./e2e-cni-stage.js');
  process.exit(
    await inside(process.argv[3] ?? '', process.argv[4] ?? '', {
      prefix: PREFIX,
      vpc: VPC_NS,
      pods: PODS,
    }),
  );
} else {
  await outer();
}

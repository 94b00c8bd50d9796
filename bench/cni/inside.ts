/**
 * The inside of `npm run bench -- cni` (see `../cni.ts`), run in the staged node's namespace:
 * `inside.ts PLUGIN_DIR WORK PREFIX`. berth's node IP API listens on its loopback; the node
 * agent's own pass learns the node's set from it, and from then on every ADD and DEL is served
 * from that set on the node. Writes what it measured to `WORK/<MEASUREMENTS_FILE>` and exits 0,
 * or 1 when it could not measure.
 */
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { installPlugin } from '../../cni/build.js';
import { agentPass } from '../../cni/handout/agent.js';
import { mayHandOut } from '../../cni/handout/choice.js';
import { HandoutStore } from '../../cni/handout/store.js';
import { parseNetworkConfig } from '../../cni/netconf.js';
import { NodeIpClient } from '../../cni/node-ip-client.js';
import { forEachBounded } from '../../shared/concurrency/bounded.js';
import {
  addressOf,
  chainedConfig,
  cniEnv,
  type PluginRun,
  runPlugin,
} from '../../sim/cni-runtime.js';
import { NODE, startNodeIpServer } from '../../sim/node-ip-server.js';
import { ip, linkEnis, stageNames } from '../../sim/staged-node.js';
import {
  AT_ONCE,
  type CniMeasurements,
  MEASUREMENTS_FILE,
  ONE_AT_A_TIME,
  perKind,
  type TimedRun,
} from './targets.js';

/**
 * Rounds one at a time: each runs every kind once. 400, so that a p99 is the fourth slowest run
 * of its kind rather than the second: on a 2-core machine one stall of the other core moved the
 * 150-round p99 ratio between 1.6 and 2.1 from one run to the next.
 */
const ROUNDS = 400;
/**
 * Pods each berth-cni kind keeps while the rounds go on, so ADDs read a node holding about 100
 * (kubelet's default `maxPods` is 110), and DELs free one of them.
 */
const HELD = 50;
/** ADDs and DELs in flight in the concurrent phase, as kubelet starts several sandboxes. */
const CONCURRENCY = 8;
/** Pods of each kind in the concurrent phase. */
const AT_ONCE_PODS = 64;
/** Idle addresses berth gives the node (its /24 subnet holds about 245 besides the ENIs'). */
const ADDRESSES = 240;
/** Failures printed in full; the rest are counted. */
const SHOWN_FAILURES = 5;

const [pluginDir = '', work = '', prefix = ''] = process.argv.slice(2);
const names = stageNames(prefix);

/** A pod of the run: its namespace is named as it, its sandbox by its key. */
interface Pod {
  readonly namespace: string;
  readonly name: string;
  readonly containerId: string;
}
const podOf = (key: string): Pod => ({
  namespace: 'games',
  name: names.pod(key),
  containerId: `sandbox-${key}`,
});

/** How one kind of pod is wired: the plugin the runtime runs, and its configuration. */
interface Lane {
  readonly plugin: string;
  readonly config: Readonly<Record<string, unknown>>;
  /** ptp enters the pod's namespace; berth-cni alone, as ptp's IPAM call, does not. */
  readonly namespaced: boolean;
}

/** A pod added, with the result the runtime caches for its DEL. */
interface Added {
  readonly pod: Pod;
  readonly lane: Lane;
  readonly result: Record<string, unknown> | undefined;
}

let failures = 0;
function timed(
  series: TimedRun[],
  what: string,
  run: PluginRun,
  ok = run.code === 0,
  routed?: boolean,
): PluginRun {
  series.push({ ms: run.ms, ok, ...(routed === undefined ? {} : { routed }) });
  if (!ok && failures++ < SHOWN_FAILURES) {
    process.stderr.write(
      `  failed: ${what} (exit ${run.code}): ${(run.stdout.trim() || run.stderr.trim()).slice(0, 400)}\n`,
    );
  }
  return run;
}

async function measure(): Promise<CniMeasurements> {
  const berth = await installPlugin(join(work, 'bin'));
  const ptp = join(pluginDir, 'ptp');
  const server = await startNodeIpServer({ idle: ADDRESSES, instanceType: 'm5.24xlarge' });
  try {
    await linkEnis(names, server.enis());
    const dataDir = join(work, 'node');
    const config = chainedConfig({ endpoint: server.url, node: NODE, dataDir }, { ipMasq: false });
    // The reference floor of the chain: the same main plugin with the reference IPAM plugin.
    const reference = {
      cniVersion: '1.0.0',
      name: 'reference',
      type: 'ptp',
      ipMasq: false,
      ipam: {
        type: 'host-local',
        ranges: [[{ subnet: '10.200.0.0/16' }]],
        routes: [{ dst: '0.0.0.0/0' }],
        dataDir: join(work, 'host-local'),
      },
    };

    // The node agent's pass: the node's set, as the DaemonSet's agent writes it.
    const store = new HandoutStore(dataDir);
    const { ipam } = parseNetworkConfig(JSON.stringify(config));
    await agentPass(
      store,
      new NodeIpClient(ipam, AbortSignal.timeout(ipam.timeoutMs)),
      undefined,
      Date.now(),
    );
    const set = await store.readSet();
    const { use } = await store.snapshot();
    const free = set?.addresses.filter((a) => mayHandOut(a, use)).length ?? 0;
    const needed = Math.max(2 * (HELD + 1), 2 * AT_ONCE_PODS);
    if (free < needed)
      throw new Error(`the node's set has ${free} free addresses; the run needs ${needed}`);
    const requestsBefore = server.requests.length;

    const lanes = {
      add: { plugin: berth, config, namespaced: false },
      chainAdd: { plugin: ptp, config, namespaced: true },
      referenceAdd: { plugin: ptp, config: reference, namespaced: true },
    } as const satisfies Record<string, Lane>;
    const deleteOf = { add: 'del', chainAdd: 'chainDel', referenceAdd: 'referenceDel' } as const;
    type LaneName = keyof typeof lanes;
    const laneNames = Object.keys(lanes) as LaneName[];
    // What ptp gives its IPAM plugin is its own environment and stdin: it calls
    // `ipam.ExecAdd(conf.IPAM.Type, args.StdinData)` (containernetworking/plugins
    // plugins/main/ptp/ptp.go at v1.5.1), which execs the plugin found on CNI_PATH with ptp's
    // environment (containernetworking/cni pkg/invoke/delegate.go at v1.2.3). berth-cni alone is
    // run with exactly these.
    const env = (command: string, pod: Pod) =>
      cniEnv(command, pod, {
        CNI_PATH: `${dirname(berth)}:${pluginDir}`,
        BERTH_CNI_LOCK: join(work, 'berth-cni.lock'),
        BERTH_CNI_RELEASED: join(work, 'released'),
      });

    const add = async (lane: Lane, key: string, series: TimedRun[]): Promise<Added> => {
      const pod = podOf(key);
      // The runtime makes the sandbox's namespace before it calls the plugin: not timed.
      if (lane.namespaced) await ip('netns', 'add', pod.name);
      const run = await runPlugin(lane.plugin, env('ADD', pod), JSON.stringify(lane.config));
      const given = addressOf(run.json);
      // berth-cni routes the pod itself only for an address on a secondary ENI.
      const routed =
        lane.config === config
          ? (set?.addresses.find((a) => a.ip === given)?.deviceIndex ?? 0) > 0
          : undefined;
      timed(series, `ADD ${pod.name}`, run, run.code === 0 && Array.isArray(run.json?.ips), routed);
      return { pod, lane, result: run.json };
    };
    const del = async (added: Added, series: TimedRun[]): Promise<void> => {
      const { pod, lane } = added;
      const stdin = JSON.stringify({ ...lane.config, prevResult: added.result });
      timed(series, `DEL ${pod.name}`, await runPlugin(lane.plugin, env('DEL', pod), stdin));
      if (lane.namespaced) await ip('netns', 'del', pod.name).catch(() => undefined);
    };

    const one = perKind(ONE_AT_A_TIME, (): TimedRun[] => []);
    console.log(
      `one at a time: ${ROUNDS} rounds of every kind, order turning each round; ${HELD} pods held per lane`,
    );
    const held = perKind(lanes, (): Added[] => []);
    for (let round = 0; round < ROUNDS + HELD; round++) {
      const jobs: (() => Promise<unknown>)[] = [];
      if (round < ROUNDS) {
        jobs.push(async () =>
          timed(one.nodeStart, 'node -e 0', await runPlugin(process.execPath, {}, '', ['-e', '0'])),
        );
        jobs.push(async () =>
          timed(
            one.version,
            'VERSION',
            await runPlugin(berth, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}'),
          ),
        );
        for (const lane of laneNames) {
          jobs.push(async () =>
            held[lane].push(await add(lanes[lane], `one-${lane}-${round}`, one[lane])),
          );
        }
      }
      if (round >= HELD) {
        for (const lane of laneNames) {
          jobs.push(async () => {
            const oldest = held[lane].shift();
            if (oldest) await del(oldest, one[deleteOf[lane]]);
          });
        }
      }
      // Turned each round, so that no kind always runs first after the same neighbour.
      const turn = round % jobs.length;
      for (const job of [...jobs.slice(turn), ...jobs.slice(0, turn)]) await job();
    }

    console.log(`${CONCURRENCY} at a time: ${AT_ONCE_PODS} pods of each kind`);
    const many = perKind(AT_ONCE, (): TimedRun[] => []);
    const added: (Added & { readonly laneName: LaneName })[] = [];
    const starts = Array.from({ length: AT_ONCE_PODS }, (_, i) =>
      laneNames.map((lane) => ({ lane, key: `many-${lane}-${i}` })),
    ).flat();
    await forEachBounded(starts, CONCURRENCY, async ({ lane, key }) => {
      added.push({ ...(await add(lanes[lane], key, many[lane])), laneName: lane });
    });
    const holderOf = new Map<string, string[]>();
    for (const a of added) {
      if (a.lane.config !== config) continue;
      const at = addressOf(a.result);
      if (at === undefined) continue;
      holderOf.set(at, [...(holderOf.get(at) ?? []), a.pod.containerId]);
    }
    const leases = await store.leases();
    const concurrentAddresses = {
      added: [...holderOf.values()].reduce((n, holders) => n + holders.length, 0),
      distinct: holderOf.size,
      leases: leases.length,
      leasesOfTheirContainer: leases.filter(
        (l) => holderOf.get(l.ip)?.length === 1 && holderOf.get(l.ip)?.[0] === l.containerId,
      ).length,
    };
    await forEachBounded(added, CONCURRENCY, (a) => del(a, many[deleteOf[a.laneName]]));

    return {
      rounds: ROUNDS,
      held: HELD,
      concurrency: CONCURRENCY,
      oneAtATime: one,
      atOnce: many,
      concurrentAddresses,
      berthRequests: server.requests.length - requestsBefore,
      leasesLeft: (await store.leases()).length,
    };
  } finally {
    await server.close();
  }
}

try {
  await writeFile(join(work, MEASUREMENTS_FILE), JSON.stringify(await measure()));
  process.exit(0);
} catch (error) {
  process.stderr.write(`bench cni: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

/**
 * The inside of `npm run e2e:cni` (see `e2e-cni.ts`): runs in the node namespace, where berth's
 * node IP API listens on loopback and `ptp` calls berth-cni for each pod. Returns the exit code.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { installPlugin } from '../cni/build.js';
import { HandoutStore } from '../cni/handout/store.js';
import {
  addressOf,
  type ChainedConfig,
  chainedConfig,
  cniEnv,
  type PluginRun,
  runPlugin,
} from '../sim/cni-runtime.js';
import { NODE, type NodeIpServer, startNodeIpServer } from '../sim/node-ip-server.js';
import { ip, ipJson, linkEnis, type StageNames } from '../sim/staged-node.js';

/** Pods started from the node's set while berth is down. */
const NODE_SIDE_PODS = 20;

interface Stage {
  readonly names: StageNames;
  readonly pods: number;
}

/** `ptp` as the runtime runs it, with berth-cni as its IPAM; its stderr goes to ours. */
async function ptp(
  ptpDir: string,
  pluginDir: string,
  lock: string,
  command: string,
  pod: string,
  config: ChainedConfig,
): Promise<PluginRun> {
  const env = cniEnv(
    command,
    { namespace: 'games', name: pod, containerId: `sandbox-${pod}` },
    {
      CNI_PATH: `${pluginDir}:${ptpDir}`,
      BERTH_CNI_LOCK: lock,
      // The node's records of completed DELs, beside the lock in the stage's directory.
      BERTH_CNI_RELEASED: join(dirname(lock), 'released'),
    },
  );
  const ran = await runPlugin(join(ptpDir, 'ptp'), env, JSON.stringify(config));
  process.stderr.write(ran.stderr);
  return ran;
}

const problems: string[] = [];
function expect(ok: boolean, what: string): void {
  process.stdout.write(`  ${ok ? 'ok  ' : 'FAIL'} ${what}\n`);
  if (!ok) problems.push(what);
}

/**
 * Checks that the pods `podName(i)` hold `addresses[i]`: each on the pod's eth0 with its default
 * route, its rules on the node (none for one on the primary ENI), its traffic out through its own
 * ENI, and a ping to the subnet router answered from the first, second and last pod.
 */
async function checkWired(
  server: NodeIpServer,
  enis: ReturnType<NodeIpServer['enis']>,
  vpc: string,
  addresses: readonly string[],
  podName: (i: number) => string,
): Promise<void> {
  const state = await server.world.store.loadNode(NODE);
  const eniOf = new Map(state.ips.map((r) => [r.ip, r.eniId]));
  const byId = new Map(enis.map((eni) => [eni.eniId, eni]));
  console.log(`on ENIs: ${[...new Set(addresses.map((a) => eniOf.get(a)))].join(', ')}`);
  const rules = await ipJson<{ priority: number; src?: string; dst?: string; table?: string }>(
    '-4',
    'rule',
    'show',
  );
  let configured = 0;
  let routed = 0;
  for (const [i, address] of addresses.entries()) {
    const inPod = await ipJson<{ addr_info: { local: string }[] }>(
      '-n',
      podName(i),
      'addr',
      'show',
      'eth0',
    ).catch(() => []);
    const defaultRoute = await ipJson<{ dst: string; gateway?: string }>(
      '-n',
      podName(i),
      'route',
      'show',
      'default',
    ).catch(() => []);
    if (
      inPod[0]?.addr_info.some((a) => a.local === address) &&
      defaultRoute[0]?.gateway === '10.0.0.3'
    )
      configured++;
    const eni = byId.get(eniOf.get(address) ?? '');
    const link = eni && `eni${eni.deviceIndex}`;
    const table = String(1000 + (eni?.deviceIndex ?? -1));
    const own = (r: { src?: string; dst?: string }) => r.src === address || r.dst === address;
    // An address on the primary ENI leaves by the main table: no rule of its own.
    const hasRules =
      eni?.deviceIndex === 0
        ? !rules.some(own)
        : rules.some((r) => r.priority === 512 && r.dst === address && r.table === 'main') &&
          rules.some((r) => r.priority === 1536 && r.src === address && r.table === table);
    const hostVeth =
      (await ipJson<{ dev: string }>('route', 'get', address).catch(() => []))[0]?.dev ?? '';
    const egress = await ipJson<{ dev: string }>(
      'route',
      'get',
      '10.0.0.1',
      'from',
      address,
      'iif',
      hostVeth,
    ).catch(() => []);
    if (hasRules && egress[0]?.dev === link) routed++;
  }
  expect(
    configured === addresses.length,
    `every pod has its address on eth0 and a default route via 10.0.0.3 (the subnet's reserved fourth address) (${configured})`,
  );
  expect(
    routed === addresses.length,
    `every pod's rules are on the node (none for one on the primary ENI) and its traffic leaves through its own ENI (${routed})`,
  );
  // The VPC delivers each pod address to the ENI that owns it.
  for (const address of addresses) {
    const eni = byId.get(eniOf.get(address) ?? '');
    if (eni) await ip('-n', vpc, 'route', 'replace', `${address}/32`, 'via', eni.primaryIp);
  }
  const pinged = await Promise.all(
    [0, 1, addresses.length - 1].map((i) =>
      ip('netns', 'exec', podName(i), 'ping', '-c', '1', '-W', '2', '10.0.0.1').then(
        () => true,
        () => false,
      ),
    ),
  );
  expect(
    pinged.every(Boolean),
    'pods reach the subnet router through their ENI and get the answer',
  );
}

/**
 * Checks that no pod rule, ENI route, pod link on the node or interface in the namespaces `pods`
 * is left: what a DEL, or an ADD that failed, must leave.
 */
async function checkNothingLeft(
  enis: ReturnType<NodeIpServer['enis']>,
  pods: readonly string[],
): Promise<void> {
  const rules = await ipJson<{ priority: number }>('-4', 'rule', 'show');
  expect(
    !rules.some((r) => r.priority === 512 || r.priority === 1536),
    'no pod rule is left on the node',
  );
  const tables = await Promise.all(
    // A table with no route left does not exist any more, which is what is wanted.
    enis
      .filter((e) => e.deviceIndex > 0)
      .map((e) =>
        ipJson<unknown>('-4', 'route', 'show', 'table', String(1000 + e.deviceIndex)).catch(
          () => [],
        ),
      ),
  );
  expect(
    tables.every((t) => t.length === 0),
    'every ENI route table is empty again',
  );
  const veths = (await ipJson<{ ifname: string }>('link', 'show')).filter((l) =>
    l.ifname.startsWith('veth'),
  );
  expect(
    veths.length === 0,
    `no pod link is left on the node (${veths.map((l) => l.ifname).join(', ')})`,
  );
  const inPods = await Promise.all(
    pods.map((pod) => ipJson<unknown>('-n', pod, 'addr', 'show', 'eth0').catch(() => [])),
  );
  expect(
    inPods.every((a) => a.length === 0),
    'no pod namespace keeps an interface',
  );
}

/**
 * Runs the node agent (`berth-cni agent`, the DaemonSet's container) on `config` written as the
 * node's conflist, until `done` answers something or 30 s pass; answers what `done` last did.
 */
async function runAgentUntil<T>(
  agentPath: string,
  work: string,
  lock: string,
  config: ChainedConfig,
  done: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const conflist = join(work, '05-berth.conflist');
  // A conflist's plugin entries are the network configuration without its version and name.
  const { cniVersion, name, ...plugin } = config;
  await writeFile(conflist, JSON.stringify({ cniVersion, name, plugins: [plugin] }));
  const agent = spawn(agentPath, ['agent'], {
    env: {
      ...process.env,
      BERTH_CNI_CONFIG: conflist,
      BERTH_CNI_LOCK: lock,
      BERTH_CNI_AGENT_PASS_MS: '200',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    for (const until = Date.now() + 30_000; Date.now() < until; ) {
      const answer = await done().catch(() => undefined);
      if (answer !== undefined) return answer;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return undefined;
  } finally {
    agent.kill();
  }
}

/** Runs the stage; 0 when every check held. */
export async function inside(ptpDir: string, work: string, stage: Stage): Promise<number> {
  const pluginDir = join(work, 'bin');
  const plugin = await installPlugin(pluginDir);
  const lock = join(work, 'berth-cni.lock');
  const server = await startNodeIpServer({ idle: stage.pods, instanceType: 'c5.4xlarge' });
  const podName = (i: number) => stage.names.pod(String(i));
  const vpc = stage.names.vpc;
  try {
    const enis = server.enis();
    await linkEnis(stage.names, enis);
    const config = chainedConfig(
      { endpoint: server.url, node: NODE, timeoutSeconds: 110 },
      { ipMasq: false },
    );
    console.log(`berth: ${enis.length} ENIs on ${NODE}, node IP API at ${server.url}`);

    const cni = (command: string, i: number, conf: ChainedConfig) =>
      ptp(ptpDir, pluginDir, lock, command, podName(i), conf);
    /** Every pod `i` of `pods` ADDed at once under `conf`: their runs and addresses. */
    const addAll = async (pods: number, conf: ChainedConfig) => {
      const started = performance.now();
      const runs = await Promise.all(Array.from({ length: pods }, (_, i) => cni('ADD', i, conf)));
      console.log(`${pods} concurrent ADDs in ${(performance.now() - started).toFixed(0)} ms`);
      expect(
        runs.every((r) => r.code === 0),
        `every ADD succeeded (${runs
          .filter((r) => r.code !== 0)
          .map((r) => r.stdout)
          .join(' ')})`,
      );
      const addresses = runs.map((r) => addressOf(r.json) ?? '');
      expect(new Set(addresses).size === pods, `${pods} distinct addresses`);
      return { runs, addresses };
    };
    const delAll = async (runs: readonly PluginRun[], conf: ChainedConfig) => {
      const deleted = await Promise.all(
        runs.map((r, i) => cni('DEL', i, { ...conf, prevResult: r.json })),
      );
      expect(
        deleted.every((r) => r.code === 0),
        'every DEL succeeded',
      );
      await checkNothingLeft(
        enis,
        Array.from({ length: runs.length }, (_, i) => podName(i)),
      );
    };

    // 1. Concurrent ADDs, each asking berth.
    for (let i = 0; i < stage.pods; i++) await ip('netns', 'add', podName(i));
    const added = await addAll(stage.pods, config);
    await checkWired(server, enis, vpc, added.addresses, podName);

    // 2. CHECK.
    const checked = await Promise.all(
      added.runs.map((r, i) => cni('CHECK', i, { ...config, prevResult: r.json })),
    );
    expect(
      checked.every((r) => r.code === 0),
      `CHECK passed for every pod (${checked
        .filter((r) => r.code !== 0)
        .map((r) => r.stdout)
        .join(' ')})`,
    );

    // 3. DEL of all.
    await delAll(added.runs, config);
    const stateAfter = await server.world.store.loadNode(NODE);
    expect(!stateAfter.ips.some((r) => r.state === 'assigned'), 'every address is free in berth');

    // 4. Handed out on the node: the node agent, as the DaemonSet runs it, learns the node's set;
    // then berth goes down, and pods start and stop from the set alone.
    const dataDir = join(work, 'node');
    const onNode = { ...config, ipam: { ...config.ipam, dataDir } };
    const handout = new HandoutStore(dataDir);
    // Until berth records that the node hands its pool out (the agent's first report did it).
    const handedOut = async () => (await server.world.store.getPool(NODE))?.handout === 'node';
    const learned = await runAgentUntil(plugin, work, lock, onNode, async () =>
      (await handedOut()) ? handout.readSet() : undefined,
    );
    expect(learned !== undefined, "the node agent learned the node's set from berth");
    const set = new Set(learned?.addresses.map((a) => a.ip));
    console.log(`the node's set: ${set.size} addresses; berth is stopped`);
    await server.close();
    const onNodePods = Math.min(NODE_SIDE_PODS, stage.pods);
    const fromSet = await addAll(onNodePods, onNode);
    expect(
      fromSet.addresses.every((a) => set.has(a)),
      "every address is one of the node's set",
    );
    expect(
      (await handout.leases()).length === onNodePods,
      `the node holds ${onNodePods} leases, one a container`,
    );
    await checkWired(server, enis, vpc, fromSet.addresses, podName);
    await delAll(fromSet.runs, onNode);
    expect((await handout.leases()).length === 0, 'and none once every DEL is done');

    // 5. A node berth hands out per pod: an ADD while berth is down fails, half-configuring nothing.
    const down = await cni('ADD', 0, config);
    expect(
      down.code !== 0 && down.json?.code === 11,
      `an ADD asking berth while it is down fails with CNI error 11 (${down.stdout.trim()})`,
    );
    await checkNothingLeft(enis, [podName(0)]);
  } finally {
    await server.close().catch(() => undefined);
  }
  console.log(
    problems.length === 0
      ? 'e2e:cni: all checks passed'
      : `e2e:cni: ${problems.length} check(s) failed`,
  );
  return problems.length === 0 ? 0 : 1;
}

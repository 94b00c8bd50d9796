/**
 * `npm run bench -- cni`: berth-cni's ADD as the container runtime sees it, from the process
 * start to the result on stdout, against berth's node IP API on loopback (the real HTTP surface
 * over the EC2 fake) with a warm pool; DEL likewise; and the plugin's own start-up (VERSION:
 * no network, no configuration). Run one at a time, as a node's first pods after a restart, and
 * eight at a time, as kubelet starts several sandboxes.
 *
 * Source routing is off here: it changes the host's rules, which only the e2e script's network
 * namespaces may do; it adds four `ip` invocations to an ADD (the e2e script times 50 ADDs with it).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installPlugin } from '../cni/build.js';
import { forEachBounded } from '../shared/concurrency/bounded.js';
import { cniEnv, networkConfig, type PluginRun, runPlugin } from '../sim/cni-runtime.js';
import { NODE, startNodeIpServer } from '../sim/node-ip-server.js';
import { writeResults } from './support/results.js';
import { percentile, round } from './support/stats.js';
import { printTable } from './support/table.js';

const SEQUENTIAL = 150;
const CONCURRENT = 200;
const CONCURRENCY = 8;
const STARTS = 50;
const TARGET_P99_MS = 150;

function summary(runs: readonly PluginRun[]) {
  const ms = runs.map((r) => r.ms);
  return {
    runs: runs.length,
    failed: runs.filter((r) => r.code !== 0).length,
    p50Ms: round(percentile(ms, 50), 1),
    p99Ms: round(percentile(ms, 99), 1),
    maxMs: round(Math.max(...ms), 1),
  };
}

/** Runs the benchmark and writes its results. */
export async function runCniBench(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-bench-cni-'));
  const plugin = await installPlugin(join(dir, 'bin'));
  const server = await startNodeIpServer({
    idle: SEQUENTIAL + CONCURRENT + 20,
    instanceType: 'm5.24xlarge',
  });
  const lock = join(dir, 'lock');
  const ipam = { endpoint: server.url, node: NODE, sourceRouting: false };
  let serial = 0;
  const pod = () => ({ namespace: 'games', name: `gs-${++serial}`, containerId: `sb-${serial}` });
  const invoke = (
    command: string,
    p: ReturnType<typeof pod>,
    extra: Record<string, unknown> = {},
  ) => runPlugin(plugin, cniEnv(command, p, { BERTH_CNI_LOCK: lock }), networkConfig(ipam, extra));
  try {
    const starts: PluginRun[] = [];
    for (let i = 0; i < STARTS; i++)
      starts.push(await runPlugin(plugin, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}'));

    const pods = Array.from({ length: SEQUENTIAL }, pod);
    const adds: PluginRun[] = [];
    for (const p of pods) adds.push(await invoke('ADD', p));
    const dels: PluginRun[] = [];
    for (const [i, p] of pods.entries())
      dels.push(await invoke('DEL', p, { prevResult: adds[i]?.json }));

    const many = Array.from({ length: CONCURRENT }, pod);
    const concurrentAdds: PluginRun[] = [];
    await forEachBounded(many, CONCURRENCY, async (p) => {
      concurrentAdds.push(await invoke('ADD', p));
    });
    const addresses = new Set(
      concurrentAdds.map((r) => JSON.stringify((r.json?.ips as unknown[] | undefined)?.[0])),
    );

    const rows = [
      ['start-up (VERSION)', summary(starts)],
      ['ADD, one at a time', summary(adds)],
      ['DEL, one at a time', summary(dels)],
      [`ADD, ${CONCURRENCY} at a time`, summary(concurrentAdds)],
    ] as const;
    printTable(
      ['invocation', 'runs', 'failed', 'p50 ms', 'p99 ms', 'max ms'],
      rows.map(([name, s]) => [name, s.runs, s.failed, s.p50Ms, s.p99Ms, s.maxMs]),
    );
    const add = summary(adds);
    const start = summary(starts);
    const targets = [
      {
        target: `ADD p99 <= ${TARGET_P99_MS} ms with a warm pool, plugin start-up included`,
        pass: add.failed === 0 && add.p99Ms <= TARGET_P99_MS,
        line: `ADD p50 ${add.p50Ms} ms, p99 ${add.p99Ms} ms over ${add.runs} runs (${add.failed} failed); the plugin's own start-up p50 ${start.p50Ms} ms, p99 ${start.p99Ms} ms`,
      },
    ];
    for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.line}`);
    await writeResults('cni', {
      benchmark: 'cni',
      command: 'npm run bench -- cni',
      method:
        'process spawn to exit, stdin and stdout as the runtime uses them; node IP API on 127.0.0.1 over the EC2 fake, warm pool; source routing off',
      startUp: start,
      addSequential: add,
      delSequential: summary(dels),
      addConcurrent: {
        ...summary(concurrentAdds),
        concurrency: CONCURRENCY,
        distinctAddresses: addresses.size,
      },
      targets,
    });
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

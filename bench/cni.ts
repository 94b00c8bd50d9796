/**
 * `npm run bench -- cni`: berth-cni's ADD as the container runtime waits for it, on a node that
 * hands its addresses out itself, against the floor of any plugin written for Node: a bare
 * `node -e 0` start, measured in the same run.
 *
 * The node is staged in network namespaces (`sim/staged-node.ts`, as `npm run e2e:cni` stages
 * it): stand-in links for the node's berth ENIs, berth's node IP API on the node's loopback, the
 * node agent's own pass writing the node's set, and Debian's `ptp` plugin with berth-cni as its
 * IPAM (source routing on, as installed), each pod in its own namespace. Then, in rounds whose
 * order turns each round, so that the machine's load falls on every kind alike:
 * - `node -e 0`, the bare start of the runtime berth-cni is installed with;
 * - berth-cni VERSION: its own start, reading no configuration and no file;
 * - berth-cni ADD and DEL as ptp's IPAM call: berth-cni's own process, timed from its spawn to
 *   its exit by the same clock as `node -e 0`, run in the node's namespace with exactly the
 *   environment and stdin ptp gives it (ptp execs its IPAM plugin with its own environment and
 *   configuration). Timed so rather than through a timing shim on CNI_PATH, which would add the
 *   shim's own start to the chain and time berth-cni with another clock than the floor's;
 * - the whole ptp ADD and DEL chain with berth-cni, and with Debian's `host-local` IPAM (the
 *   reference floor of the chain);
 * each pod deleted 50 rounds after its ADD, so the node holds about 100 pods meanwhile. Then the
 * same ADDs and DELs 8 at a time, as kubelet starts several sandboxes, checking that no address
 * is held twice. Needs root, iproute2 and `containernetworking-plugins`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withStagedNode } from '../sim/staged-node.js';
import {
  AT_ONCE,
  type CniMeasurements,
  judgeCni,
  MEASUREMENTS_FILE,
  ONE_AT_A_TIME,
  summaries,
} from './cni/targets.js';
import { writeResults } from './support/results.js';
import { printTable } from './support/table.js';

/** The benchmark's namespaces, apart from the e2e script's. */
const PREFIX = 'berth-bench-';

/** Runs the benchmark and writes its results. */
export async function runCniBench(): Promise<void> {
  const measured = await withStagedNode(
    { prefix: PREFIX, label: 'bench cni', plugins: ['ptp', 'host-local'] },
    async (stage) => {
      const driver = fileURLToPath(new URL('./cni/inside.ts', import.meta.url));
      const code = await stage.inside(driver, [stage.pluginDir, stage.work, PREFIX]);
      if (code !== 0) {
        throw new Error(`bench cni: the run inside the staged node failed (exit ${code})`);
      }
      const text = await readFile(join(stage.work, MEASUREMENTS_FILE), 'utf8');
      return JSON.parse(text) as CniMeasurements;
    },
  );
  const { oneAtATime, atOnce } = summaries(measured);
  const runs = [
    ...Object.entries(oneAtATime).map(([kind, summary]) => ({
      phase: 'one at a time',
      run: ONE_AT_A_TIME[kind as keyof typeof ONE_AT_A_TIME],
      ...summary,
    })),
    ...Object.entries(atOnce).map(([kind, summary]) => ({
      phase: `${measured.concurrency} at a time`,
      run: AT_ONCE[kind as keyof typeof AT_ONCE],
      ...summary,
    })),
  ];
  printTable(
    ['phase', 'run', 'runs', 'failed', 'p50 ms', 'p99 ms', 'max ms'],
    runs.map((r) => [r.phase, r.run, r.runs, r.failed, r.p50Ms, r.p99Ms, r.maxMs]),
  );
  const targets = judgeCni(measured);
  for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.line}`);
  await writeResults('cni', {
    benchmark: 'cni',
    command: 'npm run bench -- cni',
    method:
      'process spawn to exit with output read, one clock for every kind; berth-cni run in the node namespace with the environment and stdin ptp gives its IPAM plugin; node set written by the agent pass; source routing on; rounds interleaved, order turning each round',
    rounds: measured.rounds,
    heldPerLane: measured.held,
    concurrency: measured.concurrency,
    runs,
    concurrentAddresses: measured.concurrentAddresses,
    berthRequests: measured.berthRequests,
    leasesLeft: measured.leasesLeft,
    targets,
  });
}

/**
 * `npm run bench`: every benchmark in turn, each printing its table and writing its JSON results
 * (under `.berth/bench/`; with `--save` under `bench/results/`, the record committed with the
 * code). Name some to run only those: `npm run bench -- allocator scale --save`. Exits 1 when a
 * target is not met, and warns first when the machine is busy.
 */
import { readFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { runAdmissionCpuBench } from './admission-cpu.js';
import { runAllocatorBench } from './allocator.js';
import { runChaosBench } from './chaos.js';
import { runCniBench } from './cni.js';
import { runCostBench } from './cost.js';
import { runEniBench } from './eni.js';
import { runFuzzBench } from './fuzz.js';
import { runHostPortBench } from './hostports.js';
import { runMultiClusterBench } from './multicluster.js';
import { runRepairBench } from './repair.js';
import { runScaleBench } from './scale.js';
import { resultsFile } from './support/results.js';

const BENCHMARKS: Readonly<Record<string, () => Promise<unknown>>> = {
  allocator: runAllocatorBench,
  admission: runAdmissionCpuBench,
  hostports: () => runHostPortBench(),
  repair: runRepairBench,
  scale: runScaleBench,
  eni: runEniBench,
  multicluster: runMultiClusterBench,
  fuzz: runFuzzBench,
  chaos: runChaosBench,
  cni: runCniBench,
  cost: runCostBench,
};

const wanted = process.argv.slice(2).filter((arg) => arg !== '--save');
const unknown = wanted.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  process.stderr.write(
    `unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}; --save writes bench/results/\n`,
  );
  process.exit(2);
}
// Timings on a busy machine measure the other work too: say so before they are believed.
const [load = 0] = loadavg();
if (load > cpus().length / 2) {
  process.stderr.write(
    `warning: load average ${load.toFixed(2)} on ${cpus().length} cores; timings will be slower than on an idle machine\n`,
  );
}
const failed: string[] = [];
for (const name of wanted.length > 0 ? wanted : Object.keys(BENCHMARKS)) {
  process.stdout.write(`\n=== ${name} ===\n`);
  await BENCHMARKS[name]?.();
  failed.push(...(await failedTargets(name)).map((target) => `${name}: ${target}`));
}
if (failed.length > 0) {
  process.stderr.write(
    `\n${failed.length} target(s) not met:\n${failed.map((t) => `  ${t}`).join('\n')}\n`,
  );
  process.exitCode = 1;
}

/** The targets a benchmark's results file marks as not met. */
async function failedTargets(name: string): Promise<string[]> {
  const results = JSON.parse(await readFile(resultsFile(name), 'utf8')) as {
    targets?: { target: string; pass: boolean }[];
  };
  if (!Array.isArray(results.targets)) return [`${name}.json has no targets`];
  return results.targets.filter((t) => !t.pass).map((t) => t.target);
}

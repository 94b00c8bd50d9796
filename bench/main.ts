/**
 * `npm run bench`: every benchmark in turn, each printing its table and writing its JSON under
 * bench/results/. Name some to run only those: `npm run bench -- allocator scale`. Exits 1 when a
 * target is not met, and warns first when the machine is busy.
 */
import { readFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { runAdmissionCpuBench } from './admission-cpu.js';
import { runAllocatorBench } from './allocator.js';
import { runChaosBench } from './chaos.js';
import { runEniBench } from './eni.js';
import { runFuzzBench } from './fuzz.js';
import { runHostPortBench } from './hostports.js';
import { runRepairBench } from './repair.js';
import { runScaleBench } from './scale.js';

const BENCHMARKS: Readonly<Record<string, () => Promise<unknown>>> = {
  allocator: runAllocatorBench,
  admission: runAdmissionCpuBench,
  hostports: () => runHostPortBench(),
  repair: runRepairBench,
  scale: runScaleBench,
  eni: runEniBench,
  fuzz: runFuzzBench,
  chaos: runChaosBench,
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  process.stderr.write(
    `unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}\n`,
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
  const file = new URL(`./results/${name}.json`, import.meta.url);
  const results = JSON.parse(await readFile(file, 'utf8')) as {
    targets?: { target: string; pass: boolean }[];
  };
  if (!Array.isArray(results.targets)) return [`${name}.json has no targets`];
  return results.targets.filter((t) => !t.pass).map((t) => t.target);
}

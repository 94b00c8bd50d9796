/**
 * `npm run bench`: every benchmark in turn, each printing its table and writing its JSON under
 * bench/results/. Name some to run only those: `npm run bench -- allocator scale`.
 */
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
for (const name of wanted.length > 0 ? wanted : Object.keys(BENCHMARKS)) {
  process.stdout.write(`\n=== ${name} ===\n`);
  await BENCHMARKS[name]?.();
}

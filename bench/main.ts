/**
 * `npm run bench`: every benchmark in turn, each printing its table and writing its JSON results
 * (under `.berth/bench/`; with `--save` under `bench/results/`, the record committed with the
 * code). Name some to run only those: `npm run bench -- allocator scale --save`; `--trace FILE`
 * runs the scale benchmark's weeks on a recorded trace instead (`scale/weeks.ts` says its
 * format). Exits 1 when a target is not met, and warns first when the machine is busy.
 */
import { readFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { resultsFile } from './support/results.js';

const USAGE =
  'usage: npm run bench -- [NAME ...] [--save] [--trace FILE]\n  --save        write bench/results/ and rewrite the documents\n  --trace FILE  the scale benchmark runs this trace (arrival_seconds,session_seconds) in place of its generated weeks\n';

const { values: flags, positionals: wanted } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        save: { type: 'boolean' },
        trace: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
})();
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

/**
 * Each benchmark's module, imported only when it runs: a module one benchmark loads must not
 * weigh on another's timings. The cost benchmark loads Powertools Tracer, whose X-Ray SDK turns
 * on an async hook for every promise (cls-hooked); imported eagerly it cost every other
 * benchmark's promise-heavy paths about a tenth of the machine (a CPU profile of the allocator
 * benchmark: `registerDestroyHook` alone 8.6%).
 */
const BENCHMARKS: Readonly<Record<string, () => Promise<unknown>>> = {
  allocator: async () => (await import('./allocator.js')).runAllocatorBench(),
  admission: async () => (await import('./admission-cpu.js')).runAdmissionCpuBench(),
  hostports: async () => (await import('./hostports.js')).runHostPortBench(),
  repair: async () => (await import('./repair.js')).runRepairBench(),
  scale: async () => {
    const { runScaleBench } = await import('./scale.js');
    return runScaleBench(flags.trace ? { trace: await readTrace(flags.trace) } : {});
  },
  eni: async () => (await import('./eni.js')).runEniBench(),
  multicluster: async () => (await import('./multicluster.js')).runMultiClusterBench(),
  fuzz: async () => (await import('./fuzz.js')).runFuzzBench(),
  chaos: async () => (await import('./chaos.js')).runChaosBench(),
  cni: async () => (await import('./cni.js')).runCniBench(),
  fronts: async () => (await import('./fronts.js')).runFrontsBench(),
  cost: async () => (await import('./cost.js')).runCostBench(),
  capacity: async () => (await import('./capacity.js')).runCapacityBench(),
};

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
// The documents quote the committed results: a saved run rewrites their generated regions.
if (flags.save) {
  const { renderDocuments } = await import('../scripts/docs.js');
  const rewritten = await renderDocuments();
  if (rewritten.length > 0)
    process.stdout.write(`\nnpm run docs: rewrote ${rewritten.join(', ')}\n`);
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

/** The trace `--trace` names, read and checked before the scale benchmark runs a day. */
async function readTrace(path: string) {
  const { parseTrace, TraceError } = await import('./scale/weeks.js');
  try {
    return { path, arrivals: parseTrace(await readFile(path, 'utf8'), path) };
  } catch (error) {
    const message =
      error instanceof TraceError
        ? error.message
        : `cannot read ${path}: ${(error as Error).message}`;
    process.stderr.write(`--trace: ${message}\n`);
    process.exit(2);
  }
}

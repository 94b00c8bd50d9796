/** Benchmark results files: the measured data plus the machine and commit it was measured on. */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One target's verdict, as every results file reports it (`targets`, read by `npm run docs`). */
export interface TargetVerdict {
  readonly target: string;
  readonly pass: boolean;
  readonly line: string;
}

/** Where and when a benchmark ran. */
export interface MachineInfo {
  readonly node: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly platform: string;
  readonly memoryGiB: number;
  /** 1/5/15-minute load averages when the results were written: other work skews timings. */
  readonly loadAverage: readonly number[];
  readonly date: string;
  /** HEAD of the working tree; `dirty` when it has uncommitted changes. */
  readonly commit: string;
  readonly dirty: boolean | undefined;
}

/** Describes this machine and the checked-out commit (read-only git queries). */
export function machineInfo(now: () => number = Date.now): MachineInfo {
  const processors = cpus();
  return {
    node: process.version,
    cpus: processors.length,
    cpuModel: processors[0]?.model ?? 'unknown',
    platform: `${platform()} ${release()}`,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    loadAverage: loadavg().map((load) => Math.round(load * 100) / 100),
    date: new Date(now()).toISOString(),
    commit: git(['rev-parse', 'HEAD']) ?? 'unknown',
    dirty: ((status) => (status === undefined ? undefined : status.length > 0))(
      git(['status', '--porcelain', '--untracked-files=no']),
    ),
  };
}

/** The checkout's root: bench/support/ is two levels below it. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Where a benchmark's results go. `--save` writes the committed record under `bench/results/`;
 * without it a run lands under `.berth/bench/` (ignored by git), so measuring never dirties the
 * checkout unless asked.
 */
export function resultsFile(name: string, argv: readonly string[] = process.argv): string {
  return argv.includes('--save')
    ? join(ROOT, 'bench', 'results', `${name}.json`)
    : join(ROOT, '.berth', 'bench', `${name}.json`);
}

/** Writes `{ machine, ...data }` as indented JSON to `resultsFile(name)`, and says where. */
export async function writeResults(name: string, data: Record<string, unknown>): Promise<string> {
  const path = resultsFile(name);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify({ machine: machineInfo(), ...data }, null, 2)}\n`);
  console.log(`results: ${path}`);
  return path;
}

function git(args: readonly string[]): string | undefined {
  try {
    return execFileSync('git', args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

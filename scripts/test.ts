/**
 * `npm test`: the type check, Biome and the layer check (dependency-cruiser, whose rules and
 * layer order are in `.dependency-cruiser.cjs`) run beside vitest instead of before it. The suite spends
 * much of its time waiting on DynamoDB Local, servers and child processes, so on CI's two cores
 * the three together finish minutes sooner than one after another. Vitest keeps the terminal
 * (its progress is the long part); the checks' output is printed when they end, and the
 * command fails if any of the three fails. Arguments go to vitest (`npm test -- test/cni`).
 */
import { spawn } from 'node:child_process';

interface Outcome {
  readonly name: string;
  readonly code: number;
  readonly output: string;
}

/** Runs a check with its output captured, so it cannot interleave with vitest's progress. */
function check(name: string, command: string, args: readonly string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', (error) => resolve({ name, code: 1, output: `${error.message}\n` }));
    child.on('close', (code) =>
      resolve({ name, code: code ?? 1, output: Buffer.concat(chunks).toString('utf8') }),
    );
  });
}

/** Runs vitest in the foreground with the terminal. */
function vitest(args: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...args], {
      stdio: 'inherit',
    });
    child.on('error', () => resolve(1));
    child.on('close', (code) => resolve(code ?? 1));
  });
}

const node = process.execPath;
/** Every tree whose imports the layer order governs (test/ may import anything). */
const LAYERED = ['shared', 'cli', 'cni', 'bench', 'sim', 'functions', 'infra', 'scripts'];
const [typecheck, lint, layers, tests] = await Promise.all([
  check('typecheck (tsc --noEmit)', node, ['node_modules/typescript/bin/tsc', '--noEmit']),
  check('lint (biome check .)', node, ['node_modules/@biomejs/biome/bin/biome', 'check', '.']),
  check('layers (dependency-cruiser)', node, [
    'node_modules/.bin/depcruise',
    ...LAYERED,
    '--config',
    '.dependency-cruiser.cjs',
    '--output-type',
    'err',
  ]),
  vitest(process.argv.slice(2)),
]);

const checks = [typecheck, lint, layers];
for (const outcome of checks) {
  const verdict = outcome.code === 0 ? 'passed' : `FAILED (exit ${outcome.code})`;
  process.stdout.write(`\n── ${outcome.name}: ${verdict}\n${outcome.output}`);
}
const failed = checks.filter((o) => o.code !== 0).map((o) => o.name);
if (tests !== 0) failed.push('vitest');
if (failed.length > 0) {
  process.stdout.write(`\nnpm test failed: ${failed.join(', ')}\n`);
  process.exit(1);
}

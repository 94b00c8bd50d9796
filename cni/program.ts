/**
 * Runs the node's programs (`ip`, `flock`) to their end, synchronously. The plugin has nothing
 * else to do while one runs, and `spawnSync` sets up no streams over the child's pipes: the first
 * process an ADD started through `execFile` cost it about 6 ms more CPU (`perf stat`, 40
 * interleaved starts each). A run is bounded by the invocation's deadline, since no timer fires
 * while the plugin waits.
 */

/** How a run ended. */
export interface ProgramRun {
  /** The exit status; null when the deadline or a signal ended it. */
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The deadline passed before it ended. */
  readonly timedOut: boolean;
  /** Why it could not start, if it did not. */
  readonly error: Error | undefined;
}

/**
 * Runs `program` with `input` on its stdin until it exits or `deadline` (epoch ms) passes;
 * `descriptor`, when given, is its fd 3.
 */
export function runProgram(
  program: string,
  args: readonly string[],
  input: string,
  deadline: number,
  descriptor?: number,
): ProgramRun {
  // Loaded here: an ADD that routes nothing starts without it (a few ms of every start).
  const { spawnSync } = process.getBuiltinModule('node:child_process');
  const ran = spawnSync(program, args, {
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe', ...(descriptor === undefined ? [] : [descriptor])],
    timeout: Math.max(1, deadline - Date.now()),
  });
  const timedOut = (ran.error as { code?: unknown } | undefined)?.code === 'ETIMEDOUT';
  return {
    status: ran.status,
    stdout: ran.stdout ?? '',
    stderr: ran.stderr ?? '',
    timedOut,
    error: timedOut ? undefined : ran.error,
  };
}

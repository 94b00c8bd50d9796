/**
 * The node's lock on pod routing, a kernel `flock(2)` lock on the lock file. ADDs take it shared:
 * they only add rules and replace routes, and may run side by side. A DEL takes it exclusive
 * across its release and its rule removal, so that it never flushes an ENI table an ADD has just
 * pointed a rule at, nor removes the rules of a new pod that got the address the DEL freed.
 *
 * Node.js has no flock, so util-linux's `flock`, which every node has, takes it on a descriptor
 * this process opened and hands it (`flock -s 3`), then exits. A flock lock belongs to the open
 * file description, not to the process that asked (flock(2): it is released when every
 * descriptor of the description is closed), so the lock stays held by this process's descriptor
 * with no process left running, goes when the work is done and the descriptor closed, and the
 * kernel drops it should the plugin die. One short chain of processes per lock, where a holder
 * kept running for the work (flock with a shell under it) cost two starts and ended only after
 * the work had returned.
 */
import { closeSync, openSync } from 'node:fs';
import { CNI_ERROR, CniError } from './errors.js';

/** Shared for ADD and CHECK, exclusive for DEL. */
export type LockMode = 'shared' | 'exclusive';

/**
 * A read the lock runs as soon as it holds the lock, in the same chain of processes that takes
 * it (`sh -c 'flock -s 3 && exec "$@"'`): the plugin starts one process where a read after the
 * lock would start a second, and the read sees what no DEL can change while the lock is held.
 */
export interface ReadUnderLock {
  readonly command: readonly string[];
  readonly input: string;
}

/**
 * Runs `work` holding the lock at `path`, with the stdout of `read` (empty without one); gives
 * up with `signal`.
 */
export async function withHostLock<T>(
  path: string,
  mode: LockMode,
  signal: AbortSignal,
  work: (read: string) => Promise<T>,
  read?: ReadUnderLock,
): Promise<T> {
  let descriptor: number;
  try {
    descriptor = openSync(path, 'a', 0o600);
  } catch (error) {
    throw new CniError(
      CNI_ERROR.ioFailure,
      `cannot open the lock ${path}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  try {
    return await work(await take(path, descriptor, mode, signal, read));
  } finally {
    closeSync(descriptor);
  }
}

/** Takes the lock on `descriptor` (`flock` exits 0 once it holds it), then runs `read`. */
async function take(
  path: string,
  descriptor: number,
  mode: LockMode,
  signal: AbortSignal,
  read: ReadUnderLock | undefined,
): Promise<string> {
  // Loaded here: an ADD that routes nothing starts without it (a few ms of every start).
  const { spawn } = process.getBuiltinModule('node:child_process');
  const flag = mode === 'shared' ? '-s' : '-x';
  const [program, args] = read
    ? ['sh', ['-c', `flock ${flag} 3 && exec "$@"`, 'sh', ...read.command]]
    : ['flock', [flag, '3']];
  const taker = spawn(program, args, {
    stdio: [read ? 'pipe' : 'ignore', 'pipe', 'pipe', descriptor],
    signal,
  });
  let stdout = '';
  let stderr = '';
  taker.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  taker.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  taker.stdin?.end(read?.input);
  const what = read
    ? `take the lock ${path} and run ${read.command.join(' ')}`
    : `take the lock ${path}`;
  return new Promise<string>((resolve, reject) => {
    taker.once('error', (error) =>
      reject(
        signal.aborted
          ? new CniError(CNI_ERROR.tryAgainLater, `the node's routing lock ${path} stayed held`)
          : new CniError(CNI_ERROR.ioFailure, `cannot ${what}: ${error.message}`),
      ),
    );
    taker.once('close', (code) => {
      if (code === 0) resolve(stdout);
      else if (!signal.aborted) {
        reject(
          new CniError(CNI_ERROR.ioFailure, `cannot ${what}: ${stderr.trim() || `exit ${code}`}`),
        );
      }
    });
  });
}

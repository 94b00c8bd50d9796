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
import { runProgram } from './program.js';

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
 * up at `deadline` (epoch ms).
 */
export async function withHostLock<T>(
  path: string,
  mode: LockMode,
  deadline: number,
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
    return await work(take(path, descriptor, mode, deadline, read));
  } finally {
    closeSync(descriptor);
  }
}

/** Takes the lock on `descriptor` (`flock` exits 0 once it holds it), then runs `read`. */
function take(
  path: string,
  descriptor: number,
  mode: LockMode,
  deadline: number,
  read: ReadUnderLock | undefined,
): string {
  const flag = mode === 'shared' ? '-s' : '-x';
  const ran = read
    ? runProgram(
        'sh',
        ['-c', `flock ${flag} 3 && exec "$@"`, 'sh', ...read.command],
        read.input,
        deadline,
        descriptor,
      )
    : runProgram('flock', [flag, '3'], '', deadline, descriptor);
  if (ran.status === 0) return ran.stdout;
  if (ran.timedOut) {
    throw new CniError(CNI_ERROR.tryAgainLater, `the node's routing lock ${path} stayed held`);
  }
  const what = read
    ? `take the lock ${path} and run ${read.command.join(' ')}`
    : `take the lock ${path}`;
  throw new CniError(
    CNI_ERROR.ioFailure,
    `cannot ${what}: ${ran.error?.message ?? (ran.stderr.trim() || `exit ${ran.status}`)}`,
  );
}

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
 * kernel drops it should the plugin die. One short process per lock, where a holder kept
 * running for the work (flock with a shell under it) cost two starts and ended only after the
 * work had returned.
 */
import { closeSync, openSync } from 'node:fs';
import { CNI_ERROR, CniError } from './errors.js';

/** Shared for ADD and CHECK, exclusive for DEL. */
export type LockMode = 'shared' | 'exclusive';

/** Runs `work` holding the lock at `path`; gives up with `signal`. */
export async function withHostLock<T>(
  path: string,
  mode: LockMode,
  signal: AbortSignal,
  work: () => Promise<T>,
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
    await take(path, descriptor, mode, signal);
    return await work();
  } finally {
    closeSync(descriptor);
  }
}

/** Takes the lock on `descriptor`: `flock` exits 0 once it holds it. */
async function take(
  path: string,
  descriptor: number,
  mode: LockMode,
  signal: AbortSignal,
): Promise<void> {
  // Loaded here: an ADD that routes nothing starts without it (a few ms of every start).
  const { spawn } = process.getBuiltinModule('node:child_process');
  const taker = spawn('flock', [mode === 'shared' ? '-s' : '-x', '3'], {
    stdio: ['ignore', 'ignore', 'pipe', descriptor],
    signal,
  });
  let stderr = '';
  taker.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  await new Promise<void>((resolve, reject) => {
    taker.once('error', (error) =>
      reject(
        signal.aborted
          ? new CniError(CNI_ERROR.tryAgainLater, `the node's routing lock ${path} stayed held`)
          : new CniError(CNI_ERROR.ioFailure, `cannot take the lock ${path}: ${error.message}`),
      ),
    );
    taker.once('close', (code) => {
      if (code === 0) resolve();
      else if (!signal.aborted) {
        reject(
          new CniError(
            CNI_ERROR.ioFailure,
            `cannot take the lock ${path}: ${stderr.trim() || `flock exited ${code}`}`,
          ),
        );
      }
    });
  });
}

/**
 * The node's lock on pod routing, a kernel `flock(2)` taken through util-linux's `flock`, which
 * every node has. ADDs take it shared: they only add rules and replace routes, and may run side
 * by side. A DEL takes it exclusive across its release and its rule removal, so that it never
 * flushes an ENI table an ADD has just pointed a rule at, nor removes the rules of a new pod that
 * got the address the DEL freed. The kernel drops the lock of a plugin that died.
 */
import { spawn } from 'node:child_process';
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
  // The holder prints once it has the lock and keeps it until its stdin closes.
  const holder = spawn(
    'flock',
    [mode === 'shared' ? '-s' : '-x', path, 'sh', '-c', 'echo locked; read unused'],
    { stdio: ['pipe', 'pipe', 'pipe'], signal },
  );
  let stderr = '';
  holder.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout.once('data', () => resolve());
      holder.once('error', (error) =>
        reject(
          signal.aborted
            ? new CniError(CNI_ERROR.tryAgainLater, `the node's routing lock ${path} stayed held`)
            : new CniError(CNI_ERROR.ioFailure, `cannot take the lock ${path}: ${error.message}`),
        ),
      );
      holder.once('exit', (code) =>
        reject(
          new CniError(
            CNI_ERROR.ioFailure,
            `cannot take the lock ${path}: ${stderr.trim() || `flock exited ${code}`}`,
          ),
        ),
      );
    });
    return await work();
  } finally {
    holder.stdin.end();
  }
}

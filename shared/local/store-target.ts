/**
 * Which DynamoDB a local command uses: an explicit endpoint, a real table,
 * the DynamoDB Local of a `berth serve` running on the same data dir, or one started for the
 * command's own duration.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  DescribeTableCommand,
  type DynamoDBClient,
  ListTablesCommand,
} from '@aws-sdk/client-dynamodb';
import { dynamoClient } from '../store/client.js';
import { ensureTable } from '../store/ensure-table.js';
import { LOCAL_TABLE_NAME } from '../store/table.js';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local.js';
import { DynamoDbLocalError } from './errors.js';

/** Flags that choose the store. */
export interface StoreFlags {
  readonly dataDir: string;
  readonly dynamodbEndpoint?: string;
  readonly table?: string;
}

/** An open store and how to let go of it. */
export interface StoreTarget {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Where it is, for messages: an endpoint URL or `aws`. */
  readonly where: string;
  /** What serves it, as messages name it: `DynamoDB Local at URL`, `DynamoDB in AWS`. */
  readonly place: string;
  close(): Promise<void>;
}

/**
 * Hears a DynamoDB Local this process started ending under it, and what is done about it: it is
 * started again on the same data dir and port, with backoff, and given up on (`failed`) after
 * `RESTART_BACKOFF_MS` runs out or when its database file is what stops it.
 */
export interface StoreWatch {
  /** One line: it ended, or a start again failed. */
  lost(line: string): void;
  /** One line: it answers again. */
  restarted(line: string): void;
  /** It will not be started again: the store is gone for good. */
  failed(error: Error): void;
}

/** The waits before each start again of a DynamoDB Local that ended, one a start. */
const RESTART_BACKOFF_MS = [1_000, 2_000, 4_000, 8_000, 16_000];

const ENDPOINT_FILE = 'dynamodb.json';

/**
 * Asks the endpoint for one table name, in one attempt: a silent endpoint fails a command in
 * one request timeout (`COMMAND_TIMEOUTS_MS`), not in three attempts of it.
 */
async function probe(endpoint: string): Promise<void> {
  const client = dynamoClient({ endpoint, maxAttempts: 1 });
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }));
  } finally {
    client.destroy();
  }
}

async function answers(endpoint: string): Promise<boolean> {
  return probe(endpoint).then(
    () => true,
    () => false,
  );
}

/**
 * The endpoint a `berth serve` recorded in the data dir, if that server is still answering.
 * Refused (3) while that server runs and its DynamoDB Local does not answer (it is being started
 * again): a second DynamoDB Local on the same files is what the record is there to prevent.
 */
async function runningEndpoint(dataDir: string): Promise<string | undefined> {
  const file = join(dataDir, ENDPOINT_FILE);
  let recorded: { endpoint?: unknown; pid?: unknown };
  try {
    recorded = JSON.parse(await readFile(file, 'utf8')) as typeof recorded;
  } catch {
    return undefined;
  }
  const { endpoint, pid } = recorded;
  if (typeof endpoint !== 'string') return undefined;
  if (await answers(endpoint)) return endpoint;
  if (typeof pid === 'number' && pid !== process.pid && alive(pid)) {
    throw new DynamoDbLocalError(
      `berth serve (pid ${pid}) runs on ${dataDir}, and its DynamoDB Local at ${endpoint} does not answer (it may be starting again): try again shortly, or stop that server; if none runs, delete ${file}`,
    );
  }
  return undefined;
}

/** Whether a process of that id runs (signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as { code?: unknown }).code === 'EPERM';
  }
}

/**
 * Opens the store the flags name. With `share`, a DynamoDB Local started here is recorded in the
 * data dir so CLI commands run meanwhile use it instead of opening the same files twice; with
 * `watch`, it is started again should it end (`supervised`).
 */
export async function openStore(
  flags: StoreFlags,
  options: { share?: boolean; progress?: (line: string) => void; watch?: StoreWatch } = {},
): Promise<StoreTarget> {
  if (flags.table && !flags.dynamodbEndpoint) {
    await probeAws(flags.table);
    const client = dynamoClient({ command: true });
    return {
      client,
      tableName: flags.table,
      where: 'aws',
      place: 'DynamoDB in AWS',
      close: async () => client.destroy(),
    };
  }
  const tableName = flags.table ?? LOCAL_TABLE_NAME;
  const dataDir = resolve(flags.dataDir);
  const existing = flags.dynamodbEndpoint ?? (await runningEndpoint(dataDir));
  if (existing) {
    await probe(existing).catch((error: unknown) => {
      throw unanswered(error, existing);
    });
    const client = dynamoClient({ endpoint: existing });
    await ensureTable(client, tableName).catch((error: unknown) => {
      client.destroy();
      throw unanswered(error, existing);
    });
    return {
      client,
      tableName,
      where: existing,
      place: flags.dynamodbEndpoint ? `DynamoDB at ${existing}` : `DynamoDB Local at ${existing}`,
      close: async () => client.destroy(),
    };
  }
  // Java starts in a few seconds: say what is being waited for.
  const files = join(dataDir, 'dynamodb');
  options.progress?.(`starting DynamoDB Local (data under ${files})…`);
  const started = Date.now();
  const first = await startDynamoDbLocal({ dataDir: files });
  options.progress?.(`DynamoDB Local ready on ${first.endpoint} in ${Date.now() - started} ms`);
  const client = dynamoClient({ endpoint: first.endpoint });
  const local = options.watch ? supervised(first, files, options.watch) : first;
  try {
    await ensureTable(client, tableName);
  } catch (error) {
    client.destroy();
    await local.stop();
    throw error;
  }
  const record = join(dataDir, ENDPOINT_FILE);
  if (options.share)
    await writeFile(record, JSON.stringify({ endpoint: first.endpoint, pid: process.pid }));
  return {
    client,
    tableName,
    where: first.endpoint,
    place: `DynamoDB Local at ${first.endpoint}`,
    async close() {
      client.destroy();
      if (options.share) await rm(record, { force: true });
      await local.stop();
    },
  };
}

/**
 * A DynamoDB Local that is started again, on the same data dir and port (so the clients and the
 * endpoint the data dir records stay right), each time it ends unasked; `watch` hears each end
 * and start. Stopping it stops whichever process runs then, one being started included.
 */
function supervised(
  first: DynamoDbLocal,
  files: string,
  watch: StoreWatch,
): Pick<DynamoDbLocal, 'stop'> {
  const { endpoint } = first;
  const port = Number(new URL(endpoint).port);
  let current: DynamoDbLocal | undefined = first;
  let closing = false;
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms).unref());
  const restart = async (how: string) => {
    current = undefined;
    watch.lost(
      `DynamoDB Local at ${endpoint} (data under ${files}) exited with ${how}: the store is down and requests are answered 503; starting it again on the same data dir`,
    );
    let last = '';
    for (const [attempt, wait] of RESTART_BACKOFF_MS.entries()) {
      await sleep(wait);
      if (closing) return;
      const began = Date.now();
      try {
        const next = await startDynamoDbLocal({ dataDir: files, port });
        if (closing) return next.stop();
        current = next;
        watch.restarted(
          `DynamoDB Local is back at ${endpoint} after ${attempt + 1} start(s) (${Date.now() - began} ms)`,
        );
        void next.exited.then(restart);
        return;
      } catch (error) {
        last = (error as Error).message;
        // A damaged or empty database file does not mend with time.
        if (error instanceof DynamoDbLocalError && error.file !== undefined) break;
        const after = RESTART_BACKOFF_MS[attempt + 1];
        watch.lost(
          `DynamoDB Local did not start again (start ${attempt + 1}): ${last}${after ? `; next start in ${after / 1000} s` : ''}`,
        );
      }
    }
    watch.failed(
      new DynamoDbLocalError(
        `DynamoDB Local at ${endpoint} exited with ${how} and did not start again: ${last}`,
      ),
    );
  };
  void first.exited.then(restart);
  return {
    async stop() {
      closing = true;
      await current?.stop();
    },
  };
}

/** Why a request's failure means nothing answered there; undefined for any answer, a refusal too. */
function silence(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code =
      cause.name === 'TimeoutError' ? 'no answer in time' : (cause as { code?: unknown }).code;
    if (
      code === 'ECONNREFUSED' ||
      code === 'ENOTFOUND' ||
      code === 'EHOSTUNREACH' ||
      code === 'no answer in time'
    ) {
      return code;
    }
  }
  return undefined;
}

/**
 * A DynamoDB endpoint that did not answer, said with the fix; the socket error stays the cause
 * (its code makes the CLI's exit status 3).
 */
function unanswered(error: unknown, endpoint: string): unknown {
  const code = silence(error);
  return code === undefined
    ? error
    : new Error(
        `DynamoDB at ${endpoint} did not answer (${code}): start it, or fix --dynamodb-endpoint (without the flag, berth uses or starts the DynamoDB Local of --data-dir)`,
        { cause: error },
      );
}

/** An AWS service error: it carries the HTTP status DynamoDB answered with. */
type ServiceAnswer = { readonly $metadata?: { readonly httpStatusCode?: number } };

/**
 * Asks DynamoDB in AWS about the table, in one attempt, so a network path that swallows requests
 * fails a command in one request timeout. Any answer will do: a missing table, or a permission
 * the caller lacks, is the command's to meet and say.
 */
async function probeAws(tableName: string): Promise<void> {
  const client = dynamoClient({ command: true, maxAttempts: 1 });
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
  } catch (error) {
    const code = silence(error);
    // DynamoDB answered (a missing table, a permission the caller lacks): the command's to meet.
    if (code === undefined && (error as ServiceAnswer).$metadata?.httpStatusCode !== undefined)
      return;
    // No Region, no credentials: the command would meet the same, so it ends here.
    if (code === undefined) throw error;
    const region = await client.config.region().catch(() => 'its Region');
    throw new Error(
      `DynamoDB in ${region} did not answer (${code}): check the network path to it (a proxy, a VPC endpoint, a firewall) and --region, or pass --dynamodb-endpoint`,
      { cause: error },
    );
  } finally {
    client.destroy();
  }
}

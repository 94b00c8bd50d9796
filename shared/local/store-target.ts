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
import { startDynamoDbLocal } from './dynamodb-local.js';

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
  close(): Promise<void>;
}

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

/** The endpoint a `berth serve` recorded in the data dir, if that server is still answering. */
async function runningEndpoint(dataDir: string): Promise<string | undefined> {
  try {
    const { endpoint } = JSON.parse(await readFile(join(dataDir, ENDPOINT_FILE), 'utf8')) as {
      endpoint?: string;
    };
    return endpoint && (await answers(endpoint)) ? endpoint : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Opens the store the flags name. With `share`, a DynamoDB Local started here is recorded in the
 * data dir so CLI commands run meanwhile use it instead of opening the same files twice.
 */
export async function openStore(
  flags: StoreFlags,
  options: { share?: boolean; progress?: (line: string) => void } = {},
): Promise<StoreTarget> {
  if (flags.table && !flags.dynamodbEndpoint) {
    await probeAws(flags.table);
    const client = dynamoClient({ command: true });
    return { client, tableName: flags.table, where: 'aws', close: async () => client.destroy() };
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
    return { client, tableName, where: existing, close: async () => client.destroy() };
  }
  // Java starts in a few seconds: say what is being waited for.
  options.progress?.(`starting DynamoDB Local (data under ${join(dataDir, 'dynamodb')})…`);
  const started = Date.now();
  const local = await startDynamoDbLocal({ dataDir: join(dataDir, 'dynamodb') });
  options.progress?.(`DynamoDB Local ready on ${local.endpoint} in ${Date.now() - started} ms`);
  const client = dynamoClient({ endpoint: local.endpoint });
  await ensureTable(client, tableName);
  const record = join(dataDir, ENDPOINT_FILE);
  if (options.share)
    await writeFile(record, JSON.stringify({ endpoint: local.endpoint, pid: process.pid }));
  return {
    client,
    tableName,
    where: local.endpoint,
    async close() {
      client.destroy();
      if (options.share) await rm(record, { force: true });
      await local.stop();
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

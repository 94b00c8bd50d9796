/**
 * Where configuration comes from: a file locally, the environment in Lambda. This is the only
 * module that reads `process.env`; everything else receives values.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { parseClusterConfigs } from './clusters.js';
import { ConfigError } from './errors.js';
import { type BerthConfig, parseConfig } from './schema.js';

/** Callers as the stack lists them: `*` for every cluster, else a cluster's name → role ARNs. */
export type NodeCallers = Readonly<Record<string, readonly string[]>>;

/** The AWS Region the SDK would use from the environment, if the environment names one. */
export function regionFromEnvironment(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined;
}

/**
 * Reads and validates a JSON config file, every cluster's config (one, unless the file has a
 * section per cluster: clusters.ts); no file means one cluster at every default.
 */
export async function loadConfigFile(path: string | undefined): Promise<BerthConfig[]> {
  if (path === undefined) return [parseConfig({})];
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError([`${path}: cannot read the config file (${(error as Error).message})`], {
      cause: error,
    });
  }
  return parseClusterConfigs(parseJson(text, path));
}

function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`${source}: not valid JSON (${(error as Error).message})`], {
      cause: error,
    });
  }
}

/** What a berth Lambda function reads from its environment (set by the CDK stack). */
export interface LambdaSettings {
  /** Every cluster the deployment serves (BERTH_CONFIG, with a section per cluster or one cluster's). */
  readonly configs: readonly BerthConfig[];
  readonly tableName: string;
  readonly region: string;
  /**
   * ARN of each cluster's secret, whose value is the last segment of its webhook path
   * (BERTH_WEBHOOK_SECRETS, a JSON object by cluster); admission function only.
   */
  readonly webhookSecretArns: Readonly<Record<string, string>>;
  /**
   * The node roles each cluster's node IP API takes (BERTH_NODE_IPS_CALLERS, `*` for every
   * cluster); absent where IAM's grant is the whole rule. Node IP function only.
   */
  readonly nodeIpsCallers: NodeCallers | undefined;
  /**
   * The roles the capacity API answers (BERTH_CAPACITY_CALLERS, a JSON list of role ARNs): IAM
   * lets any principal of the account with a broad enough policy sign a request, and the list
   * keeps the answer to the roles the stack granted. Capacity function only; none answers nobody.
   */
  readonly capacityCallers: readonly string[];
  /** Name of the ENI function, which runs background pool refills; node IP function only. */
  readonly eniFunctionName: string | undefined;
  /**
   * Name of the scale function, which admissions ask for triggered passes (BERTH_SCALE_FUNCTION);
   * admission function only.
   */
  readonly scaleFunctionName: string | undefined;
  /** URL of the settle queue; admission and settle functions. */
  readonly settleQueueUrl: string | undefined;
  /** URL of the fronts queue; admission and fronts functions of a stack with fronts. */
  readonly frontsQueueUrl: string | undefined;
}

/** Reads and validates the Lambda environment; every missing or bad variable in one error. */
export function lambdaSettings(env: NodeJS.ProcessEnv = process.env): LambdaSettings {
  const problems: string[] = [];
  const need = (name: string): string => {
    const value = env[name];
    if (!value) problems.push(`${name}: environment variable is not set`);
    return value ?? '';
  };
  const tableName = need('BERTH_TABLE');
  const region = need('AWS_REGION');
  let configs: BerthConfig[] | undefined;
  try {
    configs = parseClusterConfigs(parseJson(need('BERTH_CONFIG') || '{}', 'BERTH_CONFIG'));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems.map((line) => `BERTH_CONFIG ${line}`));
  }
  const webhookSecretArns =
    jsonMap(
      'BERTH_WEBHOOK_SECRETS',
      env.BERTH_WEBHOOK_SECRETS,
      secretArnsSchema,
      'must map each cluster to its secret ARN',
      problems,
    ) ?? {};
  const nodeIpsCallers: NodeCallers | undefined = jsonMap(
    'BERTH_NODE_IPS_CALLERS',
    env.BERTH_NODE_IPS_CALLERS,
    nodeCallersSchema,
    'must map each cluster (or *) to a list of role ARNs',
    problems,
  );
  const capacityCallers =
    jsonMap(
      'BERTH_CAPACITY_CALLERS',
      env.BERTH_CAPACITY_CALLERS,
      z.array(z.string().min(1)),
      'must be a JSON list of role ARNs',
      problems,
    ) ?? [];
  if (problems.length > 0 || configs === undefined) throw new ConfigError(problems);
  return {
    configs,
    tableName,
    region,
    webhookSecretArns,
    nodeIpsCallers,
    capacityCallers,
    eniFunctionName: env.BERTH_ENI_FUNCTION || undefined,
    scaleFunctionName: env.BERTH_SCALE_FUNCTION || undefined,
    settleQueueUrl: env.BERTH_SETTLE_QUEUE || undefined,
    frontsQueueUrl: env.BERTH_FRONTS_QUEUE || undefined,
  };
}

/**
 * A JSON map from an environment variable the stack sets, read with `schema`; absent when the
 * variable is. A bad one is a problem, reported with the others.
 */
function jsonMap<T>(
  name: string,
  text: string | undefined,
  schema: z.ZodType<T>,
  expected: string,
  problems: string[],
): T | undefined {
  if (!text) return undefined;
  let value: unknown;
  try {
    value = parseJson(text, name);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
    return undefined;
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  problems.push(`${name}: ${expected}`);
  return undefined;
}

/** BERTH_WEBHOOK_SECRETS: `{ "<cluster>": "<secret ARN>" }`, or nothing outside the admission function. */
const secretArnsSchema = z
  .record(z.string(), z.string().min(1))
  .refine((map) => Object.keys(map).length > 0);

/** BERTH_NODE_IPS_CALLERS: `{ "<cluster>" | "*": ["<role ARN>", …] }`, if set. */
const nodeCallersSchema = z.record(z.string(), z.array(z.string()));

/**
 * Whether the Lambda function traces every invocation (BERTH_TRACING, set by the stack from the
 * function's tracing mode); anything but `active` is pass-through.
 */
export function activeTracing(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.BERTH_TRACING === 'active';
}

/** The `KUBECONFIG` variable, for local commands that talk to a real cluster. */
export function kubeconfigFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return env.KUBECONFIG || undefined;
}

/**
 * `--region` and `--profile` for every AWS client a command makes: the SDK's default chains read
 * them from the environment, so setting them here reaches DynamoDB, EC2, CloudFormation and
 * Secrets Manager alike, exactly as the AWS CLI's own flags do.
 */
export function useAwsSettings(
  settings: { readonly region?: string; readonly profile?: string },
  env: NodeJS.ProcessEnv = process.env,
): void {
  if (settings.region) env.AWS_REGION = settings.region;
  if (settings.profile) env.AWS_PROFILE = settings.profile;
}

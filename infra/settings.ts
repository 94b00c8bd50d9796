/**
 * What a berth stack is built from: the CDK context (`-c cluster=NAME`, `-c config=FILE`,
 * `-c nodeIpsCallers=ARN,ARN`) and the config file, validated at synth time with the same schema
 * the functions use, so a bad config fails `cdk synth` with every problem listed at once instead
 * of failing every cold start after a deploy.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../shared/config/errors.js';
import { type BerthConfig, parseConfig } from '../shared/config/schema.js';

/** The validated inputs of one stack. */
export interface StackSettings {
  /** The parsed config; `cluster` is the EKS cluster's name. */
  readonly config: BerthConfig;
  /**
   * The config document as the user wrote it, cluster filled in. It, not `config`, goes into
   * BERTH_CONFIG: the functions parse it with the same schema (the parsed form holds CIDR
   * objects that do not survive JSON), and it has just been proven valid.
   */
  readonly configDocument: Readonly<Record<string, unknown>>;
  /** IAM principals (node roles) allowed to call the SigV4 ENI IP API; none by default. */
  readonly nodeIpsCallerArns: readonly string[];
  /** Concurrent executions reserved for (and capping) the admission function. */
  readonly admissionConcurrency: number;
  /** Which functions record a trace of every request they serve (see `TracingScope`). */
  readonly tracing: TracingScope;
  /** The VPC and subnets to run the functions in (a private-only EKS API endpoint), if any. */
  readonly privateNetwork?: {
    readonly vpcId: string;
    readonly subnetIds: readonly string[];
    readonly endpoints: boolean;
  };
}

/**
 * Reserved for the webhook: a flood of requests (anyone can reach the public URL) cannot take the
 * account's concurrency from other functions, nor can other functions starve the webhook. At
 * ~20 ms a review, 50 executions answer ~2,500 reviews a second; past that the URL answers 429
 * and the apiserver applies the webhook's failurePolicy.
 */
export const DEFAULT_ADMISSION_CONCURRENCY = 50;

/**
 * Which functions trace actively. Lambda samples an active function's requests at a fixed 1 a
 * second plus 5% of the rest, per function, and X-Ray's sampling rules cannot change that; on the
 * request path (one admission review per pod CREATE, binding and DELETE, one node IP call per
 * CNI ADD and DEL) that is most of the bill (`npm run bench -- cost`). `passes`: the scheduled and
 * queued functions trace every invocation, the admission and node IP functions pass tracing
 * through (they record a trace only when their caller sends a sampled trace header). `all`: every
 * function traces actively, for an investigation.
 */
export const TRACING_SCOPES = ['passes', 'all'] as const;
/** One of `TRACING_SCOPES`. */
export type TracingScope = (typeof TRACING_SCOPES)[number];

/** The CDK context keys berth reads. */
export interface StackContext {
  readonly cluster?: unknown;
  readonly config?: unknown;
  readonly nodeIpsCallers?: unknown;
  readonly admissionConcurrency?: unknown;
  readonly tracing?: unknown;
  readonly vpc?: unknown;
  readonly subnets?: unknown;
  readonly vpcEndpoints?: unknown;
}

const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;

function asText(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

function readDocument(
  path: string,
  readText: (path: string) => string,
  problems: string[],
): unknown {
  let text: string;
  try {
    text = readText(path);
  } catch (error) {
    problems.push(`-c config=${path}: cannot read the config file (${(error as Error).message})`);
    return {};
  }
  try {
    const document: unknown = JSON.parse(text);
    if (typeof document !== 'object' || document === null || Array.isArray(document)) {
      problems.push(`-c config=${path}: must hold one JSON object`);
      return {};
    }
    return document;
  } catch (error) {
    problems.push(`-c config=${path}: not valid JSON (${(error as Error).message})`);
    return {};
  }
}

/**
 * Reads and validates the stack's inputs. Throws ConfigError with one line per problem. Without
 * `-c cluster` the config's own `cluster` is used (so a plain `cdk synth` works); with both,
 * they must agree.
 */
export function stackSettings(
  context: StackContext,
  readText: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): StackSettings {
  const problems: string[] = [];
  const configPath = asText(context.config);
  const document = (configPath ? readDocument(configPath, readText, problems) : {}) as Record<
    string,
    unknown
  >;

  const cluster = asText(context.cluster);
  if (cluster !== undefined && document.cluster !== undefined && document.cluster !== cluster) {
    problems.push(
      `cluster: the config file says "${String(document.cluster)}" but -c cluster=${cluster}; one stack serves one cluster, make them agree`,
    );
  }
  const configDocument = cluster === undefined ? document : { ...document, cluster };

  const nodeIpsCallerArns = (asText(context.nodeIpsCallers) ?? '')
    .split(',')
    .map((arn) => arn.trim())
    .filter((arn) => arn !== '');
  for (const arn of nodeIpsCallerArns) {
    if (!ROLE_ARN.test(arn)) {
      problems.push(
        `-c nodeIpsCallers: "${arn}" is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)`,
      );
    }
  }

  const concurrencyText = asText(context.admissionConcurrency);
  const admissionConcurrency =
    concurrencyText === undefined ? DEFAULT_ADMISSION_CONCURRENCY : Number(concurrencyText);
  if (!Number.isInteger(admissionConcurrency) || admissionConcurrency < 1) {
    problems.push(
      `-c admissionConcurrency: "${concurrencyText}" is not a whole number of at least 1 (default ${DEFAULT_ADMISSION_CONCURRENCY})`,
    );
  }

  const tracingText = asText(context.tracing) ?? 'passes';
  const tracing = TRACING_SCOPES.find((scope) => scope === tracingText);
  if (tracing === undefined) {
    problems.push(
      `-c tracing: "${tracingText}" is not one of ${TRACING_SCOPES.join(', ')} (default passes: the request functions trace only what their caller samples)`,
    );
  }

  const vpcId = asText(context.vpc);
  const subnetIds = (asText(context.subnets) ?? '')
    .split(',')
    .map((subnet) => subnet.trim())
    .filter((subnet) => subnet !== '');
  if (vpcId !== undefined && !/^vpc-[0-9a-f]+$/.test(vpcId)) {
    problems.push(`-c vpc: "${vpcId}" is not a VPC id (vpc-0123456789abcdef0)`);
  }
  for (const subnet of subnetIds.filter((s) => !/^subnet-[0-9a-f]+$/.test(s))) {
    problems.push(`-c subnets: "${subnet}" is not a subnet id (subnet-0123456789abcdef0)`);
  }
  if ((vpcId === undefined) !== (subnetIds.length === 0)) {
    problems.push(
      '-c vpc and -c subnets go together: the VPC of a private EKS endpoint and the private subnets the functions run in',
    );
  }
  const privateNetwork =
    vpcId !== undefined && subnetIds.length > 0
      ? { vpcId, subnetIds, endpoints: asText(context.vpcEndpoints) !== 'false' }
      : undefined;

  let config: BerthConfig | undefined;
  try {
    config = parseConfig(configDocument);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  if (problems.length > 0 || config === undefined || tracing === undefined) {
    throw new ConfigError(problems);
  }
  return {
    config,
    configDocument,
    nodeIpsCallerArns,
    admissionConcurrency,
    tracing,
    ...(privateNetwork ? { privateNetwork } : {}),
  };
}

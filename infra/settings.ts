/**
 * What a berth stack is built from: the CDK context (`-c cluster=NAME` or
 * `-c clusters=NAME,NAME`, `-c config=FILE`, `-c nodeIpsCallers=ARN,ARN`,
 * `-c capacityCallers=ARN,ARN`, …) and the config
 * file, validated at synth time with the same schema the functions use, so a bad config fails
 * `cdk synth` with every problem listed at once instead of failing every cold start after a
 * deploy.
 */
import { readFileSync } from 'node:fs';
import { EVERY_CLUSTER, roleOf } from '../shared/clusters/node-callers.js';
import { parseClusterConfigs } from '../shared/config/clusters.js';
import { ConfigError } from '../shared/config/errors.js';
import type { NodeCallers } from '../shared/config/load.js';
import type { BerthConfig } from '../shared/config/schema.js';
import { stackNameFor } from '../shared/manifests/stack-outputs.js';
import { type PortRange, parsePortRange } from '../shared/net/port-range.js';

/** The validated inputs of one stack. */
export interface StackSettings {
  /** The stack's name: `berth-<cluster>` for one cluster, `-c stack` (default `berth`) for several. */
  readonly stackName: string;
  /** Every cluster the stack serves, parsed; `cluster` in each is the EKS cluster's name. */
  readonly configs: readonly BerthConfig[];
  /**
   * Whether the stack serves its clusters by name (`-c clusters`, or a config with a section
   * per cluster): each one's routes under `/clusters/<name>`, its resources in a scope of its
   * own, so adding or removing a cluster leaves every other's resources as they are. A
   * single-cluster stack keeps its plain paths and resource ids.
   */
  readonly byName: boolean;
  /**
   * The config document as the user wrote it, cluster (or clusters) filled in. It, not
   * `configs`, goes into BERTH_CONFIG: the functions parse it with the same schema (the parsed
   * form holds CIDR objects that do not survive JSON), and it has just been proven valid.
   */
  readonly configDocument: Readonly<Record<string, unknown>>;
  /** IAM principals (node roles) allowed to call the SigV4 ENI IP API; none by default. */
  readonly nodeIpsCallerArns: readonly string[];
  /**
   * In a stack of several clusters, which of them each caller may reach (`*`: every one, for a
   * role listed without a cluster); the node IP function checks it on every request.
   */
  readonly nodeIpsCallersByCluster?: NodeCallers;
  /** IAM roles (matchmakers) allowed to call the SigV4 capacity API; none by default. */
  readonly capacityCallerArns: readonly string[];
  /**
   * The account whose principals may assume the role the stack makes for the capacity API
   * (`-c capacityCallerAccount`), if any: a studio's matchmaker, which then needs no role of its
   * own granted by ARN.
   */
  readonly capacityCallerAccount?: string;
  /** Concurrent executions reserved for (and capping) the admission function. */
  readonly admissionConcurrency: number;
  /** Which functions record a trace of every request they serve (see `TracingScope`). */
  readonly tracing: TracingScope;
  /**
   * Encrypt the alarm topic with a customer managed KMS key ($1 a month, $1 more for each yearly
   * rotation kept, up to $3): alarm notifications carry alarm names and metric values, no data.
   */
  readonly alarmTopicKey: boolean;
  /**
   * The Global Accelerator custom routing accelerator the stack makes (`-c accelerator=true`):
   * its endpoint group becomes every config's `fronts.accelerator.endpointGroupArn`.
   */
  readonly accelerator?: StackAccelerator;
  /** The VPC and subnets to run the functions in (a private-only EKS API endpoint), if any. */
  readonly privateNetwork?: {
    readonly vpcId: string;
    readonly subnetIds: readonly string[];
    readonly endpoints: boolean;
  };
}

/** The accelerator a stack makes. */
export interface StackAccelerator {
  /** The endpoint subnets (`-c acceleratorSubnets`): where the game-server nodes run. */
  readonly subnetIds: readonly string[];
  /** The listener's public ports (`-c acceleratorPorts`, default `DEFAULT_ACCELERATOR_PORTS`). */
  readonly listenerPorts: PortRange;
  /** The destination ports: the host port range the config keeps for the accelerator. */
  readonly destinationPorts: PortRange;
}

/**
 * The public ports of the stack's accelerator unless `-c acceleratorPorts` says otherwise. Custom
 * routing maps each listener port onto one destination, so the range must hold every address of
 * the endpoint subnets times the destination ports (a /24 and 200 host ports: 51,200).
 */
export const DEFAULT_ACCELERATOR_PORTS = '1024-65535';

/**
 * What synthesis validates in place of the endpoint group ARN the stack makes: the functions get
 * the real one (a CloudFormation reference), which exists only at deploy.
 */
const PENDING_ENDPOINT_GROUP =
  'arn:aws:globalaccelerator::000000000000:accelerator/stack/listener/stack/endpoint-group/stack';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every `fronts.accelerator` section of a document: the shared one and each cluster's. */
function acceleratorSections(document: Json): Json[] {
  const sections = isObject(document.clusters) ? Object.values(document.clusters) : [];
  return [document, ...sections].flatMap((part) =>
    isObject(part) && isObject(part.fronts) && isObject(part.fronts.accelerator)
      ? [part.fronts.accelerator]
      : [],
  );
}

/**
 * The document with `endpointGroupArn` set in each `fronts.accelerator` (shared and per cluster):
 * the stack's accelerator, for the functions' BERTH_CONFIG.
 */
export function withEndpointGroupArn(document: Readonly<Json>, endpointGroupArn: string): Json {
  const fill = (part: unknown): unknown => {
    if (!isObject(part) || !isObject(part.fronts) || !isObject(part.fronts.accelerator))
      return part;
    return {
      ...part,
      fronts: { ...part.fronts, accelerator: { ...part.fronts.accelerator, endpointGroupArn } },
    };
  };
  const filled = fill(document) as Json;
  if (!isObject(document.clusters)) return filled;
  return {
    ...filled,
    clusters: Object.fromEntries(
      Object.entries(document.clusters).map(([name, section]) => [name, fill(section)]),
    ),
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
 * second plus 5% of the rest, per function, and X-Ray's sampling rules cannot change that: a pass
 * scheduled every minute is traced every time, one trace a minute per pass and cluster, and on
 * the request path (one admission review per pod CREATE, binding and DELETE, one node IP call per
 * CNI ADD and DEL) it would be most of the bill (`npm run bench -- cost`). `callers` (default):
 * every function passes tracing through, recording a trace only when its caller sends a sampled
 * trace header, so X-Ray costs with use. `passes`: the scheduled and queued functions trace every
 * invocation as well. `all`: every function traces actively, for an investigation.
 */
export const TRACING_SCOPES = ['callers', 'passes', 'all'] as const;
/** One of `TRACING_SCOPES`. */
export type TracingScope = (typeof TRACING_SCOPES)[number];

/** The CDK context keys berth reads. */
export interface StackContext {
  readonly cluster?: unknown;
  readonly clusters?: unknown;
  readonly stack?: unknown;
  readonly config?: unknown;
  readonly nodeIpsCallers?: unknown;
  readonly capacityCallers?: unknown;
  readonly capacityCallerAccount?: unknown;
  readonly admissionConcurrency?: unknown;
  readonly tracing?: unknown;
  readonly alarmTopicKey?: unknown;
  readonly vpc?: unknown;
  readonly subnets?: unknown;
  readonly vpcEndpoints?: unknown;
  readonly accelerator?: unknown;
  readonly acceleratorSubnets?: unknown;
  readonly acceleratorPorts?: unknown;
}

/** CloudFormation stack names. */
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/;

function asText(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

/** The entries of a comma-separated context list, trimmed, empty ones dropped. */
function listOf(value: unknown): string[] {
  return (asText(value) ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
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
 * The document the functions get, with the clusters the context names: `-c cluster` fills a
 * single-cluster document's `cluster`; `-c clusters` gives a document without sections one
 * (empty) section per name, and must name exactly the sections of a document that has them.
 */
function clusterDocument(
  context: StackContext,
  document: Record<string, unknown>,
  problems: string[],
): { document: Record<string, unknown>; byName: boolean } {
  const cluster = asText(context.cluster);
  const clusterList = asText(context.clusters);
  const sections = document.clusters;
  const hasSections = typeof sections === 'object' && sections !== null && !Array.isArray(sections);
  if (clusterList === undefined) {
    if (hasSections || 'clusters' in document) {
      if (cluster !== undefined) {
        problems.push(
          `-c cluster=${cluster}: the config file has a section per cluster; deploy them with -c clusters=${hasSections ? Object.keys(sections).join(',') : 'NAME,NAME'}`,
        );
      }
      return { document, byName: true };
    }
    if (cluster !== undefined && document.cluster !== undefined && document.cluster !== cluster) {
      problems.push(
        `cluster: the config file says "${String(document.cluster)}" but -c cluster=${cluster}; one stack serves one cluster, make them agree`,
      );
    }
    return { document: cluster === undefined ? document : { ...document, cluster }, byName: false };
  }
  if (cluster !== undefined) {
    problems.push('-c cluster and -c clusters: give one (-c clusters=NAME,NAME for several)');
  }
  const names = clusterList
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const repeated = names.filter((name, index) => names.indexOf(name) !== index);
  if (names.length === 0 || repeated.length > 0) {
    problems.push(
      names.length === 0
        ? '-c clusters: name at least one cluster (-c clusters=games-a,games-b)'
        : `-c clusters: ${repeated.join(', ')} named twice`,
    );
  }
  if (!hasSections) {
    if (document.cluster !== undefined) {
      problems.push(
        `cluster: the config file names one cluster ("${String(document.cluster)}") but -c clusters names ${names.join(', ')}; remove "cluster" and give each cluster a section under "clusters" if they differ`,
      );
    }
    const { cluster: _one, ...shared } = document;
    return {
      document: { ...shared, clusters: Object.fromEntries(names.map((name) => [name, {}])) },
      byName: true,
    };
  }
  const sectionNames = Object.keys(sections);
  const missing = names.filter((name) => !sectionNames.includes(name));
  const unlisted = sectionNames.filter((name) => !names.includes(name));
  if (missing.length > 0 || unlisted.length > 0) {
    problems.push(
      `-c clusters: must name the config file's sections (${sectionNames.join(', ')})${missing.length > 0 ? `; no section for ${missing.join(', ')}` : ''}${unlisted.length > 0 ? `; not named: ${unlisted.join(', ')}` : ''}`,
    );
  }
  return { document, byName: true };
}

/**
 * Reads and validates the stack's inputs. Throws ConfigError with one line per problem. Without
 * `-c cluster` the config's own `cluster` is used (so a plain `cdk synth` works); with both,
 * they must agree. A config with a section per cluster, or `-c clusters`, makes a stack that
 * serves each cluster by name.
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

  const { document: configDocument, byName } = clusterDocument(context, document, problems);
  const stackText = asText(context.stack);
  if (stackText !== undefined && !byName) {
    problems.push(
      '-c stack: a single-cluster stack is named berth-<cluster>; -c stack names a stack of several (-c clusters=…)',
    );
  }
  if (stackText !== undefined && !STACK_NAME.test(stackText)) {
    problems.push(
      `-c stack: "${stackText}" is not a CloudFormation stack name (a letter, then letters, digits and -)`,
    );
  }

  // ARN (every cluster of the stack) or CLUSTER=ARN (that cluster's node role only).
  const callerEntries = listOf(context.nodeIpsCallers).map((entry) => {
    const cut = entry.indexOf('=');
    if (entry.startsWith('arn:') || cut <= 0) return { arn: entry, cluster: EVERY_CLUSTER };
    return { arn: entry.slice(cut + 1), cluster: entry.slice(0, cut) };
  });
  for (const { arn, cluster } of callerEntries) {
    if (roleOf(arn) === undefined) {
      problems.push(
        `-c nodeIpsCallers: "${arn}" is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)`,
      );
    } else if (cluster !== EVERY_CLUSTER && !byName) {
      problems.push(
        `-c nodeIpsCallers: "${cluster}=${arn}" names a cluster; that is for a stack of several clusters (-c clusters=…)`,
      );
    }
  }
  const nodeIpsCallerArns = [...new Set(callerEntries.map(({ arn }) => arn))];
  const nodeIpsCallersByCluster: Record<string, string[]> = {};
  for (const { arn, cluster } of callerEntries) {
    nodeIpsCallersByCluster[cluster] = [...(nodeIpsCallersByCluster[cluster] ?? []), arn];
  }

  // The capacity API answers for every cluster of the stack at once: roles only, no CLUSTER=.
  const capacityCallerArns = [...new Set(listOf(context.capacityCallers))];
  for (const arn of capacityCallerArns.filter((entry) => roleOf(entry) === undefined)) {
    problems.push(
      `-c capacityCallers: "${arn}" is not an IAM role ARN; list the matchmakers' roles as arn:aws:iam::123456789012:role/NAME, or give -c capacityCallerAccount=ACCOUNT for a role the stack makes`,
    );
  }
  const capacityCallerAccount = asText(context.capacityCallerAccount);
  if (capacityCallerAccount !== undefined && !/^\d{12}$/.test(capacityCallerAccount)) {
    problems.push(
      `-c capacityCallerAccount: "${capacityCallerAccount}" is not an AWS account id; give the matchmaker's account as its 12 digits (123456789012)`,
    );
  }

  const concurrencyText = asText(context.admissionConcurrency);
  const admissionConcurrency =
    concurrencyText === undefined ? DEFAULT_ADMISSION_CONCURRENCY : Number(concurrencyText);
  if (!Number.isInteger(admissionConcurrency) || admissionConcurrency < 1) {
    problems.push(
      `-c admissionConcurrency: "${concurrencyText}" is not a whole number of at least 1 (default ${DEFAULT_ADMISSION_CONCURRENCY})`,
    );
  }

  const tracingText = asText(context.tracing) ?? 'callers';
  const tracing = TRACING_SCOPES.find((scope) => scope === tracingText);
  if (tracing === undefined) {
    problems.push(
      `-c tracing: "${tracingText}" is not one of ${TRACING_SCOPES.join(', ')} (default callers: every function traces only what its caller samples)`,
    );
  }
  const keyText = asText(context.alarmTopicKey) ?? 'false';
  if (keyText !== 'true' && keyText !== 'false') {
    problems.push(
      `-c alarmTopicKey: "${keyText}" is not true or false (default false: the alarm topic is encrypted in transit only)`,
    );
  }

  const vpcId = asText(context.vpc);
  const subnetIds = listOf(context.subnets);
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

  const acceleratorText = asText(context.accelerator) ?? 'false';
  if (acceleratorText !== 'true' && acceleratorText !== 'false') {
    problems.push(
      `-c accelerator: "${acceleratorText}" is not true or false (default false: the config names an existing endpoint group, if any)`,
    );
  }
  const makesAccelerator = acceleratorText === 'true';
  const acceleratorSubnets = listOf(context.acceleratorSubnets);
  for (const subnet of acceleratorSubnets.filter((s) => !/^subnet-[0-9a-f]+$/.test(s))) {
    problems.push(
      `-c acceleratorSubnets: "${subnet}" is not a subnet id (subnet-0123456789abcdef0)`,
    );
  }
  const listenerPorts = parsePortRange(
    asText(context.acceleratorPorts) ?? DEFAULT_ACCELERATOR_PORTS,
  );
  if (typeof listenerPorts === 'string') {
    problems.push(
      `-c acceleratorPorts: ${listenerPorts} (write it as "${DEFAULT_ACCELERATOR_PORTS}")`,
    );
  }
  if (makesAccelerator) {
    const sections = acceleratorSections(configDocument);
    if (sections.length === 0) {
      problems.push(
        '-c accelerator=true: the config has no fronts.accelerator; give it one naming the host port range kept for the accelerator ({ "range": "NAME" })',
      );
    }
    if (sections.some((section) => section.endpointGroupArn !== undefined)) {
      problems.push(
        '-c accelerator=true: the stack makes the endpoint group; remove fronts.accelerator.endpointGroupArn from the config (or drop -c accelerator to use that one)',
      );
    }
    if (acceleratorSubnets.length === 0) {
      problems.push(
        '-c accelerator=true needs -c acceleratorSubnets=subnet-…,subnet-…: the subnets of the game-server nodes',
      );
    }
  } else if (acceleratorSubnets.length > 0 || context.acceleratorPorts !== undefined) {
    problems.push(
      '-c acceleratorSubnets and -c acceleratorPorts shape the accelerator the stack makes: add -c accelerator=true',
    );
  }

  let configs: BerthConfig[] | undefined;
  try {
    configs = parseClusterConfigs(
      makesAccelerator
        ? withEndpointGroupArn(configDocument, PENDING_ENDPOINT_GROUP)
        : configDocument,
    );
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  // One accelerator, one endpoint group: one destination range, whichever cluster uses it.
  const destinationRanges = new Map<string, PortRange>();
  for (const config of makesAccelerator ? (configs ?? []) : []) {
    const name = config.fronts.accelerator?.range;
    if (name === undefined) continue;
    // A range the config does not have failed parsing already (shared/config/cross-field.ts).
    const range = config.hostPortRanges[name];
    if (range !== undefined) destinationRanges.set(`${range.base}+${range.size}`, range);
  }
  if (destinationRanges.size > 1) {
    problems.push(
      "fronts.accelerator.range: the stack's one accelerator has one destination port range; every cluster's range must be the same ports",
    );
  }
  const destinationPorts = [...destinationRanges.values()][0];
  const accelerator =
    makesAccelerator && destinationPorts !== undefined && typeof listenerPorts !== 'string'
      ? { subnetIds: acceleratorSubnets, listenerPorts, destinationPorts }
      : undefined;
  const served = (configs ?? []).map((config) => config.cluster);
  for (const cluster of Object.keys(nodeIpsCallersByCluster)) {
    if (cluster !== EVERY_CLUSTER && configs && !served.includes(cluster)) {
      problems.push(
        `-c nodeIpsCallers: cluster "${cluster}" is not one of the stack's (${served.join(', ')})`,
      );
    }
  }
  if (problems.length > 0 || configs === undefined || tracing === undefined) {
    throw new ConfigError(problems);
  }
  const first = configs[0] as BerthConfig;
  return {
    stackName: byName ? (stackText ?? 'berth') : stackNameFor(first.cluster),
    configs,
    byName,
    configDocument,
    nodeIpsCallerArns,
    ...(byName ? { nodeIpsCallersByCluster } : {}),
    capacityCallerArns,
    ...(capacityCallerAccount === undefined ? {} : { capacityCallerAccount }),
    admissionConcurrency,
    tracing,
    alarmTopicKey: keyText === 'true',
    ...(privateNetwork ? { privateNetwork } : {}),
    ...(accelerator ? { accelerator } : {}),
  };
}

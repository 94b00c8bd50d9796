/**
 * One berth Lambda function: `functions/<name>/handler.ts` bundled locally with esbuild (never
 * Docker), Node.js 24 on arm64, its own role with only its log group, the table and
 * `eks:DescribeCluster` (bindings, repair, scale and the ENI pools all read pods or nodes), or,
 * for a function that answers from the passes' records (the capacity API), only reads of table
 * items and no cluster at all. Callers add the rest of what one function needs.
 */
import { join } from 'node:path';
import { type Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { wildcardFinding } from './permissions.js';
import type { PrivateNetwork } from './private-network.js';

/** The berth functions, each a directory under `functions/`. */
export const FUNCTION_NAMES = [
  'admission',
  'settle',
  'repair',
  'scale',
  'eni',
  'node-ips',
] as const;
/** One of `FUNCTION_NAMES`. */
export type FunctionName = (typeof FUNCTION_NAMES)[number];
/**
 * The functions a stack has only when its config asks for what they do: `fronts` (the public
 * fronts worker and pass) when some cluster has `fronts.nlb` or `fronts.accelerator`.
 */
export const OPTIONAL_FUNCTION_NAMES = ['fronts'] as const;
/**
 * The functions that answer from what the passes recorded in the table and reach no cluster:
 * `capacity`, the capacity API. Their roles read table items by key and nothing more, and they
 * get no EKS access entry.
 */
export const RECORD_FUNCTION_NAMES = ['capacity'] as const;
/** One of `RECORD_FUNCTION_NAMES`. */
export type RecordFunctionName = (typeof RECORD_FUNCTION_NAMES)[number];
/** One of `FUNCTION_NAMES`, `RECORD_FUNCTION_NAMES` or `OPTIONAL_FUNCTION_NAMES`. */
export type AnyFunctionName =
  | FunctionName
  | RecordFunctionName
  | (typeof OPTIONAL_FUNCTION_NAMES)[number];

const PROJECT_ROOT = join(import.meta.dirname, '..', '..');

/** Where a function's entry point lives. */
export function handlerEntry(name: AnyFunctionName): string {
  return join(PROJECT_ROOT, 'functions', name, 'handler.ts');
}

/**
 * ESM bundles have no `require`; a CommonJS dependency that calls it (Powertools, parts of
 * client-node) gets one made from the module's own URL (Powertools' documented banner).
 */
const REQUIRE_BANNER =
  "import { createRequire as __berthCreateRequire } from 'node:module'; const require = __berthCreateRequire(import.meta.url);";

/** Where bundling finds the sources and their locked dependencies. */
export const BUNDLED_SOURCE = {
  projectRoot: PROJECT_ROOT,
  depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
} as const;

/** How every function of the stack is bundled: locally with esbuild, never in Docker. */
export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: 'node24',
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  banner: REQUIRE_BANNER,
  // The SDK is bundled rather than taken from the runtime: the functions then run the exact
  // client versions the tests and aws-sdk-client-mock ran against (the runtime's copy changes
  // under us), and a minified, tree-shaken bundle loads fewer files at cold start than the
  // runtime's unminified node_modules, which the admission webhook's latency budget cares about
  // more than a few hundred kB of package size.
  bundleAwsSDK: true,
  externalModules: [],
  forceDockerBundling: false,
};

/**
 * What a function may do with the table and the clusters: `cluster` reads and writes the table
 * and talks to each cluster (describes it, and the stack gives it an EKS access entry);
 * `records` (the `RECORD_FUNCTION_NAMES`) reads table items by key and reaches no cluster.
 */
export type FunctionAccess = 'cluster' | 'records';

const isRecordFunction = (name: AnyFunctionName): name is RecordFunctionName =>
  (RECORD_FUNCTION_NAMES as readonly string[]).includes(name);

/** Props of a berth function. */
export interface BerthFunctionProps {
  readonly name: AnyFunctionName;
  readonly description: string;
  readonly table: ITableV2;
  /** The validated config document (BERTH_CONFIG). */
  readonly configDocument: Readonly<Record<string, unknown>>;
  /** The EKS clusters the function talks to (the config's, one or a section each). */
  readonly clusters: readonly string[];
  readonly memorySize: number;
  readonly timeout: Duration;
  /** Extra environment variables (e.g. BERTH_WEBHOOK_SECRETS). */
  readonly environment?: Readonly<Record<string, string>>;
  /** Concurrent executions reserved for this function, and its cap. */
  readonly reservedConcurrency?: number;
  /** The VPC placement, for a cluster whose API endpoint is private only. */
  readonly network?: PrivateNetwork;
  /**
   * Active: Lambda samples the function's requests (1 a second and 5% of the rest) and Powertools
   * Tracer records each sampled one through the SDK calls it makes. PassThrough: a trace only when
   * the caller sent a sampled trace header.
   */
  readonly tracing: lambda.Tracing;
}

/** A bundled berth function with its role and log group. */
export class BerthFunction extends Construct {
  /** The function. */
  readonly function: NodejsFunction;
  /** Its execution role: the principal of its EKS access entry. */
  readonly role: iam.Role;
  /** Where it logs (one month). */
  readonly logGroup: logs.LogGroup;
  /** What it may do with the table and the clusters. */
  readonly access: FunctionAccess;

  constructor(scope: Construct, id: string, props: BerthFunctionProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const clusters = props.clusters.join(', ');
    this.access = isRecordFunction(props.name) ? 'records' : 'cluster';

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // An own role instead of AWSLambdaBasicExecutionRole: that managed policy may write to any
    // log group in the account, this one only to the function's own.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `berth ${props.name} function for cluster${props.clusters.length > 1 ? 's' : ''} ${clusters}`,
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );
    if (this.access === 'cluster') {
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          // Each cluster's endpoint and CA, read once per container to reach its Kubernetes API.
          actions: ['eks:DescribeCluster'],
          resources: props.clusters.map((cluster) =>
            stack.formatArn({ service: 'eks', resource: 'cluster', resourceName: cluster }),
          ),
        }),
      );
    }

    this.function = new NodejsFunction(this, 'Function', {
      entry: handlerEntry(props.name),
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      ...(props.reservedConcurrency === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrency }),
      role: this.role,
      logGroup: this.logGroup,
      tracing: props.tracing,
      // JSON logs, the platform's own lines (START, END, REPORT) only at WARN: they would be a
      // third of every request's log bytes, and Lambda's free metrics carry their durations.
      // Powertools Logger follows the application level Lambda sets (AWS_LAMBDA_LOG_LEVEL).
      loggingFormat: lambda.LoggingFormat.JSON,
      systemLogLevelV2: lambda.SystemLogLevel.WARN,
      applicationLogLevelV2: lambda.ApplicationLogLevel.INFO,
      ...(props.network
        ? {
            vpc: props.network.vpc,
            vpcSubnets: { subnets: [...props.network.subnets] },
            securityGroups: [props.network.securityGroup],
          }
        : {}),
      ...BUNDLED_SOURCE,
      environment: {
        // Whether the function loads Powertools Tracer at all (see shared/app/observability.ts).
        BERTH_TRACING: props.tracing === lambda.Tracing.ACTIVE ? 'active' : 'pass-through',
        BERTH_CONFIG: JSON.stringify(props.configDocument),
        BERTH_TABLE: props.table.tableName,
        // esbuild's source maps turn minified stack traces back into file:line.
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
      bundling: BUNDLING,
    });
    // Tracing (active or pass-through) grants xray:PutTraceSegments and xray:PutTelemetryRecords,
    // which X-Ray cannot scope to a resource.
    Validations.of(this.role).acknowledge({
      id: wildcardFinding('*'),
      reason:
        'X-Ray trace uploads (PutTraceSegments, PutTelemetryRecords) support no resource-level permissions; every other statement of this role is scoped, and those that cannot be carry their own reason.',
    });
    if (this.access === 'cluster') {
      props.table.grantReadWriteData(this.role);
    } else {
      // Items by key only: `grantReadData` would add Query and Scan, which would read every
      // allocation of the table, and the stream reads.
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'],
          resources: [props.table.tableArn],
        }),
      );
    }
  }
}

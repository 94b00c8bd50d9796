/**
 * berth for one EKS cluster or several: the table, the seven functions with their own
 * least-privilege roles, the webhook endpoint, the settle queue, the ENI IP API, the read-only
 * capacity API (and the matchmaker's role, if asked for), the EC2 instance-state rule, alarms
 * and a dashboard, shared; and per cluster a webhook path secret, pass schedules, EKS access
 * entries and node pool permissions. A stack of several clusters keeps each one's resources in a
 * scope named after it (`Cluster-<name>`), so adding or removing a cluster changes no other
 * cluster's resources.
 *
 * The functions reach the cluster's API endpoint from outside any VPC by default; for a cluster
 * whose endpoint is private only, `-c vpc=… -c subnets=…` runs them in its VPC.
 */
import {
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Tags,
  Validations,
} from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { BerthConfig } from '../shared/config/schema.js';
import { BERTH_TAGS } from '../shared/ec2/network.js';
import { ENI_INVOCATIONS } from '../shared/eni/policy.js';
import { hasFronts } from '../shared/fronts/front-spec.js';
import { clusterClaimExport, STACK_OUTPUTS } from '../shared/manifests/stack-outputs.js';
import { WEBHOOK_TIMEOUT_SECONDS } from '../shared/manifests/webhooks.js';
import { formatCidr } from '../shared/net/ip.js';
import { formatPortRange } from '../shared/net/port-range.js';
import { DEFAULT_REPAIR_LEASE_TTL_MS } from '../shared/repair/pass.js';
import { SCALE_POLICY_DEFAULTS } from '../shared/scale/policy.js';
import { TABLE_SCHEMA } from '../shared/store/table.js';
import {
  type AnyFunctionName,
  BerthFunction,
  type FunctionName,
  type RecordFunctionName,
} from './constructs/berth-function.js';
import { ClusterAccess } from './constructs/cluster-access.js';
import { CustomRoutingAccelerator } from './constructs/custom-routing-accelerator.js';
import { frontsPermissions, poolReadPermissions } from './constructs/fronts-permissions.js';
import { Monitoring } from './constructs/monitoring.js';
import { PassSchedule } from './constructs/pass-schedule.js';
import {
  attachPermissions,
  eniNetworkPermissions,
  grantPermissions,
  nodePoolPermissions,
} from './constructs/permissions.js';
import { PrivateNetwork } from './constructs/private-network.js';
import { exposeAdmission, WebhookSecret } from './constructs/webhook-endpoint.js';
import { WorkQueue } from './constructs/work-queue.js';
import { type StackSettings, withEndpointGroupArn } from './settings.js';

/** How the stack makes one of its functions (see `BerthStack`'s `make`). */
type MakeFunction = (
  name: AnyFunctionName,
  id: string,
  environment?: Record<string, string>,
  reservedConcurrency?: number,
) => BerthFunction;

/**
 * A berth API on a function URL with IAM auth, granted to `callers` and output under `output`:
 * the callers sign with SigV4, and the URL refuses every unsigned or ungranted caller before any
 * code runs.
 */
function exposeSigV4(
  api: BerthFunction,
  callers: readonly iam.IRole[],
  output: { readonly id: string; readonly key: string; readonly description: string },
): void {
  const url = api.function.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.AWS_IAM });
  for (const role of callers) api.function.grantInvokeUrl(role);
  new CfnOutput(Stack.of(api), output.id, {
    key: output.key,
    value: url.url,
    description: output.description,
  });
}

/** Props of a berth stack. */
export interface BerthStackProps extends StackProps {
  readonly settings: StackSettings;
}

/**
 * How long before its lease expires a leased pass's Lambda is killed. A pass must be dead before
 * its lease can pass to the next holder, or two passes write at once; 30 s covers clock skew
 * between Lambda and DynamoDB and the pass's last store round trips.
 */
const LEASE_MARGIN_MS = 30_000;

/**
 * The fronts function's time limit. A fronts pass that takes a lease must hold it at least 30 s
 * longer (LEASE_MARGIN_MS), as the other leased passes do.
 */
export const FRONTS_TIMEOUT_SECONDS = 90;

/**
 * Front work (bind, release) handed to one fronts invocation at most: a burst of bindings within
 * the batching window is one invocation, so one AllowCustomRoutingTraffic per endpoint subnet
 * (it takes 100 addresses times 100 ports) covers it.
 */
const FRONTS_BATCH_SIZE = 100;

/** How often the fronts pass repairs fronts (orphaned listeners and destinations, missing ones). */
const FRONTS_PASS_SECONDS = 60;

/** Size and time limit of each function. */
/** The functions that serve one request per pod event; they trace actively only with `-c tracing=all`. */
const REQUEST_FUNCTIONS: ReadonlySet<AnyFunctionName> = new Set([
  'admission',
  'node-ips',
  'capacity',
]);

const FUNCTION_SIZING: Readonly<
  Record<AnyFunctionName, { memorySize: number; timeout: Duration }>
> = {
  // More memory is more CPU: a faster cold start for the call the apiserver waits on. The
  // timeout stays under the webhook's own, so the apiserver gets an error it can apply its
  // failurePolicy to, not a hang until its deadline.
  admission: { memorySize: 1024, timeout: Duration.seconds(WEBHOOK_TIMEOUT_SECONDS - 1) },
  // Up to ten looks a batch, each a record read, a Kubernetes GET and a few writes.
  settle: { memorySize: 512, timeout: Duration.seconds(30) },
  // Lists every Service and pod (paged) and diffs them against the store in memory.
  // Leased passes time out before their lease TTL (see LEASE_MARGIN_MS).
  repair: {
    memorySize: 1024,
    timeout: Duration.millis(DEFAULT_REPAIR_LEASE_TTL_MS - LEASE_MARGIN_MS),
  },
  scale: {
    memorySize: 512,
    timeout: Duration.millis(SCALE_POLICY_DEFAULTS.leaseTtlMs - LEASE_MARGIN_MS),
  },
  // EC2 calls under the shared rate budget may wait for tokens. Both ENI functions are killed
  // before a pool lease they took can expire (ENI_INVOCATIONS).
  eni: {
    memorySize: 512,
    timeout: Duration.millis(ENI_INVOCATIONS.work.leaseMs - LEASE_MARGIN_MS),
  },
  // A pod start waits on it; an assignment may need one EC2 call.
  'node-ips': {
    memorySize: 512,
    timeout: Duration.millis(ENI_INVOCATIONS.request.leaseMs - LEASE_MARGIN_MS),
  },
  // One BatchGetItem for up to 100 clusters; its few resends of unprocessed keys fit well inside.
  capacity: { memorySize: 512, timeout: Duration.seconds(10) },
  // A burst of up to 100 bindings (three ELBv2 calls each for an NLB port, paid from the account
  // rate budget, which may wait for tokens), or one fronts pass.
  fronts: { memorySize: 512, timeout: Duration.seconds(FRONTS_TIMEOUT_SECONDS) },
};

const DESCRIPTIONS: Readonly<Record<AnyFunctionName, string>> = {
  admission: 'berth admission webhook: host ports, Service IPs and node ports, binding addresses',
  settle: 'berth settle step: frees Service values once the apiserver has committed the change',
  repair: 'berth repair pass: reconciles allocations with the cluster',
  scale: 'berth node scale pass: packs game servers, cordons and removes empty nodes',
  eni: 'berth ENI pool pass: refills, trims and garbage-collects secondary IPs',
  'node-ips': 'berth ENI IP assignment API (SigV4)',
  capacity: "berth capacity API (SigV4): reads the passes' capacity records, nothing else",
  fronts: 'berth public fronts: NLB listeners and Global Accelerator destinations per game server',
};

/** What the stack makes for one cluster it serves. */
interface ClusterPart {
  readonly config: BerthConfig;
  /** Where its resources live: the stack itself for a single-cluster stack. */
  readonly scope: Construct;
  readonly webhookSecret: WebhookSecret;
}

/** One berth deployment, for the clusters named in the settings. */
export class BerthStack extends Stack {
  /** The allocation table. */
  readonly table: dynamodb.TableV2;
  /** The functions by name. */
  readonly functions: Readonly<Record<FunctionName | RecordFunctionName, BerthFunction>>;
  /** The public fronts worker and pass, where some cluster's config has a front. */
  readonly fronts?: { readonly function: BerthFunction; readonly queue: WorkQueue };

  constructor(scope: Construct, id: string, props: BerthStackProps) {
    super(scope, id, props);
    const {
      configs,
      byName,
      configDocument,
      nodeIpsCallerArns,
      admissionConcurrency,
      tracing,
      privateNetwork,
    } = props.settings;
    const clusterNames = configs.map((config) => config.cluster);
    // CloudFormation takes no tags on a dashboard.
    const clusterTag = (scope: Construct, cluster: string) =>
      Tags.of(scope).add(BERTH_TAGS.cluster, cluster, {
        excludeResourceTypes: ['AWS::CloudWatch::Dashboard'],
      });
    if (!byName) clusterTag(this, clusterNames[0] as string);

    this.table = new dynamodb.TableV2(this, 'Table', {
      partitionKey: { name: TABLE_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_SCHEMA.sortKey, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: TABLE_SCHEMA.timeToLiveAttribute,
      billing: dynamodb.Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      // The allocations are the truth about which Service owns which IP: never dropped with the stack.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    new CfnOutput(this, 'TableNameOutput', {
      key: STACK_OUTPUTS.tableName,
      value: this.table.tableName,
    });

    const clusters: ClusterPart[] = configs.map((config) => {
      const scope = byName ? new Construct(this, `Cluster-${config.cluster}`) : this;
      if (byName) clusterTag(scope, config.cluster);
      const webhookSecret = new WebhookSecret(scope, 'WebhookSecret', { cluster: config.cluster });
      // One stack per cluster: export names are unique in an account and Region, so a second
      // stack claiming the cluster (two tables handing out its values) fails to deploy.
      new CfnOutput(scope, 'ClusterClaim', {
        value: config.cluster,
        exportName: clusterClaimExport(config.cluster),
        description: 'This stack serves the cluster; no other berth stack may',
      });
      return { config, scope, webhookSecret };
    });
    const network = privateNetwork
      ? new PrivateNetwork(this, 'PrivateNetwork', {
          ...privateNetwork,
          loadBalancing: configs.some((config) => config.fronts.nlb !== undefined),
        })
      : undefined;
    // The custom routing accelerator the stack makes (-c accelerator=true): its endpoint group is
    // every config's fronts.accelerator.endpointGroupArn in the functions' BERTH_CONFIG.
    const accelerator = props.settings.accelerator
      ? new CustomRoutingAccelerator(this, 'Accelerator', {
          // Global Accelerator names: at most 64 characters.
          name: props.settings.stackName.slice(0, 64),
          ...props.settings.accelerator,
          tags: { 'berth.dev/stack': props.settings.stackName },
        })
      : undefined;
    if (accelerator) {
      new CfnOutput(this, 'AcceleratorEndpointGroupArnOutput', {
        key: STACK_OUTPUTS.acceleratorEndpointGroupArn,
        value: accelerator.endpointGroupArn,
        description:
          "The custom routing endpoint group the stack made (the functions' fronts.accelerator.endpointGroupArn)",
      });
      new CfnOutput(this, 'AcceleratorIpAddressesOutput', {
        key: STACK_OUTPUTS.acceleratorIpAddresses,
        value: accelerator.ipAddresses,
        description:
          "The accelerator's static addresses, comma-separated: players dial one of them",
      });
    }
    const functionConfig = accelerator
      ? withEndpointGroupArn(configDocument, accelerator.endpointGroupArn)
      : configDocument;
    const make: MakeFunction = (name, id, environment, reservedConcurrency) =>
      new BerthFunction(this, id, {
        name,
        description: DESCRIPTIONS[name],
        table: this.table,
        configDocument: functionConfig,
        clusters: clusterNames,
        ...FUNCTION_SIZING[name],
        tracing:
          tracing === 'all' || (tracing === 'passes' && !REQUEST_FUNCTIONS.has(name))
            ? lambda.Tracing.ACTIVE
            : lambda.Tracing.PASS_THROUGH,
        ...(environment ? { environment } : {}),
        ...(reservedConcurrency === undefined ? {} : { reservedConcurrency }),
        ...(network ? { network } : {}),
      });

    // Each cluster's path secret by cluster: the admission function's environment, and the output
    // `berth manifests --stack --cluster` reads.
    const secretArns = this.toJsonString(
      Object.fromEntries(
        clusters.map(({ config, webhookSecret }) => [
          config.cluster,
          webhookSecret.secret.secretArn,
        ]),
      ),
    );
    const admission = make(
      'admission',
      'Admission',
      { BERTH_WEBHOOK_SECRETS: secretArns },
      admissionConcurrency,
    );
    // Read during each container's INIT, then compared on every request.
    for (const { webhookSecret } of clusters) webhookSecret.secret.grantRead(admission.role);
    exposeAdmission(this, admission.function, { byName });
    if (byName) {
      new CfnOutput(this, 'WebhookSecretArnsOutput', {
        key: STACK_OUTPUTS.webhookSecretArns,
        value: secretArns,
        description: "Each cluster's webhook path secret (berth manifests --stack --cluster)",
      });
    } else {
      new CfnOutput(this, 'WebhookSecretArnOutput', {
        key: STACK_OUTPUTS.webhookSecretArn,
        value: (clusters[0] as ClusterPart).webhookSecret.secret.secretArn,
        description: 'Secret whose value is the last path segment of the webhook URL',
      });
    }

    // What a Service gives back is freed by the settle function once the apiserver has stored
    // the change; admission puts the owner on the queue, the settle function looks it up.
    const settle = make('settle', 'Settle');
    // One dead-letter queue for everything that failed for good: a scheduled pass, an instance
    // event, a settle task that kept failing. Its one alarm reports each of them (one alarm
    // metric, not one per queue); the message says which.
    const deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      retentionPeriod: Duration.days(14),
      enforceSSL: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
    });
    Validations.of(deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is the dead-letter queue of the schedules, the instance-state rule and the settle queue.',
    });
    const settleQueue = new WorkQueue(this, 'SettleQueue', {
      consumer: settle.function,
      producers: [admission.role],
      consumerTimeout: FUNCTION_SIZING.settle.timeout,
      deadLetterQueue,
      // Up to ten looks a batch (the settle function's timeout is sized for ten).
      batchSize: 10,
      maxBatchingWindow: Duration.seconds(1),
    });
    for (const fn of [admission, settle]) {
      fn.function.addEnvironment('BERTH_SETTLE_QUEUE', settleQueue.queue.queueUrl);
    }

    const repair = make('repair', 'Repair');
    const scale = make('scale', 'Scale');
    // An admission that finds the last pass's slack used up asks the scale function for a
    // scale-up pass (an asynchronous invoke, at most one per 10 s per cluster), so the deployed
    // pass reacts as `berth serve` does instead of a minute later.
    admission.function.addEnvironment('BERTH_SCALE_FUNCTION', scale.function.functionName);
    admission.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [scale.function.functionArn],
      }),
    );
    const eni = make('eni', 'Eni');
    // An assign that leaves its pool low hands a background refill to the ENI function (an
    // asynchronous invoke), so the node agent's request does not wait for EC2.
    const nodeIps = make('node-ips', 'NodeIps', {
      BERTH_ENI_FUNCTION: eni.function.functionName,
      // Which cluster each node role may reach, where the stack serves several.
      ...(props.settings.nodeIpsCallersByCluster
        ? { BERTH_NODE_IPS_CALLERS: JSON.stringify(props.settings.nodeIpsCallersByCluster) }
        : {}),
    });
    // The unqualified function only (`grantInvoke` would add every version and alias, `:*`).
    nodeIps.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [eni.function.functionArn],
      }),
    );
    // The pass and the API manage the same pools: both may create, fill and drain berth's ENIs.
    grantPermissions(eni.role, eniNetworkPermissions(this, clusterNames));
    grantPermissions(nodeIps.role, eniNetworkPermissions(this, clusterNames));
    // The callers are node agents with IAM roles.
    exposeSigV4(
      nodeIps,
      nodeIpsCallerArns.map((arn, index) =>
        iam.Role.fromRoleArn(this, `NodeIpsCaller${index}`, arn, { mutable: false }),
      ),
      {
        id: 'NodeIpsUrlOutput',
        key: STACK_OUTPUTS.nodeIpsUrl,
        description: 'ENI IP assignment API; callers sign with SigV4 (service lambda)',
      },
    );

    const capacity = this.capacityApi(make, props.settings);

    this.functions = { admission, settle, repair, scale, eni, 'node-ips': nodeIps, capacity };

    // Public fronts: a worker fed by a queue (admission puts a game server's binding and
    // deletion on it; releases that must wait come back with a delay) and a scheduled pass of
    // the same function, only where a cluster's config asks for a front (nothing to pay for
    // otherwise).
    const frontedClusters = clusters.filter(({ config }) => hasFronts(config));
    if (frontedClusters.length > 0) {
      const fronts = make('fronts', 'Fronts');
      const frontsQueue = new WorkQueue(this, 'FrontsQueue', {
        consumer: fronts.function,
        producers: [admission.role],
        consumerTimeout: FUNCTION_SIZING.fronts.timeout,
        deadLetterQueue,
        batchSize: FRONTS_BATCH_SIZE,
        maxBatchingWindow: Duration.seconds(1),
        // Few pollers: a burst lands in one or two batches rather than split over many.
        maxConcurrency: 2,
      });
      for (const fn of [admission, fronts]) {
        fn.function.addEnvironment('BERTH_FRONTS_QUEUE', frontsQueue.queue.queueUrl);
      }
      const loadBalancerArns = [
        ...new Set(configs.flatMap((config) => config.fronts.nlb?.loadBalancers ?? [])),
      ];
      const endpointGroupArns = accelerator
        ? [accelerator.endpointGroupArn]
        : [
            ...new Set(
              configs.flatMap((config) =>
                config.fronts.accelerator ? [config.fronts.accelerator.endpointGroupArn] : [],
              ),
            ),
          ];
      grantPermissions(fronts.role, frontsPermissions({ loadBalancerArns, endpointGroupArns }));
      if (configs.some((config) => config.fronts.nlb !== undefined)) {
        grantPermissions(admission.role, poolReadPermissions());
      }
      for (const { config, scope } of frontedClusters) {
        new PassSchedule(scope, 'FrontsSchedule', {
          pass: 'fronts',
          target: fronts.function,
          intervalSeconds: FRONTS_PASS_SECONDS,
          deadLetterQueue,
          ...(byName ? { cluster: config.cluster } : {}),
        });
      }
      this.fronts = { function: fronts, queue: frontsQueue };
    }
    const passFunctions = [repair, scale, eni, ...(this.fronts ? [this.fronts.function] : [])];

    for (const fn of passFunctions) {
      // A failed pass is not retried by Lambda: the next scheduled pass does the same work
      // against fresher state. Its event goes to the dead-letter queue, whose one alarm reports
      // every failed pass and undelivered event (one alarm metric, not one per function).
      fn.function.configureAsyncInvoke({
        retryAttempts: 0,
        onFailure: new destinations.SqsDestination(deadLetterQueue),
      });
    }
    // The functions that talk to the clusters; the capacity API reads the table only.
    const functionRoles = Object.fromEntries(
      Object.values(this.functions)
        .filter((fn) => fn.access === 'cluster')
        .map((fn) => [fn.node.id, fn.role] as const),
    );
    for (const { config, scope } of clusters) {
      const passes = [
        ['repair', repair, config.repair.intervalSeconds],
        ['scale', scale, config.scale.intervalSeconds],
        ['eni', eni, config.eni.intervalSeconds],
      ] as const;
      // One schedule per cluster and pass (not one fanning out): each cluster keeps its own
      // intervals and its passes run apart, and the cost is the same (`npm run bench -- cost`).
      for (const [pass, fn, intervalSeconds] of passes) {
        new PassSchedule(scope, `${fn.node.id}Schedule`, {
          pass,
          target: fn.function,
          intervalSeconds,
          deadLetterQueue,
          ...(byName ? { cluster: config.cluster } : {}),
        });
      }
      const poolPermissions = nodePoolPermissions(this, config.cluster, config.scale.nodePool);
      if (byName) attachPermissions(scope, 'ScalePermissions', scale.role, poolPermissions);
      else grantPermissions(scale.role, poolPermissions);
      // The fronts function reads and annotates the pods of the clusters that have fronts only.
      const fronted = this.fronts && frontedClusters.some((part) => part.config === config);
      new ClusterAccess(scope, 'ClusterAccess', {
        cluster: config.cluster,
        roles: fronted
          ? { ...functionRoles, [this.fronts.function.node.id]: this.fronts.function.role }
          : functionRoles,
      });
    }

    new events.Rule(this, 'InstanceStateRule', {
      description:
        'EC2 instance state changes: new nodes get ENI pools, terminated ones lose theirs',
      eventPattern: {
        source: ['aws.ec2'],
        detailType: ['EC2 Instance State-change Notification'],
        detail: { state: ['running', 'shutting-down', 'terminated'] },
      },
      targets: [
        new targets.LambdaFunction(eni.function, {
          deadLetterQueue,
          retryAttempts: 3,
          maxEventAge: Duration.minutes(15),
        }),
      ],
    });

    new Monitoring(this, 'Monitoring', {
      name: byName ? props.settings.stackName : (clusterNames[0] as string),
      // The stack's name: `berth` (or -c stack) for several clusters, `berth-<cluster>` for one.
      dashboardName: props.settings.stackName,
      clusters: configs.map((config) => ({
        name: config.cluster,
        idPrefix: byName ? `Cluster-${config.cluster}-` : '',
        ranges: [
          ...config.serviceCIDRs.map((cidr) => formatCidr(cidr)),
          formatPortRange(config.nodePortRange),
        ],
      })),
      functions: Object.fromEntries(
        [
          ...Object.entries(this.functions),
          ...(this.fronts ? [['fronts', this.fronts.function] as const] : []),
        ].map(([name, fn]) => [name, fn.function] as const),
      ),
      logGroups: { repair: repair.logGroup, eni: eni.logGroup },
      topicKey: props.settings.alarmTopicKey,
      admission: admission.function,
      nodeIps: nodeIps.function,
      capacity: capacity.function,
      // Half the webhook timeout: well before calls start timing out.
      admissionLatencyBudget: Duration.millis((WEBHOOK_TIMEOUT_SECONDS * 1000) / 2),
      table: this.table,
      deadLetterQueue,
      settleQueue: settleQueue.queue,
    });
  }

  /**
   * The capacity API: the capacity the passes recorded, read by key from the table (never a
   * cluster), behind a function URL that IAM opens to the granted roles only: those of
   * `-c capacityCallers` and, with `-c capacityCallerAccount`, the role the stack makes for that
   * account's matchmaker. The function refuses any other signed caller itself as well.
   */
  private capacityApi(make: MakeFunction, settings: StackSettings): BerthFunction {
    const callers: iam.IRole[] = settings.capacityCallerArns.map((arn, index) =>
      iam.Role.fromRoleArn(this, `CapacityCaller${index}`, arn, { mutable: false }),
    );
    if (settings.capacityCallerAccount !== undefined) {
      // Trusts the account, not one principal in it: the studio decides in its own IAM which of
      // its matchmakers may assume the role, and this stack's grant stays one role.
      const matchmaker = new iam.Role(this, 'MatchmakerRole', {
        assumedBy: new iam.AccountPrincipal(settings.capacityCallerAccount),
        description: `berth capacity API caller: the matchmakers of account ${settings.capacityCallerAccount}`,
      });
      new CfnOutput(this, 'MatchmakerRoleArnOutput', {
        key: STACK_OUTPUTS.matchmakerRoleArn,
        value: matchmaker.roleArn,
        description: 'The role a matchmaker assumes to call the capacity API',
      });
      callers.push(matchmaker);
    }
    const capacity = make(
      'capacity',
      'Capacity',
      // The function's own check of the caller, beside IAM's (see shared/app/lambda-capacity.ts).
      { BERTH_CAPACITY_CALLERS: this.toJsonString(callers.map((role) => role.roleArn)) },
    );
    // A matchmaker signs with its role.
    exposeSigV4(capacity, callers, {
      id: 'CapacityUrlOutput',
      key: STACK_OUTPUTS.capacityUrl,
      description:
        'Capacity API (GET v1/capacity, ?cluster=NAME), read-only; callers sign with SigV4 (service lambda)',
    });
    return capacity;
  }
}

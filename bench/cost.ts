/**
 * `npm run bench -- cost`: what berth costs to run for the reference fleet (3 clusters, 300 game
 * nodes, 10,000 game servers at once, 150,000 game sessions a day, 2,000 Services, ENI pools on
 * every node, passes at their default intervals), a month at AWS on-demand prices in us-east-1,
 * and what one stack serving one reference cluster costs split into what grows with game
 * sessions and what is fixed.
 *
 * Nothing is counted by hand that can be measured: each operation's real code path runs against
 * DynamoDB Local, the Kubernetes API fake and the EC2 fake (cost/meter/), the webhook
 * configuration decides which reviews reach berth, and the units AWS would bill, the durations,
 * log bytes and messages it produces are metered; the stack is synthesized in-process for its
 * functions, memory, schedules, alarms, dashboards, keys and secrets (cost/stack.ts). How often
 * each operation happens is stated in cost/fleet.ts, the prices in cost/prices.ts, and
 * cost/bill.ts multiplies. Prints the bill line by line, the totals on on-demand and on
 * provisioned capacity with autoscaling, private-network mode as an option line, and what the
 * in-cluster alternative (the VPC CNI's aws-node, Agones' controller and allocator, Cluster
 * Autoscaler) reserves on the fleet's nodes. Targets: at most $2.00 per million game sessions and
 * at most $6.00 a month fixed for a stack serving one cluster.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FUNCTION_NAMES, type FunctionName } from '../infra/constructs/berth-function.js';
import {
  type BillLine,
  type BillRates,
  computeBill,
  type FleetBill,
  inClusterReservation,
  nodePriceSplit,
  type OperationUsage,
  type ReservedComponent,
} from './cost/bill.js';
import {
  ASSUMPTIONS,
  CLUSTER_SHARE,
  type Driver,
  monthlyOperations,
  OPERATIONS,
  type OperationKind,
  REFERENCE_CONFIG,
  REFERENCE_FLEET,
  REFERENCE_STACK_CONFIG,
} from './cost/fleet.js';
import {
  type MeteredOperation,
  type MeterResult,
  meterOperations,
  PASS_KINDS,
} from './cost/meter/index.js';
import { FREE_TIERS, PRICE_REGION, PRICES, PRICES_AS_OF } from './cost/prices.js';
import { type StackResources, stackResources } from './cost/stack.js';
import { diurnal } from './eni/workload.js';
import { writeResults } from './support/results.js';
import { round } from './support/stats.js';
import { printTable } from './support/table.js';

/** Runs of each operation metered. */
const SAMPLES = 200;
/**
 * What everything that grows with game sessions may cost, per million sessions: the first
 * target set, and the one set when addresses moved to the node.
 */
const TARGETS_PER_MILLION_SESSIONS_USD = [2, 2.5] as const;
/** What a stack serving one cluster may cost a month with no sessions at all. */
const TARGET_FIXED_USD = 6;

/**
 * What the in-cluster alternative reserves: the requests of the components berth replaces, from
 * their charts and manifests as published.
 */
export const IN_CLUSTER_COMPONENTS: readonly ReservedComponent[] = [
  {
    name: 'aws-node (VPC CNI DaemonSet)',
    cpuMillis: 25,
    memoryMib: 0,
    replicas: 'per-node',
    source:
      'aws/amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml (v1.15.1): resources.requests cpu 25m, no memory request',
  },
  {
    name: 'Agones controller',
    cpuMillis: 1000,
    memoryMib: 256,
    replicas: 2,
    source:
      'agones install/helm/agones/values.yaml (1.58): controller.replicas 2, resources {} with the suggested requests cpu 1, memory 256Mi',
  },
  {
    name: 'Agones allocator',
    cpuMillis: 1000,
    memoryMib: 256,
    replicas: 3,
    source:
      'agones install/helm/agones/values.yaml (1.58): allocator.replicas 3, resources {} with the suggested requests cpu 1, memory 256Mi',
  },
  {
    name: 'Cluster Autoscaler',
    cpuMillis: 100,
    memoryMib: 600,
    replicas: 1,
    source:
      'kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/examples/cluster-autoscaler-autodiscover.yaml: requests cpu 100m, memory 600Mi',
  },
];

/** The daily curve of game sessions (the ENI benchmark's), as 24 hourly factors of mean 1. */
export function dailyProfile(): number[] {
  const hours = Array.from({ length: 24 }, (_, h) => diurnal(h * 3600 + 1800));
  const mean = hours.reduce((a, b) => a + b, 0) / hours.length;
  return hours.map((h) => h / mean);
}

/** One stack serves the whole fleet (`-c clusters=…`). */
const STACKS = 1;

/**
 * The rates of a bill for `clusters` clusters served by one stack; `busy`: whether the HTTP
 * functions serve requests (a stack with no sessions has no cold starts of them).
 */
function billRates(clusters: number, busy = true): BillRates {
  // The HTTP functions' environments follow the fleet's load (every cluster's pods), the other
  // functions' the stack's schedules.
  const coldStartsPerDay = Object.fromEntries(
    FUNCTION_NAMES.map((fn) => [
      fn,
      fn === 'admission' || fn === 'node-ips'
        ? busy
          ? ASSUMPTIONS.coldStartsPerDayHttp.value * clusters
          : 0
        : ASSUMPTIONS.coldStartsPerDayOther.value * STACKS,
    ]),
  ) as Record<FunctionName, number>;
  return {
    days: ASSUMPTIONS.daysPerMonth.value,
    clusters,
    stacks: STACKS,
    coldStartsPerDay,
    initMs: ASSUMPTIONS.initMs.value,
    sqsRequestsPerMessage: ASSUMPTIONS.sqsRequestsPerMessage.value,
    sqsIdleReceivesPerMinute: ASSUMPTIONS.sqsIdleReceivesPerMinute.value,
    logEventOverheadBytes: ASSUMPTIONS.logEventOverheadBytes.value,
    logsStoredPerIngested: ASSUMPTIONS.logsStoredPerIngested.value,
    xrayReservoirPerSecond: ASSUMPTIONS.xrayReservoirPerSecond.value,
    xrayFixedRate: ASSUMPTIONS.xrayFixedRate.value,
    provisionedTargetUtilization: ASSUMPTIONS.provisionedTargetUtilization.value,
    secretsReadsPerColdStart: ASSUMPTIONS.secretsReadsPerColdStart.value,
    responsesOutsideRegionShare: ASSUMPTIONS.callersOutsideRegionShare.value,
    fullVcpuMemoryMb: ASSUMPTIONS.fullVcpuMemoryMb.value,
  };
}

function usageOf(op: MeteredOperation): OperationUsage {
  const { label, diurnal: follows } = OPERATIONS[op.kind];
  return {
    fn: op.fn,
    label,
    diurnal: follows,
    readUnits: op.dynamo.billedReadUnits,
    writeUnits: op.dynamo.billedWriteUnits,
    billedMs: op.billedMs,
    logBytes: op.logBytes,
    logEvents: op.logEvents,
    responseBytes: op.responseBytes,
    sqsSends: op.sqsSends,
  };
}

const usd = (n: number) => `$${n.toFixed(2)}`;

function printBill(title: string, lines: readonly BillLine[]): void {
  console.log(`\n${title}`);
  printTable(
    ['service', 'item', '$/month', 'counts behind it'],
    lines.map((l) => [l.group, l.item, usd(l.usd), l.detail]),
  );
}

function printMeasured(
  operations: Readonly<Record<OperationKind, MeteredOperation>>,
  monthly: Readonly<Record<OperationKind, number>>,
): void {
  console.log(
    '\nmetered per operation (averages; DynamoDB units as AWS bills them, Local’s report beside)',
  );
  printTable(
    [
      'operation',
      'function',
      'n',
      'WRU',
      'RRU',
      'WRU Local',
      'store meters W/R',
      'txn items',
      'raced n',
      'lost/op',
      'round trips',
      'wall ms mean',
      'CPU ms mean',
      'billed ms',
      'log B',
      'reaches berth',
      'per month',
    ],
    (Object.keys(operations) as OperationKind[]).map((kind) => {
      const op = operations[kind];
      return [
        OPERATIONS[kind].label,
        op.fn,
        op.samples,
        round(op.dynamo.billedWriteUnits, 2),
        round(op.dynamo.billedReadUnits, 2),
        round(op.dynamo.reportedWriteUnits, 2),
        op.storeMeters
          ? `${round(op.storeMeters.writeUnits, 2)}/${round(op.storeMeters.readUnits, 2)}`
          : '-',
        round(op.dynamo.transactionItems, 2),
        op.raced?.samples ?? '-',
        round(op.dynamo.refusedWrites, 3),
        op.roundTrips,
        op.wallMs.mean,
        op.cpuMs.mean,
        op.billedMs,
        op.logBytes,
        op.calledShare,
        Math.round(monthly[kind]),
      ];
    }),
  );
}

/** The operations a bill prices and the monthly counts of each. */
interface BillLoad {
  readonly monthly: Readonly<Record<OperationKind, number>>;
  readonly operations: Readonly<Record<OperationKind, OperationUsage>>;
  /** Custom metrics the operations that run emit (each billed for the hours it is published). */
  readonly customMetrics: number;
}

/**
 * The load of one reference cluster, with the operations driven by `drivers` only; its passes
 * as metered at fleet size, or (`idlePasses`) in the cluster with no game sessions.
 */
function clusterLoad(
  fleetMonthly: Readonly<Record<OperationKind, number>>,
  metered: MeterResult,
  drivers: ReadonlySet<Driver>,
  idlePasses = false,
): BillLoad {
  const kinds = Object.keys(fleetMonthly) as OperationKind[];
  const monthly = Object.fromEntries(
    kinds.map((kind) => [
      kind,
      drivers.has(OPERATIONS[kind].grows) ? fleetMonthly[kind] / REFERENCE_FLEET.clusters : 0,
    ]),
  ) as Record<OperationKind, number>;
  const metrics = new Set(
    kinds.filter((kind) => monthly[kind] > 0).flatMap((kind) => metered.operations[kind].metrics),
  );
  const operations = usages(metered);
  if (idlePasses) {
    for (const kind of PASS_KINDS) operations[kind] = usageOf(metered.idle.operations[kind]);
  }
  return { monthly, operations, customMetrics: metrics.size };
}

function usages(metered: MeterResult): Record<OperationKind, OperationUsage> {
  return Object.fromEntries(
    (Object.keys(metered.operations) as OperationKind[]).map((kind) => [
      kind,
      usageOf(metered.operations[kind]),
    ]),
  ) as Record<OperationKind, OperationUsage>;
}

/** The bill of `load` on `stack`'s declarations, for `clusters` clusters. */
function billOf(
  stack: StackResources,
  load: BillLoad,
  clusters: number,
  tableGbPerCluster: number,
  busy = true,
): FleetBill {
  return computeBill({
    prices: PRICES,
    freeTiers: FREE_TIERS,
    monthly: load.monthly,
    operations: load.operations,
    stack: {
      memoryMb: Object.fromEntries(
        FUNCTION_NAMES.map((fn) => [fn, stack.functions[fn].memoryMb]),
      ) as Record<FunctionName, number>,
      traced: FUNCTION_NAMES.filter((fn) => stack.functions[fn].tracing === 'Active'),
      alarmMetrics: stack.alarmMetrics,
      dashboards: stack.dashboards,
      kmsKeys: stack.kmsKeys,
      secrets: stack.secrets,
      consumerQueues: 1,
      pointInTimeRecovery: stack.pointInTimeRecovery,
    },
    rates: billRates(clusters, busy),
    customMetricsPerCluster: load.customMetrics / clusters,
    tableGbPerCluster,
    dailyProfile: dailyProfile(),
  });
}

/** Private-network mode (`-c vpc`): its interface endpoints by the hour and the GB they carry. */
function privateNetworkLine(
  endpoints: number,
  monthly: Readonly<Record<OperationKind, number>>,
  metered: MeterResult,
): BillLine {
  const azs = ASSUMPTIONS.privateNetworkAzs.value;
  const hours = ASSUMPTIONS.daysPerMonth.value * 24;
  // Every AWS API request the functions make goes through an endpoint: DynamoDB, SQS, EC2.
  const requests = (Object.keys(monthly) as OperationKind[]).reduce((sum, kind) => {
    const op = metered.operations[kind];
    const perOp = op.dynamo.readRequests + op.dynamo.writeRequests + op.sqsSends + op.ec2Calls;
    return sum + monthly[kind] * perOp;
  }, 0);
  const gb = (requests * ASSUMPTIONS.endpointBytesPerRequest.value) / 1e9;
  const charges = [
    { price: 'interfaceEndpointAzHour' as const, quantity: endpoints * azs * hours },
    { price: 'interfaceEndpointGb' as const, quantity: gb },
  ];
  return {
    group: 'VPC (option -c vpc)',
    item: 'interface endpoints',
    charges,
    usd: charges.reduce((sum, c) => sum + c.quantity * PRICES[c.price].usd, 0),
    detail: `${endpoints} endpoints × ${azs} AZs × ${hours} h + ${gb.toFixed(1)} GB (${(requests / 1e6).toFixed(1)}M requests); a third AZ adds ${usd(endpoints * hours * PRICES.interfaceEndpointAzHour.usd)}`,
  };
}

/** Runs the benchmark, prints the bill and writes its results. */
export async function runCostBench(): Promise<void> {
  const started = performance.now();
  console.log(
    `cost benchmark: the reference fleet a month, AWS on-demand ${PRICE_REGION} prices as of ${PRICES_AS_OF}`,
  );
  console.log(
    `  ${REFERENCE_FLEET.clusters} clusters, ${REFERENCE_FLEET.gameNodes} ${REFERENCE_FLEET.node.type} game nodes, ${REFERENCE_FLEET.concurrentGameServers} game servers at once, ${REFERENCE_FLEET.gameSessionsPerDay} sessions a day, ${REFERENCE_FLEET.services} Services; one cluster (${CLUSTER_SHARE.nodes} nodes, ${CLUSTER_SHARE.gameServers} game servers, ${CLUSTER_SHARE.services} Services) metered, times ${REFERENCE_FLEET.clusters}`,
  );
  const stack: StackResources = stackResources(REFERENCE_STACK_CONFIG);
  const stackOne: StackResources = stackResources(REFERENCE_CONFIG);
  const stackVpc: StackResources = stackResources(REFERENCE_CONFIG, {
    vpc: 'vpc-0123456789abcdef0',
    subnets: 'subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb',
  });
  console.log(
    `  stack synthesized in ${stack.synthMs} ms: ${FUNCTION_NAMES.map((fn) => `${fn} ${stack.functions[fn].memoryMb} MB ${stack.functions[fn].tracing}`).join(', ')}; ${stack.alarms} alarms on ${stack.alarmMetrics} metrics, ${stack.dashboards} dashboard, ${stack.kmsKeys} KMS key, ${stack.secrets} secrets; schedules repair ${stack.scheduleMinutes.repair} min, scale ${stack.scheduleMinutes.scale} min, ENI ${stack.scheduleMinutes.eni} min`,
  );
  console.log(
    `  one cluster's stack: ${stackOne.alarms} alarms on ${stackOne.alarmMetrics} metrics, ${stackOne.dashboards} dashboard, ${stackOne.kmsKeys} KMS key, ${stackOne.secrets} secret; with -c vpc: ${stackVpc.interfaceEndpoints} interface endpoints`,
  );
  const metered: MeterResult = await meterOperations({
    samples: SAMPLES,
    functions: stack.functions,
    log: (line) => console.log(line),
  });
  const monthly = monthlyOperations(stack, metered.ratios);
  const tableGbPerCluster = metered.table.bytes / 1e9;
  const fleetLoad: BillLoad = {
    monthly,
    operations: usages(metered),
    customMetrics: metered.customMetrics.length * REFERENCE_FLEET.clusters,
  };
  const bill = billOf(stack, fleetLoad, REFERENCE_FLEET.clusters, tableGbPerCluster);

  // One stack serving one reference cluster, three ways: with no game sessions (the fixed bill:
  // the scale pass has taken the game nodes down to the idle cluster's), with its sessions on
  // those nodes' passes (what the sessions add), and at the fleet's size (what its game nodes
  // add to the passes, per node).
  const fixedDrivers = new Set<Driver>(['fixed']);
  const sessionDrivers = new Set<Driver>(['fixed', 'sessions']);
  const idleLoad = clusterLoad(monthly, metered, fixedDrivers, true);
  const idle = billOf(stackOne, idleLoad, 1, tableGbPerCluster, false);
  const played = billOf(
    stackOne,
    clusterLoad(monthly, metered, sessionDrivers, true),
    1,
    tableGbPerCluster,
  );
  const busyLoad = clusterLoad(monthly, metered, new Set<Driver>([...sessionDrivers, 'nodes']));
  const busy = billOf(stackOne, busyLoad, 1, tableGbPerCluster);
  const sessionsPerMonth = CLUSTER_SHARE.sessionsPerDay * ASSUMPTIONS.daysPerMonth.value;
  const perMillion = {
    onDemand: ((played.onDemand.total - idle.onDemand.total) / sessionsPerMonth) * 1e6,
    provisioned: ((played.provisioned.total - idle.provisioned.total) / sessionsPerMonth) * 1e6,
  };
  const fixed = { onDemand: idle.onDemand.total, provisioned: idle.provisioned.total };
  // The least a session can cost as berth is called: three Lambda requests (the pod's CREATE,
  // binding and DELETE reviews; its CNI ADD and DEL stay on the node) and two writes (its host
  // port taken and given back once), before any read, compute or log.
  const floorRequests = 3;
  const floorWrites = 2;
  const sessionFloor = {
    requests: floorRequests,
    writes: floorWrites,
    onDemand:
      (floorRequests * PRICES.lambdaRequest.usd + floorWrites * PRICES.dynamoWriteRequestUnit.usd) *
      1e6,
    provisioned:
      (floorRequests * PRICES.lambdaRequest.usd +
        (floorWrites * PRICES.dynamoWcuHour.usd) /
          (3600 * ASSUMPTIONS.provisionedTargetUtilization.value)) *
      1e6,
  };
  const addedNodes = CLUSTER_SHARE.nodes - metered.idle.nodes;
  const perGameNode = {
    onDemand: (busy.onDemand.total - played.onDemand.total) / addedNodes,
    provisioned: (busy.provisioned.total - played.provisioned.total) / addedNodes,
  };
  // What a cluster at fleet size would save with the ENI pass every 5 minutes: pools are refilled
  // on assign and made or removed on instance events, so the scheduled pass only trims and
  // reconciles.
  const eniEvery = 300;
  const savedByEniPassEvery300s =
    busy.onDemand.total -
    billOf(
      stackOne,
      {
        ...busyLoad,
        monthly: {
          ...busyLoad.monthly,
          'eni-pass': (busyLoad.monthly['eni-pass'] * stack.scheduleMinutes.eni * 60) / eniEvery,
        },
      },
      1,
      tableGbPerCluster,
    ).onDemand.total;
  const vpcLine = privateNetworkLine(stackVpc.interfaceEndpoints, monthly, metered);

  const split = nodePriceSplit({
    nodeHourUsd: PRICES.nodeHour.usd,
    vcpu: REFERENCE_FLEET.node.vcpu,
    memoryGib: REFERENCE_FLEET.node.memoryGib,
    vcpuWeight: PRICES.fargateVcpuHour.usd,
    gibWeight: PRICES.fargateGbHour.usd,
  });
  const hours = ASSUMPTIONS.daysPerMonth.value * 24;
  const reserved = inClusterReservation({
    components: IN_CLUSTER_COMPONENTS,
    clusters: REFERENCE_FLEET.clusters,
    nodesPerCluster: CLUSTER_SHARE.nodes,
    vcpuHourUsd: split.vcpuHourUsd,
    gibHourUsd: split.gibHourUsd,
    hours,
  });
  const asShipped = inClusterReservation({
    components: IN_CLUSTER_COMPONENTS.map((c) =>
      c.name.startsWith('Agones') ? { ...c, cpuMillis: 0, memoryMib: 0 } : c,
    ),
    clusters: REFERENCE_FLEET.clusters,
    nodesPerCluster: CLUSTER_SHARE.nodes,
    vcpuHourUsd: split.vcpuHourUsd,
    gibHourUsd: split.gibHourUsd,
    hours,
  });

  printMeasured(metered.operations, monthly);
  const raced = Object.values(metered.operations).filter((op) => op.raced);
  console.log(
    `  with ${ASSUMPTIONS.racingWriters.value} writers racing: ${raced
      .map(
        (op) =>
          `${OPERATIONS[op.kind].label} ${op.raced?.lostWritesPer} lost writes, ${op.dynamo.billedWriteUnits} WRU, ${op.roundTrips} round trips each`,
      )
      .join('; ')} (a lost conditional write is billed 1 WRU, 2 per item in a transaction)`,
  );
  const unsent = Object.values(metered.operations).filter((op) => op.calledShare < 1);
  console.log(
    `  not sent to berth by the webhook configuration: ${unsent.map((op) => `${OPERATIONS[op.kind].label} (${round(100 * (1 - op.calledShare), 0)}%)`).join(', ') || 'none'}`,
  );
  const passRows = (passes: MeterResult['passes']) =>
    passes.map((p) => [
      OPERATIONS[p.kind].label,
      p.pass,
      p.wallMs,
      p.writeUnits,
      p.readUnits,
      p.detail,
    ]);
  const passHeader = ['pass', '#', 'wall ms', 'WRU', 'RRU', 'what it did'];
  console.log('\npasses at fleet size (one cluster)');
  printTable(passHeader, passRows(metered.passes));
  console.log(`\npasses with no game sessions (${metered.idle.nodes} game node)`);
  printTable(passHeader, passRows(metered.idle.passes));
  printBill('the bill on on-demand DynamoDB (a month, the whole fleet)', bill.onDemand.lines);
  const profile = dailyProfile();
  console.log('\nlargest lines');
  for (const l of [...bill.onDemand.lines].sort((a, b) => b.usd - a.usd).slice(0, 8)) {
    console.log(`  ${usd(l.usd).padStart(8)}  ${l.group}: ${l.item} (${l.detail})`);
  }
  const dynamoOnDemand = bill.onDemand.lines
    .filter((l) => l.group === 'DynamoDB on-demand')
    .reduce((a, l) => a + l.usd, 0);
  const provisionedDynamo = bill.provisioned.lines
    .filter((l) => l.group === 'DynamoDB provisioned')
    .reduce((a, l) => a + l.usd, 0);
  console.log(
    `\n  fleet total on on-demand: ${usd(bill.onDemand.total)} a month (DynamoDB throughput ${usd(dynamoOnDemand)}); with the always-free tiers: ${usd(bill.onDemand.totalWithFreeTiers)}`,
  );
  console.log(
    `  fleet total on provisioned capacity with autoscaling (70% target, hourly, the session-driven load on the ENI benchmark's daily curve, peak/average ${round(Math.max(...profile), 2)}): ${usd(bill.provisioned.total)} a month (DynamoDB ${usd(provisionedDynamo)}: peak ${bill.provisioned.peakWcu} WCU and ${bill.provisioned.peakRcu} RCU over one table); with free tiers: ${usd(bill.provisioned.totalWithFreeTiers)}`,
  );
  console.log(
    `  option -c vpc (private network): +${usd(vpcLine.usd)} a month (${vpcLine.detail})`,
  );
  printBill(
    'one stack serving one reference cluster with no game sessions (fixed, on-demand)',
    idle.onDemand.lines.filter((l) => l.usd >= 0.005),
  );
  console.log(
    `\n  one cluster: fixed ${usd(fixed.onDemand)} a month on on-demand, ${usd(fixed.provisioned)} on provisioned (no game sessions: ${metered.idle.nodes} game node, ${CLUSTER_SHARE.services} Services); per million game sessions ${usd(perMillion.onDemand)} on on-demand, ${usd(perMillion.provisioned)} on provisioned (${round(sessionsPerMonth / 1e6, 2)}M sessions a month); each game node adds $${perGameNode.onDemand.toFixed(3)} a month of pass work on on-demand, $${perGameNode.provisioned.toFixed(3)} on provisioned (the ${addedNodes} more at fleet size ${usd(perGameNode.onDemand * addedNodes)}; the cluster at fleet size with its sessions ${usd(busy.onDemand.total)} a month)`,
  );
  console.log(
    `  (information: with eni.intervalSeconds ${eniEvery} instead of ${stack.scheduleMinutes.eni * 60}, a cluster at fleet size would pay ${usd(savedByEniPassEvery300s)} a month less on on-demand; the default is the ENI pools' to choose)`,
  );
  const passInvocations = monthly['eni-pass'] + monthly['repair-pass'] + monthly['scale-pass'];
  const scheduleChoice = {
    perClusterInvocations: passInvocations,
    fanOutInvocations: passInvocations / REFERENCE_FLEET.clusters,
    fanOutSavingUsd:
      passInvocations *
      (1 - 1 / REFERENCE_FLEET.clusters) *
      (PRICES.schedulerInvocation.usd + PRICES.lambdaRequest.usd),
  };
  console.log(
    `  schedules: one per cluster and pass, ${round(passInvocations / 1e6, 2)}M invocations a month; one per pass fanning out to the ${REFERENCE_FLEET.clusters} clusters would make ${round(scheduleChoice.fanOutInvocations / 1e6, 2)}M and save ${usd(scheduleChoice.fanOutSavingUsd)} a month`,
  );
  console.log(
    `  Lambda compute (invocations, INIT excluded) ${usd(bill.lambdaComputeUsd)}, billed as CPU time measured plus assumed round trips; were every billed duration CPU-bound and stretched by the function's vCPU share (${ASSUMPTIONS.fullVcpuMemoryMb.value} MB = 1 vCPU), ${usd(bill.lambdaComputeIfCpuBoundUsd)}`,
  );
  console.log(
    `\nthe in-cluster alternative: requests reserved on ${REFERENCE_FLEET.node.type} nodes at ${usd(PRICES.nodeHour.usd)}/h, split by Fargate's vCPU:GB price ratio into $${split.vcpuHourUsd.toFixed(5)} a vCPU-hour and $${split.gibHourUsd.toFixed(5)} a GiB-hour`,
  );
  printTable(
    ['component', 'vCPU', 'GiB', '$/month'],
    [
      ...reserved.rows.map((r) => [r.name, round(r.vcpu, 2), round(r.gib, 2), usd(r.usd)]),
      ['total', '', '', usd(reserved.total)],
    ],
  );
  console.log(
    `  (Agones' chart ships its controller and allocator with no requests, BestEffort: as shipped the reservation is ${usd(asShipped.total)} a month; the rows above use the requests its values file suggests. Not counted: the Agones SDK sidecar's 30m in every game server pod, ${round((30 / 1000) * REFERENCE_FLEET.concurrentGameServers, 0)} vCPU at once.)`,
  );
  console.log('\nassumptions');
  for (const [key, a] of Object.entries(ASSUMPTIONS))
    console.log(`  ${key} = ${a.value}: ${a.why}`);
  const unconfirmed = Object.entries(PRICES).filter(([, p]) => !p.confirmed);
  console.log(
    `\nprices not confirmed from a source this time (AWS list prices, check before relying): ${unconfirmed.map(([key]) => key).join(', ')}`,
  );
  console.log(
    `\ntable: ${metered.table.items} items, ${round(metered.table.bytes / 1e6, 2)} MB for one cluster; largest item ${metered.table.largestItemBytes} bytes (${metered.table.largestItemKey}): every write of up to 1 KB is 1 WRU, 2 in a transaction`,
  );
  console.log(
    `custom metrics one cluster emits: ${metered.customMetrics.length}; with no sessions: ${idleLoad.customMetrics}`,
  );

  const largest = (lines: readonly BillLine[], n: number) =>
    [...lines]
      .sort((a, b) => b.usd - a.usd)
      .slice(0, n)
      .map((l) => `${l.group} ${l.item} ${usd(l.usd)}`)
      .join(', ');
  const sessionLines = played.onDemand.lines.map((l) => {
    const before = idle.onDemand.lines.find((i) => i.group === l.group && i.item === l.item);
    return { ...l, usd: ((l.usd - (before?.usd ?? 0)) / sessionsPerMonth) * 1e6 };
  });
  const sessionLine = `${usd(perMillion.onDemand)} per million sessions on on-demand (largest: ${largest(sessionLines, 4)}); ${usd(perMillion.provisioned)} on provisioned; the least a session can cost (${floorRequests} requests, ${floorWrites} writes, nothing else) is ${usd(sessionFloor.onDemand)} on on-demand, ${usd(sessionFloor.provisioned)} on provisioned`;
  const targets = [
    ...TARGETS_PER_MILLION_SESSIONS_USD.map((most) => ({
      target: `at most $${most.toFixed(2)} per million game sessions (everything that grows with sessions), on on-demand`,
      pass: perMillion.onDemand <= most,
      line: sessionLine,
    })),
    {
      target: `at most $${TARGET_FIXED_USD.toFixed(2)} a month fixed for a stack serving one cluster (passes, schedules, alarms, dashboards, secrets, queues), on on-demand`,
      pass: fixed.onDemand <= TARGET_FIXED_USD,
      line: `${usd(fixed.onDemand)} a month on on-demand with no game sessions (${metered.idle.nodes} game node; largest: ${largest(idle.onDemand.lines, 4)}), ${usd(fixed.provisioned)} on provisioned; each game node adds $${perGameNode.onDemand.toFixed(3)} a month of pass work; the reference fleet (3 clusters, one stack) ${usd(bill.onDemand.total)} on on-demand, ${usd(bill.provisioned.total)} on provisioned, +${usd(vpcLine.usd)} with -c vpc; the in-cluster alternative reserves ${usd(reserved.total)}`,
    },
  ];
  console.log('');
  for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.target}: ${t.line}`);
  const durationMs = Math.round(performance.now() - started);
  console.log(`\ntotal ${(durationMs / 1000).toFixed(0)} s`);
  await writeResults('cost', {
    benchmark: 'cost',
    command: 'npm run bench -- cost',
    pricesAsOf: PRICES_AS_OF,
    region: PRICE_REGION,
    fleet: REFERENCE_FLEET,
    clusterShare: CLUSTER_SHARE,
    config: REFERENCE_CONFIG,
    stackConfig: REFERENCE_STACK_CONFIG,
    samples: SAMPLES,
    assumptions: ASSUMPTIONS,
    prices: PRICES,
    freeTiers: FREE_TIERS,
    stack,
    stackOneCluster: stackOne,
    monthlyOperations: monthly,
    dailyProfile: dailyProfile(),
    ratios: metered.ratios,
    metered: metered.operations,
    passes: metered.passes,
    idle: metered.idle,
    table: metered.table,
    customMetrics: metered.customMetrics,
    setup: metered.setup,
    scheduleChoice,
    bill: {
      onDemand: bill.onDemand,
      provisioned: bill.provisioned,
      invocations: bill.invocations,
      tracesRecorded: bill.tracesRecorded,
      tracesIfReservoirShared: bill.tracesIfReservoirShared,
      logsIngestedGb: bill.logsIngestedGb,
      lambdaComputeUsd: bill.lambdaComputeUsd,
      lambdaComputeIfCpuBoundUsd: bill.lambdaComputeIfCpuBoundUsd,
    },
    oneCluster: {
      sessionsPerMonth,
      fixed,
      idleGameNodes: metered.idle.nodes,
      atFleetSize: { onDemand: busy.onDemand.total, provisioned: busy.provisioned.total },
      savedWithEniPassEvery300s: savedByEniPassEvery300s,
      perMillionSessions: perMillion,
      sessionFloor,
      perGameNode,
      fixedLines: idle.onDemand.lines,
      perMillionSessionLines: sessionLines,
    },
    privateNetworkOption: vpcLine,
    inCluster: {
      node: REFERENCE_FLEET.node,
      split,
      components: IN_CLUSTER_COMPONENTS,
      reserved,
      asShipped: asShipped.total,
    },
    targets,
    durationMs,
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await runCostBench();
}

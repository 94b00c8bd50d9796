/**
 * The bill: monthly operation counts and measured per-operation usage times the price table,
 * as line items, and the same fleet on provisioned DynamoDB capacity, and what the in-cluster
 * alternative reserves on the fleet's nodes. Pure arithmetic: no I/O, no clock, every input
 * given, so the unit tests can check each rule.
 */
import type { FunctionName } from '../../infra/constructs/berth-function.js';
import type { OperationKind } from './fleet.js';
import type { Price, PriceKey } from './prices.js';

/** What one operation costs, averaged over the samples metered. */
export interface OperationUsage {
  readonly fn: FunctionName;
  readonly label: string;
  /** Follows the daily curve of game sessions (else flat). */
  readonly diurnal: boolean;
  /** DynamoDB units AWS bills per operation. */
  readonly readUnits: number;
  readonly writeUnits: number;
  /** Billed duration of its invocation, ms (1 ms granularity). */
  readonly billedMs: number;
  /** CloudWatch Logs bytes of its invocation (platform lines included) and their events. */
  readonly logBytes: number;
  readonly logEvents: number;
  /** Bytes of the HTTP answer, for function URL functions. */
  readonly responseBytes: number;
  /** Settle messages it sends. */
  readonly sqsSends: number;
}

/** The stack's billable declarations: each of the fleet's `stacks` declares them once. */
export interface StackCounts {
  readonly memoryMb: Readonly<Record<FunctionName, number>>;
  /** Functions with active X-Ray tracing. */
  readonly traced: readonly FunctionName[];
  readonly alarmMetrics: number;
  readonly dashboards: number;
  readonly kmsKeys: number;
  readonly secrets: number;
  readonly consumerQueues: number;
  readonly pointInTimeRecovery: boolean;
}

/** The rates the bill assumes (fleet.ts), as plain numbers. */
export interface BillRates {
  readonly days: number;
  readonly clusters: number;
  /** berth stacks serving the fleet: one, which serves every cluster (or one per cluster). */
  readonly stacks: number;
  /** Cold starts a day across the fleet, by function. */
  readonly coldStartsPerDay: Readonly<Record<FunctionName, number>>;
  readonly initMs: number;
  readonly sqsRequestsPerMessage: number;
  readonly sqsIdleReceivesPerMinute: number;
  readonly logEventOverheadBytes: number;
  readonly logsStoredPerIngested: number;
  readonly xrayReservoirPerSecond: number;
  readonly xrayFixedRate: number;
  readonly provisionedTargetUtilization: number;
  readonly secretsReadsPerColdStart: number;
  /**
   * Share of the function URLs' answers sent to callers outside the Region: Lambda charges data
   * transfer at EC2 rates only to and from outside the Region the function ran in.
   */
  readonly responsesOutsideRegionShare: number;
  /**
   * Memory at which a function has one full vCPU (1,769 MB); below it Lambda gives a share, so
   * CPU-bound work takes longer than on the machine that measured it.
   */
  readonly fullVcpuMemoryMb: number;
}

/** Everything the bill is computed from. */
export interface BillInput {
  readonly prices: Readonly<Record<PriceKey, Price>>;
  readonly freeTiers: Readonly<Partial<Record<PriceKey, { readonly amount: number }>>>;
  readonly monthly: Readonly<Record<OperationKind, number>>;
  readonly operations: Readonly<Record<OperationKind, OperationUsage>>;
  readonly stack: StackCounts;
  readonly rates: BillRates;
  /** Custom metrics (name and dimensions) one cluster emits. */
  readonly customMetricsPerCluster: number;
  /** One cluster's table, GB (items plus 100 bytes each). */
  readonly tableGbPerCluster: number;
  /** 24 hourly factors of the daily curve, mean 1. */
  readonly dailyProfile: readonly number[];
}

/** A quantity of one priced unit. */
export interface Charge {
  readonly price: PriceKey;
  readonly quantity: number;
}

/** One line of the bill. */
export interface BillLine {
  readonly group: string;
  readonly item: string;
  readonly charges: readonly Charge[];
  readonly usd: number;
  /** The counts behind it, for the reader. */
  readonly detail: string;
}

/** The bill on one capacity mode. */
export interface Bill {
  readonly lines: readonly BillLine[];
  readonly total: number;
  /** The same with the always-free tiers taken off, once for the whole fleet. */
  readonly totalWithFreeTiers: number;
}

/** Both capacity modes. */
export interface FleetBill {
  readonly onDemand: Bill;
  readonly provisioned: Bill & {
    readonly wcuHours: number;
    readonly rcuHours: number;
    readonly peakWcu: number;
    readonly peakRcu: number;
  };
  readonly invocations: Readonly<Record<FunctionName, number>>;
  readonly tracesRecorded: Readonly<Record<FunctionName, number>>;
  /** Traces if the 1-a-second reservoir were one for the whole account, not one per function. */
  readonly tracesIfReservoirShared: number;
  readonly logsIngestedGb: number;
  /**
   * Lambda compute (GB-s) priced as if every measured duration were CPU-bound and stretched by
   * the function's vCPU share (fullVcpuMemoryMb / memory): an upper bound for the compute lines.
   */
  readonly lambdaComputeIfCpuBoundUsd: number;
  readonly lambdaComputeUsd: number;
}

const SECONDS_PER_DAY = 86_400;

const usdOf = (prices: BillInput['prices'], charges: readonly Charge[]) =>
  charges.reduce((sum, c) => sum + c.quantity * prices[c.price].usd, 0);

/**
 * Traces X-Ray records per second from a Poisson stream of `rate` requests a second under a
 * sampling rule of `reservoir` requests a second (an integer) and `fixedRate` of the rest:
 * E[min(N, r)] + fixedRate × E[max(N − r, 0)].
 */
export function tracesPerSecond(rate: number, reservoir: number, fixedRate: number): number {
  if (rate <= 0) return 0;
  let term = Math.exp(-rate);
  let below = 0; // P(N <= k), accumulated
  let reservoirUsed = 0; // E[min(N, r)] = sum over k < r of P(N > k)
  for (let k = 0; k < reservoir; k++) {
    below += term;
    reservoirUsed += 1 - below;
    term *= rate / (k + 1);
  }
  return reservoirUsed + fixedRate * (rate - reservoirUsed);
}

/**
 * Unit-hours a month of provisioned capacity that tracks the hourly rate at `utilization`,
 * never below `minimum` per table. `diurnal` and `flat` are fleet-wide averages per second;
 * the diurnal part follows `profile` (24 factors, mean 1); tables share the load evenly.
 */
export function provisionedUnitHours(options: {
  readonly diurnal: number;
  readonly flat: number;
  readonly profile: readonly number[];
  readonly tables: number;
  readonly utilization: number;
  readonly minimum: number;
  readonly days: number;
}): { readonly unitHours: number; readonly peakUnits: number } {
  let perDay = 0;
  let peakUnits = 0;
  for (const factor of options.profile) {
    const perTable = (options.diurnal * factor + options.flat) / options.tables;
    // Whole units; the epsilon keeps 7 / 0.7 (10.000000000000002 in floating point) at 10.
    const units = Math.max(options.minimum, Math.ceil(perTable / options.utilization - 1e-9));
    perDay += units * options.tables;
    peakUnits = Math.max(peakUnits, units * options.tables);
  }
  return { unitHours: perDay * options.days, peakUnits };
}

/**
 * A node's hourly price split into a vCPU-hour and a GiB-hour price in the ratio `vcpuWeight` :
 * `gibWeight` (Fargate's per-vCPU and per-GB prices), so that vCPUs and GiB add up to the node.
 */
export function nodePriceSplit(options: {
  readonly nodeHourUsd: number;
  readonly vcpu: number;
  readonly memoryGib: number;
  readonly vcpuWeight: number;
  readonly gibWeight: number;
}): { readonly vcpuHourUsd: number; readonly gibHourUsd: number } {
  const scale =
    options.nodeHourUsd /
    (options.vcpu * options.vcpuWeight + options.memoryGib * options.gibWeight);
  return { vcpuHourUsd: options.vcpuWeight * scale, gibHourUsd: options.gibWeight * scale };
}

/** One component of the in-cluster alternative: requests per replica, replicas per cluster. */
export interface ReservedComponent {
  readonly name: string;
  readonly cpuMillis: number;
  readonly memoryMib: number;
  /** Replicas per cluster; a DaemonSet runs one per node. */
  readonly replicas: number | 'per-node';
  readonly source: string;
}

/** What the components reserve on the fleet's nodes, priced at the node's split. */
export function inClusterReservation(options: {
  readonly components: readonly ReservedComponent[];
  readonly clusters: number;
  readonly nodesPerCluster: number;
  readonly vcpuHourUsd: number;
  readonly gibHourUsd: number;
  readonly hours: number;
}): {
  readonly rows: readonly {
    readonly name: string;
    readonly vcpu: number;
    readonly gib: number;
    readonly usd: number;
  }[];
  readonly total: number;
} {
  const rows = options.components.map((c) => {
    const perCluster = c.replicas === 'per-node' ? options.nodesPerCluster : c.replicas;
    const vcpu = (c.cpuMillis / 1000) * perCluster * options.clusters;
    const gib = (c.memoryMib / 1024) * perCluster * options.clusters;
    const usd = (vcpu * options.vcpuHourUsd + gib * options.gibHourUsd) * options.hours;
    return { name: c.name, vcpu, gib, usd };
  });
  return { rows, total: rows.reduce((sum, r) => sum + r.usd, 0) };
}

/** The total with each price's free allowance taken off the fleet's summed quantity once. */
export function withFreeTiers(
  lines: readonly BillLine[],
  prices: BillInput['prices'],
  freeTiers: BillInput['freeTiers'],
): number {
  const quantities = new Map<PriceKey, number>();
  for (const line of lines) {
    for (const c of line.charges)
      quantities.set(c.price, (quantities.get(c.price) ?? 0) + c.quantity);
  }
  let total = 0;
  for (const [key, quantity] of quantities) {
    total += Math.max(0, quantity - (freeTiers[key]?.amount ?? 0)) * prices[key].usd;
  }
  return total;
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
/** Large counts in millions, small ones as they are. */
const millions = (n: number) => (n >= 100_000 ? `${fmt(n / 1e6, 2)}M` : fmt(n));

/** Computes the fleet's monthly bill on on-demand and on provisioned capacity. */
export function computeBill(input: BillInput): FleetBill {
  const { prices, monthly, operations, stack, rates } = input;
  const kinds = Object.keys(operations) as OperationKind[];
  const functions = Object.keys(stack.memoryMb) as FunctionName[];
  const line = (group: string, item: string, charges: Charge[], detail: string): BillLine => ({
    group,
    item,
    charges,
    usd: usdOf(prices, charges),
    detail,
  });

  // DynamoDB throughput, one line per operation kind.
  const dynamoLines = kinds.map((kind) => {
    const op = operations[kind];
    const count = monthly[kind];
    return line(
      'DynamoDB on-demand',
      op.label,
      [
        { price: 'dynamoWriteRequestUnit', quantity: count * op.writeUnits },
        { price: 'dynamoReadRequestUnit', quantity: count * op.readUnits },
      ],
      `${fmt(op.writeUnits, 2)} WRU + ${fmt(op.readUnits, 2)} RRU × ${millions(count)}`,
    );
  });
  const tableGb = input.tableGbPerCluster * rates.clusters;
  const storageLines = [
    line(
      'DynamoDB storage',
      'table storage',
      [{ price: 'dynamoStorageGbMonth', quantity: tableGb }],
      `${fmt(tableGb * 1e3, 1)} MB in ${rates.stacks} table${rates.stacks === 1 ? '' : 's'}`,
    ),
    ...(stack.pointInTimeRecovery
      ? [
          line(
            'DynamoDB storage',
            'point-in-time recovery',
            [{ price: 'dynamoPitrGbMonth', quantity: tableGb }],
            `${fmt(tableGb * 1e3, 1)} MB under PITR`,
          ),
        ]
      : []),
  ];

  // Lambda: requests and GB-seconds per function, cold starts' INIT included.
  const invocations = Object.fromEntries(functions.map((fn) => [fn, 0])) as Record<
    FunctionName,
    number
  >;
  const gbSeconds = { ...invocations };
  let cpuBoundGbSeconds = 0;
  const diurnalInvocations = { ...invocations };
  let responseBytes = 0;
  let logBytes = 0;
  let sqsSends = 0;
  for (const kind of kinds) {
    const op = operations[kind];
    const count = monthly[kind];
    invocations[op.fn] += count;
    if (op.diurnal) diurnalInvocations[op.fn] += count;
    const memoryGb = stack.memoryMb[op.fn] / 1024;
    gbSeconds[op.fn] += ((count * op.billedMs) / 1000) * memoryGb;
    const stretch = Math.max(1, rates.fullVcpuMemoryMb / stack.memoryMb[op.fn]);
    cpuBoundGbSeconds += ((count * Math.ceil(op.billedMs * stretch)) / 1000) * memoryGb;
    responseBytes += count * op.responseBytes;
    logBytes += count * (op.logBytes + op.logEvents * rates.logEventOverheadBytes);
    sqsSends += count * op.sqsSends;
  }
  const coldStarts = (fn: FunctionName) => rates.coldStartsPerDay[fn] * rates.days;
  const lambdaLines = functions.flatMap((fn) => {
    const initGbSeconds = ((coldStarts(fn) * rates.initMs) / 1000) * (stack.memoryMb[fn] / 1024);
    return [
      line(
        'Lambda',
        `${fn} requests`,
        [{ price: 'lambdaRequest', quantity: invocations[fn] }],
        `${millions(invocations[fn])} invocations`,
      ),
      line(
        'Lambda',
        `${fn} compute`,
        [{ price: 'lambdaArmGbSecond', quantity: gbSeconds[fn] + initGbSeconds }],
        `${fmt(gbSeconds[fn])} GB-s at ${stack.memoryMb[fn]} MB + ${fmt(initGbSeconds)} GB-s INIT (${fmt(coldStarts(fn))} cold starts)`,
      ),
    ];
  });
  const answeredGb = responseBytes / 1e9;
  const dataOutGb = answeredGb * rates.responsesOutsideRegionShare;
  lambdaLines.push(
    line(
      'Lambda',
      'function URL responses out of the Region',
      [{ price: 'lambdaDataOutGb', quantity: dataOutGb }],
      `${fmt(dataOutGb, 1)} of ${fmt(answeredGb, 1)} GB of webhook and node IP answers leave the Region (in-Region callers: no charge)`,
    ),
  );

  // SQS: each settle message sent, received and deleted; the event source's idle polling.
  const idleReceives =
    rates.sqsIdleReceivesPerMinute * 60 * 24 * rates.days * stack.consumerQueues * rates.stacks;
  const sqsRequests = sqsSends * (1 + rates.sqsRequestsPerMessage) + idleReceives;
  const passInvocations = monthly['eni-pass'] + monthly['repair-pass'] + monthly['scale-pass'];
  const admissionColdStarts = coldStarts('admission');
  const otherLines = [
    line(
      'SQS',
      'settle queue requests',
      [{ price: 'sqsRequest', quantity: sqsRequests }],
      `${fmt(sqsSends)} messages × ${1 + rates.sqsRequestsPerMessage} requests + ${millions(idleReceives)} idle long polls`,
    ),
    line(
      'EventBridge Scheduler',
      'pass schedules',
      [{ price: 'schedulerInvocation', quantity: passInvocations }],
      `${millions(passInvocations)} scheduled invocations`,
    ),
    line(
      'Secrets Manager',
      'webhook path secret',
      [
        { price: 'secretMonth', quantity: stack.secrets * rates.stacks },
        {
          price: 'secretApiCall',
          quantity: admissionColdStarts * stack.secrets * rates.secretsReadsPerColdStart,
        },
      ],
      `${stack.secrets * rates.stacks} secrets, ${fmt(admissionColdStarts * stack.secrets * rates.secretsReadsPerColdStart)} reads`,
    ),
  ];

  // CloudWatch: custom metrics (EMF), alarms, dashboards, logs.
  const metricsCount = input.customMetricsPerCluster * rates.clusters;
  const logsGb = logBytes / 1e9;
  const cloudwatchLines = [
    line(
      'CloudWatch',
      'custom metrics (EMF)',
      [{ price: 'cloudwatchMetricMonth', quantity: metricsCount }],
      `${metricsCount} metrics (${input.customMetricsPerCluster} a cluster)`,
    ),
    line(
      'CloudWatch',
      'alarms',
      [{ price: 'cloudwatchAlarmMetricMonth', quantity: stack.alarmMetrics * rates.stacks }],
      `${stack.alarmMetrics * rates.stacks} alarm metrics`,
    ),
    line(
      'CloudWatch',
      'dashboards',
      [{ price: 'cloudwatchDashboardMonth', quantity: stack.dashboards * rates.stacks }],
      `${stack.dashboards * rates.stacks} dashboard${stack.dashboards * rates.stacks === 1 ? '' : 's'}`,
    ),
    line(
      'CloudWatch',
      'logs ingested',
      [{ price: 'logsIngestedGb', quantity: logsGb }],
      `${fmt(logsGb, 1)} GB at the default INFO level`,
    ),
    line(
      'CloudWatch',
      'logs stored',
      [{ price: 'logsStoredGbMonth', quantity: logsGb * rates.logsStoredPerIngested }],
      `${fmt(logsGb * rates.logsStoredPerIngested, 1)} GB over the retention`,
    ),
  ];

  // X-Ray: per traced function, the sampled share of each hour's Poisson stream.
  const secondsPerMonth = SECONDS_PER_DAY * rates.days;
  const tracesRecorded = Object.fromEntries(functions.map((fn) => [fn, 0])) as Record<
    FunctionName,
    number
  >;
  for (const fn of stack.traced) {
    // Each stack's function samples its own stream (its own reservoir).
    const perStack = rates.stacks * secondsPerMonth;
    const diurnal = diurnalInvocations[fn] / perStack;
    const flat = (invocations[fn] - diurnalInvocations[fn]) / perStack;
    const hourly = input.dailyProfile.map((factor) =>
      tracesPerSecond(diurnal * factor + flat, rates.xrayReservoirPerSecond, rates.xrayFixedRate),
    );
    const mean = hourly.reduce((a, b) => a + b, 0) / hourly.length;
    tracesRecorded[fn] = mean * perStack;
  }
  const traces = Object.values(tracesRecorded).reduce((a, b) => a + b, 0);
  const fleetRate = (factor: number) =>
    stack.traced.reduce(
      (sum, fn) =>
        sum + (diurnalInvocations[fn] * factor + invocations[fn] - diurnalInvocations[fn]),
      0,
    ) / secondsPerMonth;
  const tracesIfReservoirShared =
    (input.dailyProfile.reduce(
      (sum, factor) =>
        sum + tracesPerSecond(fleetRate(factor), rates.xrayReservoirPerSecond, rates.xrayFixedRate),
      0,
    ) /
      input.dailyProfile.length) *
    secondsPerMonth;
  const xrayLines = [
    line(
      'X-Ray',
      'traces recorded',
      [{ price: 'xrayTraceRecorded', quantity: traces }],
      `${millions(traces)} traces (${stack.traced
        .map((fn) => `${fn} ${millions(tracesRecorded[fn])}`)
        .join(', ')})`,
    ),
  ];
  const kmsLines = [
    line(
      'KMS',
      'alarm topic keys',
      [{ price: 'kmsKeyMonth', quantity: stack.kmsKeys * rates.stacks }],
      `${stack.kmsKeys * rates.stacks} key${stack.kmsKeys * rates.stacks === 1 ? '' : 's'} (rotation adds $1 a key per yearly rotation, up to two)`,
    ),
  ];

  const common = [
    ...storageLines,
    ...lambdaLines,
    ...otherLines,
    ...cloudwatchLines,
    ...xrayLines,
    ...kmsLines,
  ];
  const onDemandLines = [...dynamoLines, ...common];
  const onDemand: Bill = {
    lines: onDemandLines,
    total: onDemandLines.reduce((sum, l) => sum + l.usd, 0),
    totalWithFreeTiers: withFreeTiers(onDemandLines, prices, input.freeTiers),
  };

  // Provisioned: the same units a second, tracked hour by hour at the target utilisation.
  const perSecond = (unit: 'readUnits' | 'writeUnits', diurnal: boolean) =>
    kinds
      .filter((kind) => operations[kind].diurnal === diurnal)
      .reduce((sum, kind) => sum + monthly[kind] * operations[kind][unit], 0) / secondsPerMonth;
  const capacity = (unit: 'readUnits' | 'writeUnits') =>
    provisionedUnitHours({
      diurnal: perSecond(unit, true),
      flat: perSecond(unit, false),
      profile: input.dailyProfile,
      tables: rates.stacks,
      utilization: rates.provisionedTargetUtilization,
      minimum: 1,
      days: rates.days,
    });
  const wcu = capacity('writeUnits');
  const rcu = capacity('readUnits');
  const provisionedLines = [
    line(
      'DynamoDB provisioned',
      'write capacity (autoscaled)',
      [{ price: 'dynamoWcuHour', quantity: wcu.unitHours }],
      `${fmt(wcu.unitHours)} WCU-hours, peak ${wcu.peakUnits} WCU`,
    ),
    line(
      'DynamoDB provisioned',
      'read capacity (autoscaled)',
      [{ price: 'dynamoRcuHour', quantity: rcu.unitHours }],
      `${fmt(rcu.unitHours)} RCU-hours, peak ${rcu.peakUnits} RCU`,
    ),
    ...common,
  ];
  return {
    onDemand,
    provisioned: {
      lines: provisionedLines,
      total: provisionedLines.reduce((sum, l) => sum + l.usd, 0),
      totalWithFreeTiers: withFreeTiers(provisionedLines, prices, input.freeTiers),
      wcuHours: wcu.unitHours,
      rcuHours: rcu.unitHours,
      peakWcu: wcu.peakUnits,
      peakRcu: rcu.peakUnits,
    },
    invocations,
    tracesRecorded,
    tracesIfReservoirShared,
    logsIngestedGb: logsGb,
    lambdaComputeUsd:
      Object.values(gbSeconds).reduce((a, b) => a + b, 0) * prices.lambdaArmGbSecond.usd,
    lambdaComputeIfCpuBoundUsd: cpuBoundGbSeconds * prices.lambdaArmGbSecond.usd,
  };
}

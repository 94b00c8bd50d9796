import { describe, expect, it } from 'vitest';
import {
  type BillInput,
  type BillLine,
  computeBill,
  inClusterReservation,
  nodePriceSplit,
  type OperationUsage,
  provisionedUnitHours,
  tracesPerSecond,
  withFreeTiers,
} from '../../bench/cost/bill.js';
import { OPERATIONS, type OperationKind } from '../../bench/cost/fleet.js';
import { billRequest } from '../../bench/cost/ledger.js';
import { FREE_TIERS, PRICES } from '../../bench/cost/prices.js';

const KINDS = Object.keys(OPERATIONS) as OperationKind[];

/** An operation that costs nothing, of `kind`'s function and curve. */
function idle(kind: OperationKind): OperationUsage {
  const { fn, label, diurnal } = OPERATIONS[kind];
  return {
    fn,
    label,
    diurnal,
    readUnits: 0,
    writeUnits: 0,
    billedMs: 0,
    logBytes: 0,
    logEvents: 0,
    responseBytes: 0,
    sqsSends: 0,
  };
}

/** A bill input where nothing runs and nothing is declared, to change one thing at a time. */
function input(
  over: {
    operations?: Partial<Record<OperationKind, Partial<OperationUsage>>>;
    monthly?: Partial<Record<OperationKind, number>>;
    rates?: Partial<BillInput['rates']>;
    stack?: Partial<BillInput['stack']>;
  } = {},
): BillInput {
  const operations = Object.fromEntries(
    KINDS.map((kind) => [kind, { ...idle(kind), ...over.operations?.[kind] }]),
  ) as Record<OperationKind, OperationUsage>;
  const monthly = Object.fromEntries(
    KINDS.map((kind) => [kind, over.monthly?.[kind] ?? 0]),
  ) as Record<OperationKind, number>;
  const none = { admission: 0, settle: 0, repair: 0, scale: 0, eni: 0, 'node-ips': 0 };
  return {
    prices: PRICES,
    freeTiers: FREE_TIERS,
    monthly,
    operations,
    stack: {
      memoryMb: {
        admission: 1024,
        settle: 512,
        repair: 1024,
        scale: 512,
        eni: 512,
        'node-ips': 512,
      },
      traced: [],
      alarmMetrics: 0,
      dashboards: 0,
      kmsKeys: 0,
      secrets: 0,
      consumerQueues: 0,
      pointInTimeRecovery: false,
      ...over.stack,
    },
    rates: {
      days: 30,
      clusters: 3,
      // A stack per cluster unless a test says otherwise.
      stacks: 3,
      coldStartsPerDay: none,
      initMs: 300,
      sqsRequestsPerMessage: 2,
      sqsIdleReceivesPerMinute: 0,
      logEventOverheadBytes: 26,
      logsStoredPerIngested: 1,
      xrayReservoirPerSecond: 1,
      xrayFixedRate: 0.05,
      provisionedTargetUtilization: 0.7,
      secretsReadsPerColdStart: 1,
      responsesOutsideRegionShare: 0,
      fullVcpuMemoryMb: 1769,
      ...over.rates,
    },
    customMetricsPerCluster: 0,
    tableGbPerCluster: 0,
    dailyProfile: Array.from({ length: 24 }, () => 1),
  };
}

const lineOf = (lines: readonly BillLine[], group: string, item: string) => {
  const found = lines.find((l) => l.group === group && l.item === item);
  if (!found) throw new Error(`no line ${group} / ${item}`);
  return found;
};

describe('computeBill', () => {
  it('prices an operation’s DynamoDB units at the on-demand request-unit prices', () => {
    const bill = computeBill(
      input({
        operations: { 'pod-create': { writeUnits: 3, readUnits: 1 } },
        monthly: { 'pod-create': 1_000_000 },
      }),
    );
    // 3M WRU at $0.625 per million and 1M RRU at $0.125 per million.
    expect(
      lineOf(bill.onDemand.lines, 'DynamoDB on-demand', OPERATIONS['pod-create'].label).usd,
    ).toBeCloseTo(2.0, 10);
    // And the million admission invocations at $0.20 per million; nothing else runs.
    expect(bill.onDemand.total).toBeCloseTo(2.2, 10);
  });

  it('bills Lambda GB-seconds from the billed duration and the stack’s memory, INIT included', () => {
    const bill = computeBill(
      input({
        operations: { 'pod-create': { billedMs: 20 } },
        monthly: { 'pod-create': 1_000_000 },
        rates: {
          coldStartsPerDay: {
            admission: 30,
            settle: 0,
            repair: 0,
            scale: 0,
            eni: 0,
            'node-ips': 0,
          },
        },
      }),
    );
    // 1M × 20 ms × 1 GB = 20,000 GB-s; 30 a day (the fleet's) × 30 days cold starts × 0.3 s × 1 GB = 270.
    expect(lineOf(bill.onDemand.lines, 'Lambda', 'admission compute').usd).toBeCloseTo(
      20_270 * 0.0000133334,
      10,
    );
    expect(lineOf(bill.onDemand.lines, 'Lambda', 'admission requests').usd).toBeCloseTo(0.2, 10);
    expect(bill.invocations.admission).toBe(1_000_000);
  });

  it('charges function URL answers at the data-transfer rate only for the share that leaves the Region', () => {
    const answers = {
      operations: { 'eni-node-report': { responseBytes: 1000 } },
      monthly: { 'eni-node-report': 10_000_000 },
    };
    const item = 'function URL responses out of the Region';
    // 10 GB answered, all to callers in the Region: no charge.
    expect(lineOf(computeBill(input(answers)).onDemand.lines, 'Lambda', item).usd).toBe(0);
    // A quarter leaves: 2.5 GB at $0.09.
    const out = computeBill(input({ ...answers, rates: { responsesOutsideRegionShare: 0.25 } }));
    expect(lineOf(out.onDemand.lines, 'Lambda', item).usd).toBeCloseTo(2.5 * 0.09, 10);
  });

  it("bills one stack's dashboards, keys, alarms, secrets and queue polls once for all its clusters", () => {
    const stack = { dashboards: 1, kmsKeys: 1, alarmMetrics: 40, secrets: 3, consumerQueues: 1 };
    const one = computeBill(input({ stack, rates: { stacks: 1, sqsIdleReceivesPerMinute: 15 } }));
    const usd = (item: string, group = 'CloudWatch') => lineOf(one.onDemand.lines, group, item).usd;
    expect(usd('dashboards')).toBeCloseTo(3, 10);
    expect(usd('alarms')).toBeCloseTo(40 * 0.1, 10);
    expect(usd('alarm topic keys', 'KMS')).toBeCloseTo(1, 10);
    expect(usd('settle queue requests', 'SQS')).toBeCloseTo((15 * 60 * 24 * 30 * 0.4) / 1e6, 10);
    const perCluster = computeBill(input({ stack, rates: { stacks: 3 } }));
    expect(lineOf(perCluster.onDemand.lines, 'CloudWatch', 'dashboards').usd).toBeCloseTo(9, 10);
  });

  it('stretches durations by the vCPU share for the CPU-bound upper bound', () => {
    const bill = computeBill(
      input({ operations: { 'scale-pass': { billedMs: 100 } }, monthly: { 'scale-pass': 1000 } }),
    );
    // 512 MB: 1000 × 0.1 s × 0.5 GB = 50 GB-s as measured; stretched 1769/512 → 346 ms each.
    expect(bill.lambdaComputeUsd).toBeCloseTo(50 * 0.0000133334, 12);
    expect(bill.lambdaComputeIfCpuBoundUsd).toBeCloseTo(173 * 0.0000133334, 12);
  });

  it('counts three SQS requests per settle message plus the idle long polls of each queue', () => {
    const bill = computeBill(
      input({
        operations: { 'service-create': { sqsSends: 1 } },
        monthly: { 'service-create': 1000 },
        rates: { sqsIdleReceivesPerMinute: 15 },
        stack: { consumerQueues: 1 },
      }),
    );
    // 1000 × 3 + 15 × 60 × 24 × 30 × 3 stacks = 3,000 + 1,944,000.
    expect(lineOf(bill.onDemand.lines, 'SQS', 'settle queue requests').usd).toBeCloseTo(
      (1_947_000 * 0.4) / 1e6,
      10,
    );
  });

  it('adds log bytes, the per-event overhead and the retention copy', () => {
    const bill = computeBill(
      input({
        operations: { 'pod-delete': { logBytes: 974, logEvents: 1 } },
        monthly: { 'pod-delete': 1_000_000 },
      }),
    );
    // (974 + 26) bytes × 1M = 1 GB ingested and stored.
    expect(bill.logsIngestedGb).toBeCloseTo(1, 10);
    expect(lineOf(bill.onDemand.lines, 'CloudWatch', 'logs ingested').usd).toBeCloseTo(0.5, 10);
    expect(lineOf(bill.onDemand.lines, 'CloudWatch', 'logs stored').usd).toBeCloseTo(0.03, 10);
  });

  it('records X-Ray traces only for traced functions, by the sampled share of their rate', () => {
    const perSecond = 2;
    const monthly = perSecond * 86_400 * 30 * 3;
    const untraced = computeBill(input({ monthly: { 'eni-node-report': monthly } }));
    const traced = computeBill(
      input({ monthly: { 'eni-node-report': monthly }, stack: { traced: ['node-ips'] } }),
    );
    expect(untraced.tracesRecorded['node-ips']).toBe(0);
    expect(untraced.tracesIfReservoirShared).toBe(0);
    expect(traced.tracesRecorded['node-ips']).toBeCloseTo(
      tracesPerSecond(perSecond, 1, 0.05) * 86_400 * 30 * 3,
      3,
    );
  });

  it('prices provisioned capacity instead of request units, and keeps every other line', () => {
    const secondsPerMonth = 86_400 * 30;
    const bill = computeBill(
      input({
        operations: { 'repair-pass': { writeUnits: 1 } },
        monthly: { 'repair-pass': 21 * secondsPerMonth },
      }),
    );
    // 21 WCU a second over 3 tables: 7 each, provisioned at 70% → 10 each, 30 in all, every hour.
    expect(bill.provisioned.wcuHours).toBe(30 * 24 * 30);
    expect(bill.provisioned.peakWcu).toBe(30);
    expect(
      lineOf(bill.provisioned.lines, 'DynamoDB provisioned', 'write capacity (autoscaled)').usd,
    ).toBeCloseTo(30 * 24 * 30 * 0.00065, 10);
    expect(bill.provisioned.lines.some((l) => l.group === 'DynamoDB on-demand')).toBe(false);
  });
});

describe('the X-Ray reservoir', () => {
  it('records fewer traces shared by the account than one per function', () => {
    const monthly = 2 * 86_400 * 30 * 3;
    const bill = computeBill(
      input({
        monthly: { 'eni-node-report': monthly, 'pod-create': monthly },
        stack: { traced: ['node-ips', 'admission'] },
      }),
    );
    const seconds = 86_400 * 30;
    // Per function: two streams of 2 a second in each of 3 clusters; shared: one of 12.
    expect(bill.tracesRecorded.admission + bill.tracesRecorded['node-ips']).toBeCloseTo(
      2 * 3 * tracesPerSecond(2, 1, 0.05) * seconds,
      3,
    );
    expect(bill.tracesIfReservoirShared).toBeCloseTo(tracesPerSecond(12, 1, 0.05) * seconds, 3);
  });
});

describe('tracesPerSecond', () => {
  it('records nothing of no traffic', () => {
    expect(tracesPerSecond(0, 1, 0.05)).toBe(0);
  });

  it('records nearly every request of a trickle', () => {
    // P(N ≥ 1) of 0.1 a second, plus 5% of the rare second request.
    const reservoir = 1 - Math.exp(-0.1);
    expect(tracesPerSecond(0.1, 1, 0.05)).toBeCloseTo(reservoir + 0.05 * (0.1 - reservoir), 12);
  });

  it('records one a second and 5% of the rest of a busy stream', () => {
    expect(tracesPerSecond(100, 1, 0.05)).toBeCloseTo(1 + 0.05 * 99, 9);
  });
});

describe('provisionedUnitHours', () => {
  it('follows the hourly curve at the target utilisation', () => {
    const profile = [...Array(12).fill(1.5), ...Array(12).fill(0.5)];
    const { unitHours, peakUnits } = provisionedUnitHours({
      diurnal: 7,
      flat: 0,
      profile,
      tables: 1,
      utilization: 0.7,
      minimum: 1,
      days: 1,
    });
    // 10.5/0.7 = 15 units for 12 hours, 3.5/0.7 = 5 for the other 12.
    expect(unitHours).toBe(15 * 12 + 5 * 12);
    expect(peakUnits).toBe(15);
  });

  it('never goes below the minimum of each table', () => {
    const { unitHours } = provisionedUnitHours({
      diurnal: 0,
      flat: 0.01,
      profile: Array(24).fill(1),
      tables: 3,
      utilization: 0.7,
      minimum: 1,
      days: 30,
    });
    expect(unitHours).toBe(3 * 24 * 30);
  });
});

describe('nodePriceSplit and inClusterReservation', () => {
  it('splits the node price so its vCPUs and GiB add back up to it, in the weights’ ratio', () => {
    const split = nodePriceSplit({
      nodeHourUsd: 0.68,
      vcpu: 16,
      memoryGib: 32,
      vcpuWeight: 0.04048,
      gibWeight: 0.004445,
    });
    expect(16 * split.vcpuHourUsd + 32 * split.gibHourUsd).toBeCloseTo(0.68, 12);
    expect(split.vcpuHourUsd / split.gibHourUsd).toBeCloseTo(0.04048 / 0.004445, 9);
  });

  it('reserves a DaemonSet’s requests on every node of every cluster', () => {
    const { rows, total } = inClusterReservation({
      components: [
        { name: 'ds', cpuMillis: 25, memoryMib: 512, replicas: 'per-node', source: 'test' },
        { name: 'deploy', cpuMillis: 1000, memoryMib: 0, replicas: 2, source: 'test' },
      ],
      clusters: 3,
      nodesPerCluster: 100,
      vcpuHourUsd: 0.03,
      gibHourUsd: 0.004,
      hours: 720,
    });
    expect(rows[0]).toMatchObject({ vcpu: 7.5, gib: 150 });
    expect(rows[1]).toMatchObject({ vcpu: 6, gib: 0 });
    expect(total).toBeCloseTo((7.5 * 0.03 + 150 * 0.004 + 6 * 0.03) * 720, 9);
  });
});

describe('withFreeTiers', () => {
  it('takes a free allowance off the fleet’s summed quantity once, not off each line', () => {
    const lines: BillLine[] = [
      {
        group: 'Lambda',
        item: 'a',
        charges: [{ price: 'lambdaRequest', quantity: 600_000 }],
        usd: 0.12,
        detail: '',
      },
      {
        group: 'Lambda',
        item: 'b',
        charges: [{ price: 'lambdaRequest', quantity: 600_000 }],
        usd: 0.12,
        detail: '',
      },
    ];
    // 1.2M requests less the free 1M: 200,000 at $0.20 per million.
    expect(withFreeTiers(lines, PRICES, FREE_TIERS)).toBeCloseTo(0.04, 12);
  });
});

describe('billRequest (DynamoDB billing rules)', () => {
  it('bills a transaction 2 units per item whatever DynamoDB Local reports', () => {
    const usage = billRequest({
      command: 'TransactWriteItemsCommand',
      input: {
        TransactItems: [
          { Put: { TableName: 't', Item: { pk: { S: 'a' }, sk: { S: 'b' } } } },
          { Update: { TableName: 't', Key: { pk: { S: 'a' }, sk: { S: 'c' } } } },
          { Delete: { TableName: 't', Key: { pk: { S: 'a' }, sk: { S: 'd' } } } },
        ],
      },
      consumed: [{ TableName: 't', CapacityUnits: 3 }],
    });
    expect(usage.billedWriteUnits).toBe(6);
    expect(usage.reportedWriteUnits).toBe(3);
  });

  it('bills a write refused by its condition one unit, and other failures nothing', () => {
    const refused = billRequest({
      command: 'PutItemCommand',
      input: {},
      consumed: undefined,
      error: 'ConditionalCheckFailedException',
    });
    const failed = billRequest({
      command: 'PutItemCommand',
      input: {},
      consumed: undefined,
      error: 'ResourceNotFoundException',
    });
    expect(refused).toMatchObject({ billedWriteUnits: 1, refusedWrites: 1 });
    expect(failed.billedWriteUnits).toBe(0);
  });

  it('bills an empty Query page the minimum read unit of its consistency', () => {
    const empty = (ConsistentRead: boolean) =>
      billRequest({
        command: 'QueryCommand',
        input: { ConsistentRead },
        consumed: { TableName: 't', CapacityUnits: 0 },
      }).billedReadUnits;
    expect(empty(true)).toBe(1);
    expect(empty(false)).toBe(0.5);
  });
});

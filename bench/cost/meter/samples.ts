/**
 * What the cost meter keeps of each invocation (a `Sample`), and how an operation's samples are
 * summarised into what the bill prices (a `MeteredOperation`): averages (Lambda bills every
 * invocation's duration, so the mean, not the median), the CPU time spent and the remote round
 * trips a Lambda in AWS would wait for besides, and, for the paths where writers race, the DynamoDB usage of writers
 * racing (lost conditional writes are billed).
 */
import type { FunctionName } from '../../../infra/constructs/berth-function.js';
import { median, percentile, round } from '../../support/stats.js';
import { ASSUMPTIONS, OPERATIONS, type OperationKind } from '../fleet.js';
import { addUsage, type DynamoUsage, emptyUsage } from '../ledger.js';

/** What an invocation sends besides its DynamoDB requests: logs, its answer and remote calls. */
export interface InvocationCounts {
  readonly logBytes: number;
  readonly logEvents: number;
  readonly responseBytes: number;
  readonly sqsSends: number;
  readonly kubernetesRequests: number;
  readonly ec2Calls: number;
  /** DynamoDB requests waited for one after another (requests sent together count once). */
  readonly roundTrips: number;
}

/** What one operation measured, per operation (averages over its samples). */
export interface MeteredOperation extends InvocationCounts {
  readonly kind: OperationKind;
  readonly fn: FunctionName;
  readonly samples: number;
  /** Billed by AWS's rules (ledger.ts), per operation. */
  readonly dynamo: DynamoUsage;
  /** The adapters' own CapacityMeters, where the composition exposes them. */
  readonly storeMeters?: { readonly readUnits: number; readonly writeUnits: number };
  /** Wall time of the invocation on this machine, ms (for the report: it grows with load). */
  readonly wallMs: { readonly median: number; readonly mean: number; readonly p90: number };
  /** CPU time of the invocation on this machine, ms. */
  readonly cpuMs: { readonly median: number; readonly mean: number; readonly p90: number };
  /** Added for calls that leave the machine in AWS (assumed round trips), ms. */
  readonly remoteMs: number;
  /**
   * Billed duration: mean CPU time plus the remote calls' round trips, rounded up to 1 ms (the
   * mean, since Lambda bills every invocation's duration).
   */
  readonly billedMs: number;
  /** Share of the operation's reviews the webhook configuration sends to berth (1 elsewhere). */
  readonly calledShare: number;
  /** Custom metrics any of its invocations emitted. */
  readonly metrics: readonly string[];
  /**
   * Where writers raced (`racingWriters` containers at once): how many invocations, and the
   * conditional writes they lost per invocation. `dynamo` and `roundTrips` are theirs then.
   */
  readonly raced?: { readonly samples: number; readonly lostWritesPer: number };
}

/** One invocation's measurements. */
export interface Sample extends InvocationCounts {
  readonly usage: DynamoUsage;
  readonly store: { readUnits: number; writeUnits: number } | undefined;
  readonly wallMs: number;
  /**
   * CPU time of this process during the invocation (the handler, the SDK, the HTTP clients):
   * what a Lambda spends besides waiting for remote calls. Unlike wall time it does not grow
   * with the other work on a shared machine (DynamoDB Local's own CPU is another process).
   */
  readonly cpuMs: number;
  /** 1 if the apiserver would send this review to berth, else 0 (1 for non-admission calls). */
  readonly called: number;
  /** Custom metrics (namespace, dimensions, name) its EMF lines carry. */
  readonly metrics: readonly string[];
}

/** One pass at fleet size, as the report lists it. */
export interface MeteredPass {
  readonly kind: OperationKind;
  readonly pass: number;
  readonly wallMs: number;
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly detail: string;
}

/** Times of a list, summarised. */
function wallStats(samples: readonly number[]): MeteredOperation['wallMs'] {
  const mean = samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length);
  return {
    median: round(median(samples), 2),
    mean: round(mean, 2),
    p90: round(percentile(samples, 90), 2),
  };
}

function averageUsage(samples: readonly Sample[]): DynamoUsage {
  const total = samples.reduce((sum, s) => addUsage(sum, s.usage), emptyUsage());
  const n = Math.max(1, samples.length);
  const byCommand: Record<string, number> = {};
  for (const [name, count] of Object.entries(total.byCommand))
    byCommand[name] = round(count / n, 3);
  return {
    readRequests: round(total.readRequests / n, 3),
    writeRequests: round(total.writeRequests / n, 3),
    billedReadUnits: round(total.billedReadUnits / n, 3),
    billedWriteUnits: round(total.billedWriteUnits / n, 3),
    reportedReadUnits: round(total.reportedReadUnits / n, 3),
    reportedWriteUnits: round(total.reportedWriteUnits / n, 3),
    refusedWrites: round(total.refusedWrites / n, 3),
    transactions: round(total.transactions / n, 3),
    transactionItems: round(total.transactionItems / n, 3),
    byCommand,
  };
}

/**
 * One operation's samples, summarised with the remote round trips it would wait for. `raced`:
 * the same operation with writers racing, whose DynamoDB usage and round trips replace the
 * one-writer figures (its wall times, on a 2-core machine running 32 at once, measure the CPU
 * queue rather than Lambda, where each container has its own CPU: durations stay one writer's).
 */
export function summarise(
  kind: OperationKind,
  samples: readonly Sample[],
  raced: readonly Sample[] = [],
): MeteredOperation {
  const n = Math.max(1, samples.length);
  const mean = (pick: (s: Sample) => number) => samples.reduce((a, s) => a + pick(s), 0) / n;
  const dynamoSamples = raced.length > 0 ? raced : samples;
  const roundTrips =
    dynamoSamples.reduce((a, s) => a + s.roundTrips, 0) / Math.max(1, dynamoSamples.length);
  const wallMs = wallStats(samples.map((s) => s.wallMs));
  const cpuMs = wallStats(samples.map((s) => s.cpuMs));
  const kubernetesRequests = mean((s) => s.kubernetesRequests);
  const sqsSends = mean((s) => s.sqsSends);
  const ec2Calls = mean((s) => s.ec2Calls);
  const remoteMs =
    kubernetesRequests * ASSUMPTIONS.kubernetesRttMs.value +
    sqsSends * ASSUMPTIONS.sqsSendRttMs.value +
    ec2Calls * ASSUMPTIONS.ec2CallRttMs.value +
    roundTrips * ASSUMPTIONS.dynamoRttMs.value;
  const stored = samples.filter((s) => s.store !== undefined);
  const dynamo = averageUsage(dynamoSamples);
  return {
    kind,
    fn: OPERATIONS[kind].fn,
    samples: samples.length,
    dynamo,
    ...(stored.length > 0
      ? {
          storeMeters: {
            readUnits: round(stored.reduce((a, s) => a + (s.store?.readUnits ?? 0), 0) / n, 3),
            writeUnits: round(stored.reduce((a, s) => a + (s.store?.writeUnits ?? 0), 0) / n, 3),
          },
        }
      : {}),
    wallMs,
    cpuMs,
    remoteMs: round(remoteMs, 2),
    billedMs: Math.ceil(cpuMs.mean + remoteMs),
    calledShare: round(
      mean((s) => s.called),
      3,
    ),
    metrics: [...new Set(samples.flatMap((s) => s.metrics))].sort(),
    ...(raced.length > 0
      ? { raced: { samples: raced.length, lostWritesPer: dynamo.refusedWrites } }
      : {}),
    logBytes: Math.round(mean((s) => s.logBytes)),
    logEvents: round(
      mean((s) => s.logEvents),
      2,
    ),
    responseBytes: Math.round(mean((s) => s.responseBytes)),
    sqsSends: round(sqsSends, 3),
    kubernetesRequests: round(kubernetesRequests, 2),
    ec2Calls: round(ec2Calls, 2),
    roundTrips: round(roundTrips, 2),
  };
}

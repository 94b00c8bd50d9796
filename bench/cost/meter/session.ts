/**
 * One metering run of the cost meter: invokes a function as Lambda would, keeps what each
 * invocation measured by operation, and summarises every operation at the end.
 */
import type { Context } from 'aws-lambda';
import type { FunctionName } from '../../../infra/constructs/berth-function.js';
import type { HttpResponse } from '../../../shared/http/exchange.js';
import type { CapacityMeter } from '../../../shared/store/capacity.js';
import { withRoundTrips } from '../../support/round-trips.js';
import { round } from '../../support/stats.js';
import { OPERATIONS, type OperationKind } from '../fleet.js';
import type { StackFunction } from '../stack.js';
import { captured, collectMetrics, lambdaContext, platformLines } from './lambda.js';
import { type MeteredOperation, type MeteredPass, type Sample, summarise } from './samples.js';
import type { World } from './world.js';

/**
 * One metering run: invokes functions and keeps what each invocation measured, by operation.
 */
export class Session {
  readonly metrics = new Set<string>();
  readonly results: Partial<Record<OperationKind, Sample[]>> = {};
  /** Samples of the operations metered with writers racing. */
  readonly raced: Partial<Record<OperationKind, Sample[]>> = {};
  readonly passes: MeteredPass[] = [];
  readonly setup: Record<string, number | string> = {};

  constructor(
    readonly world: World,
    readonly functions: Readonly<Record<FunctionName, StackFunction>>,
    readonly log: (line: string) => void,
  ) {}

  /** Adds one sample of `kind`, one writer at a time (or, `raced`, with writers racing). */
  record(kind: OperationKind, sample: Sample, raced = false): void {
    const into = raced ? this.raced : this.results;
    const list = into[kind] ?? [];
    list.push(sample);
    into[kind] = list;
  }

  /**
   * Adds one pass to the report; every pass but the first is a sample (the first warms caches a
   * container keeps between scheduled passes too).
   */
  recordPass(kind: OperationKind, pass: number, sample: Sample, detail: string): void {
    this.passes.push({
      kind,
      pass,
      wallMs: Math.round(sample.wallMs),
      readUnits: round(sample.usage.billedReadUnits, 1),
      writeUnits: round(sample.usage.billedWriteUnits, 1),
      detail,
    });
    if (pass > 1) this.record(kind, sample);
  }

  /**
   * One invocation of `fn`: its DynamoDB usage and round trips, wall time and output with the
   * platform's log lines added, the adapters' meters moved by it; its EMF lines add to
   * `metrics`. `called`: whether the apiserver sends this review to berth at all. Kubernetes and
   * EC2 calls are counted by difference, so only one-writer samples keep them.
   */
  async invoke<T>(
    fn: FunctionName,
    run: (context: Context) => Promise<T>,
    options: { readonly meters?: readonly CapacityMeter[]; readonly called?: boolean } = {},
  ): Promise<{ value: T; sample: Sample }> {
    const meters = options.meters ?? [];
    const { world } = this;
    const { memoryMb, platformLogs } = this.functions[fn];
    const context = lambdaContext(fn, memoryMb);
    const kubeBefore = world.kube.requests.length;
    const ec2Before = world.ec2Calls;
    const storeBefore = meters.map((m) => m.totals());
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const { value: traced, text } = await captured(() =>
      withRoundTrips(() => world.ledger.measure(() => run(context))),
    );
    const { value: measured, roundTrips } = traced;
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const platform = platformLogs ? platformLines(context.awsRequestId, memoryMb, wallMs) : [];
    const lines = [...text, ...platform];
    const metrics = new Set<string>();
    for (const line of text) collectMetrics(line, metrics);
    for (const metric of metrics) this.metrics.add(metric);
    const moved = (field: 'readUnits' | 'writeUnits') =>
      meters.reduce((a, m, i) => a + m.totals()[field] - (storeBefore[i]?.[field] ?? 0), 0);
    const response = measured.value as unknown as Partial<HttpResponse> | undefined;
    const responseBytes =
      typeof response?.body === 'string'
        ? Buffer.byteLength(response.body) +
          Buffer.byteLength(JSON.stringify(response.headers ?? {}))
        : 0;
    return {
      value: measured.value,
      sample: {
        usage: measured.usage,
        store:
          meters.length === 0
            ? undefined
            : { readUnits: moved('readUnits'), writeUnits: moved('writeUnits') },
        wallMs,
        cpuMs: (cpu.user + cpu.system) / 1000,
        logBytes: lines.reduce((a, line) => a + Buffer.byteLength(line), 0),
        // Each Powertools line is one event, and START, END and REPORT three more when written.
        logEvents: text.filter((line) => line.startsWith('{')).length + platform.length,
        responseBytes,
        sqsSends: 0,
        kubernetesRequests: world.kube.requests.length - kubeBefore,
        ec2Calls: world.ec2Calls - ec2Before,
        roundTrips,
        called: options.called === false ? 0 : 1,
        metrics: [...metrics],
      },
    };
  }

  /** The summary of one operation, which must have been sampled. */
  operation(kind: OperationKind): MeteredOperation {
    const list = this.results[kind];
    if (!list || list.length === 0) throw new Error(`no samples of ${kind}`);
    return summarise(kind, list, this.raced[kind]);
  }

  /** The summary of every operation; each must have been sampled. */
  operations(): Record<OperationKind, MeteredOperation> {
    return Object.fromEntries(
      (Object.keys(OPERATIONS) as OperationKind[]).map((kind) => [kind, this.operation(kind)]),
    ) as Record<OperationKind, MeteredOperation>;
  }
}

/**
 * Host port benchmark:
 * 1. Concurrency: rounds of 32 concurrent pod CREATEs through the real handler against DynamoDB
 *    Local, then the 32 DELETEs, reporting lost-race retries per allocation (target ≤ 0.3), the
 *    write units a CREATE and a DELETE are billed (record included; target ≤ 2 for a one-port
 *    pod), the round trips on a CREATE's critical path (target ≤ 1.3 on average) and allocations
 *    per second next to the raw rate of 32 concurrent conditional PutItems of unique keys, rounds
 *    of the two interleaved so they share the machine's state. Two loads: a range with plenty of
 *    ports at the lowest count (the usual case), and a level boundary where only 16 ports remain
 *    at the lowest count, so all 32 pods want them. Two ways of serving them: one process (`berth
 *    serve`: one view of the counts for all 32), and 32 warm Lambda containers, one pod each,
 *    each with its own view, which the others' allocations make stale.
 * 2. Spread: the pure choice policy in memory. The first pick of a fresh 1,001-port range over
 *    100,000 trials (Agones measured 85 to 452 hits per port around 200 over 200,000 trials), and
 *    100,000 sequential single-port allocations in one range.
 * 3. A full day with blocks: sessions of single ports and blocks of 4 and 16 come and go in one
 *    range (`hostports-day.ts`): blocks denied, blocks placed above the lowest count, the widest
 *    spread, and the largest free block sampled as the range fills and empties.
 * Prints a table and writes bench/results/hostports.json. Alone: `npx tsx bench/hostports.ts`.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { hostPortRangesOf } from '../shared/admission/pods.js';
import { parseAdmissionReview } from '../shared/admission/review.js';
import { type BerthRuntime, createRuntime } from '../shared/app/runtime.js';
import { parseConfig } from '../shared/config/schema.js';
import { recordHostPorts } from '../shared/hostports/allocator.js';
import { chooseOneLeastUsed } from '../shared/hostports/choice.js';
import { startDynamoDbLocal } from '../shared/local/dynamodb-local.js';
import { CapacityMeter } from '../shared/store/capacity.js';
import { dynamoClient } from '../shared/store/client.js';
import { ensureTable } from '../shared/store/ensure-table.js';
import { ALLOCATION_ID_ANNOTATION, PORTS_ANNOTATION } from '../shared/vocabulary/labels.js';
import { type BlockDayResult, blockDay, DAY_LOAD } from './hostports-day.js';
import { writeResults } from './support/results.js';
import { countRoundTrips, withRoundTrips } from './support/round-trips.js';
import { percentile } from './support/stats.js';

const CONCURRENCY = 32;
const ROUNDS = 10;
const WARM_UP_ROUNDS = 3;
const RANGE = '7000-8000';
const RANGE_SIZE = 1001;
const SPREAD_TRIALS = 100_000;
const AGONES = { trials: 200_000, min: 85, max: 452, mean: 200 } as const;

/** One concurrency scenario's numbers. */
interface ConcurrencyResult {
  readonly scenario: string;
  readonly ports: number;
  readonly count?: number;
  /** Plenty of ports at the lowest count (no level boundary). */
  readonly room: boolean;
  readonly serving: Scenario['serving'];
  readonly allocations: number;
  readonly denied: number;
  readonly conflictRetries: number;
  readonly retriesPerAllocation: number;
  /** Write units billed per CREATE and per DELETE, failed conditional writes included. */
  readonly wcuPerCreate: number;
  readonly wcuPerDelete: number;
  /** DynamoDB requests a CREATE waited for one after another (parallel ones count once). */
  readonly roundTripsPerCreate: number;
  readonly readsPerCreate: number;
  readonly allocationsPerSecond: number;
  readonly rawConditionalPutsPerSecond: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
}

/** What the benchmark writes. */
export interface HostPortBenchResult {
  readonly concurrency: readonly ConcurrencyResult[];
  /** A full day with blocks of 4 and 16 among single ports (`hostports-day.ts`). */
  readonly blockDay: BlockDayResult;
  readonly spread: {
    readonly firstPick: {
      readonly trials: number;
      readonly ports: number;
      readonly min: number;
      readonly max: number;
      readonly mean: number;
      readonly standardDeviation: number;
      readonly threeSigma: readonly [number, number];
      readonly minSigma: number;
      readonly maxSigma: number;
      readonly portsOutsideThreeSigma: number;
      readonly expectedOutsideThreeSigma: number;
      readonly chiSquare: number;
      readonly chiSquareDegreesOfFreedom: number;
      readonly chiSquareZ: number;
      readonly agonesScaled: {
        readonly min: number;
        readonly max: number;
        readonly mean: number;
        readonly minSigma: number;
        readonly maxSigma: number;
      };
    };
    readonly sequential: {
      readonly allocations: number;
      readonly minCount: number;
      readonly maxCount: number;
      readonly nextPortRuns: number;
    };
  };
}

/** One way of loading the range. */
interface Scenario {
  readonly scenario: string;
  readonly ports: number;
  /** Each port a block of this many (`count`). */
  readonly count?: number;
  /** Before each round, fill a fresh range so that only this many ports remain at the lowest count. */
  readonly leftAtLowest?: number;
  /** One handler (one view) for the round's 32 pods, or one warm container per pod. */
  readonly serving: 'one process' | 'a container per pod';
}

const SCENARIOS: readonly Scenario[] = [
  { scenario: '1-port pods, room at the lowest count', ports: 1, serving: 'one process' },
  { scenario: '3-port pods, room at the lowest count', ports: 3, serving: 'one process' },
  {
    scenario: '1-port pods, level boundary (16 left)',
    ports: 1,
    leftAtLowest: 16,
    serving: 'one process',
  },
  {
    scenario: '1-port pods, room at the lowest count, 32 containers',
    ports: 1,
    serving: 'a container per pod',
  },
  {
    scenario: '1-port pods, level boundary (16 left), 32 containers',
    ports: 1,
    leftAtLowest: 16,
    serving: 'a container per pod',
  },
  {
    scenario: 'pods with a block of 4, room at the lowest count, 32 containers',
    ports: 1,
    count: 4,
    serving: 'a container per pod',
  },
];

async function concurrency(endpoint: string): Promise<ConcurrencyResult[]> {
  const client = dynamoClient({ endpoint });
  countRoundTrips(client);
  const tableName = `bench-hostports-${randomUUID()}`;
  await ensureTable(client, tableName);
  const config = parseConfig({ hostPortRanges: { default: RANGE } });
  const [range] = hostPortRangesOf(config);
  if (!range) throw new Error('no default range');
  const results: ConcurrencyResult[] = [];
  let clusterSeq = 0;
  for (const { scenario, ports, count, leftAtLowest, serving } of SCENARIOS) {
    let conflictRetries = 0;
    const meter = new CapacityMeter();
    const allocated: string[] = [];
    /** A fresh range (its own cluster) and its runtimes' pod webhooks (pods with no node: no reads). */
    const newRange = () => {
      const cluster = { ...config, cluster: `bench${clusterSeq++}` };
      const handler = () =>
        createRuntime({
          config: cluster,
          dynamo: client,
          tableName,
          meter,
          onAllocated: (event) => {
            conflictRetries += event.conflicts;
            allocated.push(event.id);
          },
        });
      const one = handler();
      const handlers = Array.from({ length: CONCURRENCY }, (_, i) =>
        serving === 'one process' || i === 0 ? one : handler(),
      );
      return { store: one.hostPortStore, handlers: handlers.map((h) => h.admission.pods) };
    };
    let current = newRange();
    const annotation = JSON.stringify(
      Array.from({ length: ports }, (_, i) => ({
        name: `p${i}`,
        containerPort: 7000 + i,
        ...(count === undefined ? {} : { count }),
      })),
    );
    let seq = 0;
    const review = (operation: 'CREATE' | 'DELETE', options: { id?: string; dryRun?: boolean }) => {
      const n = seq++;
      const pod = {
        metadata: {
          generateName: 'fleet-',
          namespace: 'bench',
          annotations: {
            [PORTS_ANNOTATION]: annotation,
            ...(options.id ? { [ALLOCATION_ID_ANNOTATION]: options.id } : {}),
          },
        },
        spec: { containers: [{ name: 'game' }] },
      };
      return parseAdmissionReview({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: `bench-${n}`,
          resource: { group: '', version: 'v1', resource: 'pods' },
          namespace: 'bench',
          operation,
          ...(operation === 'CREATE' ? { object: pod } : { oldObject: pod }),
          ...(options.dryRun ? { dryRun: true } : {}),
        },
      });
    };
    const create = async (
      handler: BerthRuntime['admission']['pods'],
    ): Promise<{ allowed: boolean; ms: number; roundTrips: number }> => {
      const started = performance.now();
      const { value, roundTrips } = await withRoundTrips(() => handler(review('CREATE', {})));
      return { allowed: value.allowed, ms: performance.now() - started, roundTrips };
    };
    let putSeq = 0;
    const put = () =>
      client.send(
        new PutItemCommand({
          TableName: tableName,
          Item: { pk: { S: `bench#raw#${scenario}` }, sk: { S: String(putSeq++) } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    // All ports but `left` get one use (the record, then one write per count block).
    const prefill = async (left: number) => {
      await recordHostPorts(current.store, {
        id: `prefill-${clusterSeq}`,
        pod: { kind: 'Pod', namespace: 'bench', name: 'prefill', generateName: '' },
        ports: Array.from({ length: range.size - left }, (_, i) => ({
          name: `f${i}`,
          range: range.name,
          port: range.first + i,
          protocol: 'UDP' as const,
        })),
        createdAt: Date.now(),
      });
    };
    /** A fresh range, loaded as the scenario says, whose handlers have seen its counts. */
    const prepare = async () => {
      current = newRange();
      if (leftAtLowest !== undefined) await prefill(leftAtLowest);
      // A dry run reads the counts into each handler's view and writes nothing: the containers
      // are warm, as a busy fleet's are.
      for (const handler of new Set(current.handlers)) {
        await handler(review('CREATE', { dryRun: true }));
      }
    };

    // Warm-up: JIT (node and DynamoDB Local's JVM), sockets, caches; not counted.
    for (let round = 0; round < WARM_UP_ROUNDS; round++) {
      await prepare();
      await Promise.all(Array.from({ length: CONCURRENCY }, put));
      await Promise.all(current.handlers.map(create));
    }
    conflictRetries = 0;

    let allocMs = 0;
    let rawMs = 0;
    let denied = 0;
    let roundTrips = 0;
    let reads = 0;
    let createUnits = 0;
    let deleteUnits = 0;
    let deletes = 0;
    const latencies: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Each round gets a fresh range, so rounds do not drift into a level boundary unasked.
      await prepare();
      allocated.length = 0;
      const rawStart = performance.now();
      await Promise.all(Array.from({ length: CONCURRENCY }, put));
      rawMs += performance.now() - rawStart;
      const before = meter.totals();
      const allocStart = performance.now();
      const outcomes = await Promise.all(current.handlers.map(create));
      allocMs += performance.now() - allocStart;
      const afterCreates = meter.totals();
      createUnits += afterCreates.writeUnits - before.writeUnits;
      reads += afterCreates.readRequests - before.readRequests;
      denied += outcomes.filter((o) => !o.allowed).length;
      roundTrips += outcomes.reduce((sum, o) => sum + o.roundTrips, 0);
      latencies.push(...outcomes.map((o) => o.ms));
      await Promise.all(
        allocated.map((id, i) => current.handlers[i % CONCURRENCY]?.(review('DELETE', { id }))),
      );
      deletes += allocated.length;
      deleteUnits += meter.totals().writeUnits - afterCreates.writeUnits;
    }
    const allocations = ROUNDS * CONCURRENCY - denied;
    results.push({
      scenario,
      ports,
      ...(count === undefined ? {} : { count }),
      room: leftAtLowest === undefined,
      serving,
      allocations,
      denied,
      conflictRetries,
      retriesPerAllocation: conflictRetries / Math.max(1, allocations),
      wcuPerCreate: createUnits / Math.max(1, allocations),
      wcuPerDelete: deleteUnits / Math.max(1, deletes),
      roundTripsPerCreate: roundTrips / Math.max(1, ROUNDS * CONCURRENCY),
      readsPerCreate: reads / Math.max(1, ROUNDS * CONCURRENCY),
      allocationsPerSecond: allocations / (allocMs / 1000),
      rawConditionalPutsPerSecond: (ROUNDS * CONCURRENCY) / (rawMs / 1000),
      p50Ms: percentile(latencies, 50),
      p95Ms: percentile(latencies, 95),
    });
  }
  client.destroy();
  return results;
}

function spread(): HostPortBenchResult['spread'] {
  // First pick of a fresh range, as Agones measured it: every trial starts from all-zero counts.
  const fresh = new Array<number>(RANGE_SIZE).fill(0);
  const hits = new Array<number>(RANGE_SIZE).fill(0);
  for (let t = 0; t < SPREAD_TRIALS; t++) {
    const offset = chooseOneLeastUsed(fresh, Math.random);
    hits[offset] = (hits[offset] ?? 0) + 1;
  }
  const p = 1 / RANGE_SIZE;
  const mean = SPREAD_TRIALS * p;
  const sd = Math.sqrt(SPREAD_TRIALS * p * (1 - p));
  const min = Math.min(...hits);
  const max = Math.max(...hits);
  const chiSquare = hits.reduce((sum, h) => sum + (h - mean) ** 2 / mean, 0);
  const df = RANGE_SIZE - 1;
  // Agones' numbers, in standard deviations of its own run, then at this run's scale.
  const agonesSd = Math.sqrt(AGONES.trials * p * (1 - p));
  const agonesMinSigma = (AGONES.min - AGONES.mean) / agonesSd;
  const agonesMaxSigma = (AGONES.max - AGONES.mean) / agonesSd;
  const scale = SPREAD_TRIALS / AGONES.trials;

  // Sequential allocations in one range: the counts the webhook would leave behind.
  const counts = new Array<number>(RANGE_SIZE).fill(0);
  let previous = -2;
  let nextPortRuns = 0;
  for (let t = 0; t < SPREAD_TRIALS; t++) {
    const offset = chooseOneLeastUsed(counts, Math.random);
    counts[offset] = (counts[offset] ?? 0) + 1;
    if (offset === previous + 1) nextPortRuns++;
    previous = offset;
  }
  return {
    firstPick: {
      trials: SPREAD_TRIALS,
      ports: RANGE_SIZE,
      min,
      max,
      mean,
      standardDeviation: sd,
      threeSigma: [mean - 3 * sd, mean + 3 * sd],
      minSigma: (min - mean) / sd,
      maxSigma: (max - mean) / sd,
      portsOutsideThreeSigma: hits.filter((h) => Math.abs(h - mean) > 3 * sd).length,
      expectedOutsideThreeSigma: RANGE_SIZE * 0.0027,
      chiSquare,
      chiSquareDegreesOfFreedom: df,
      // Wilson–Hilferty: chi-square with df degrees of freedom as a standard normal z.
      chiSquareZ: ((chiSquare / df) ** (1 / 3) - (1 - 2 / (9 * df))) / Math.sqrt(2 / (9 * df)),
      agonesScaled: {
        min: AGONES.min * scale,
        max: AGONES.max * scale,
        mean: AGONES.mean * scale,
        minSigma: agonesMinSigma,
        maxSigma: agonesMaxSigma,
      },
    },
    sequential: {
      allocations: SPREAD_TRIALS,
      minCount: Math.min(...counts),
      maxCount: Math.max(...counts),
      nextPortRuns,
    },
  };
}

const fixed = (n: number, digits = 1): string => n.toFixed(digits);

function printDay(day: BlockDayResult): void {
  console.log(
    `\nHost ports: a full day in one ${1001}-port range, ${DAY_LOAD.troughSessions}-${DAY_LOAD.peakSessions} concurrent sessions of ${DAY_LOAD.meanSessionMinutes} min on average (${day.sessions} sessions, peak ${day.peakPortsHeld} ports held)`,
  );
  console.table(
    day.kinds.map((k) => ({
      kind: k.kind,
      placed: k.allocations,
      denied: k.denied,
      'above the lowest count': k.tookSlack,
    })),
  );
  const f = day.largestFreeBlock;
  console.log(
    `  largest free block (longest run at the lowest count, every ${DAY_LOAD.sampleEveryMinutes} min): min ${f.min}, p5 ${f.p5}, p50 ${f.p50}; under 16 in ${f.samplesUnder16} of ${f.samples} samples; widest spread ${day.maxSpread}`,
  );
}

function print(result: HostPortBenchResult): void {
  printDay(result.blockDay);
  console.log('\nHost ports: 32 concurrent pod CREATEs against DynamoDB Local');
  console.table(
    result.concurrency.map((c) => ({
      scenario: c.scenario,
      allocations: c.allocations,
      denied: c.denied,
      'retries/alloc (≤ 0.3)': fixed(c.retriesPerAllocation, 3),
      'WCU/CREATE': fixed(c.wcuPerCreate, 2),
      'WCU/DELETE': fixed(c.wcuPerDelete, 2),
      'trips/CREATE': fixed(c.roundTripsPerCreate, 2),
      'reads/CREATE': fixed(c.readsPerCreate, 2),
      'alloc/s': fixed(c.allocationsPerSecond),
      'raw cond. put/s': fixed(c.rawConditionalPutsPerSecond),
      'p50 ms': fixed(c.p50Ms),
      'p95 ms': fixed(c.p95Ms),
    })),
  );
  const f = result.spread.firstPick;
  const s = result.spread.sequential;
  console.log(
    `Host ports: spread of the first pick of a fresh ${f.ports}-port range over ${f.trials} trials`,
  );
  console.table([
    {
      run: 'berth (uniform among least used)',
      'min hits': f.min,
      'max hits': f.max,
      mean: fixed(f.mean),
      'min σ': fixed(f.minSigma, 2),
      'max σ': fixed(f.maxSigma, 2),
    },
    {
      run: 'Agones (Go map order), 200,000 trials scaled ×0.5',
      'min hits': fixed(f.agonesScaled.min),
      'max hits': fixed(f.agonesScaled.max),
      mean: fixed(f.agonesScaled.mean),
      'min σ': fixed(f.agonesScaled.minSigma, 2),
      'max σ': fixed(f.agonesScaled.maxSigma, 2),
    },
  ]);
  console.log(
    `  uniform: σ = ${fixed(f.standardDeviation, 2)}, ±3σ = ${fixed(f.threeSigma[0])}..${fixed(f.threeSigma[1])}; ports outside ±3σ: ${f.portsOutsideThreeSigma} (expected for a uniform source: ${fixed(f.expectedOutsideThreeSigma)}); χ² = ${fixed(f.chiSquare)} on ${f.chiSquareDegreesOfFreedom} df (z = ${fixed(f.chiSquareZ, 2)})`,
  );
  console.log(
    `  ${s.allocations} sequential allocations in one range: counts ${s.minCount}..${s.maxCount}; picks equal to previous + 1: ${s.nextPortRuns}`,
  );
}

/** Runs both parts, prints the tables and writes `bench/results/hostports.json`. */
export async function runHostPortBench(
  options: { readonly endpoint?: string } = {},
): Promise<HostPortBenchResult> {
  const local = options.endpoint ? undefined : await startDynamoDbLocal();
  try {
    const endpoint = options.endpoint ?? local?.endpoint ?? '';
    const result: HostPortBenchResult = {
      concurrency: await concurrency(endpoint),
      blockDay: blockDay(Math.random),
      spread: spread(),
    };
    print(result);
    const targets = result.concurrency.flatMap((c) => [
      {
        target: `at most 0.3 conflict retries per allocation: ${c.scenario}`,
        pass: c.retriesPerAllocation <= 0.3,
        line: `${c.scenario}: ${c.retriesPerAllocation.toFixed(3)} retries per allocation over ${c.allocations} allocations (${c.wcuPerCreate.toFixed(3)} WCU per CREATE, failed writes included)`,
      },
      {
        target: `at most 1.3 round trips on a CREATE's critical path on average: ${c.scenario}`,
        pass: c.roundTripsPerCreate <= 1.3,
        line: `${c.scenario}: ${c.roundTripsPerCreate.toFixed(3)} round trips per CREATE (${c.readsPerCreate.toFixed(3)} reads)`,
      },
      ...(c.room
        ? [
            {
              target: `at most 2.1 WCU per CREATE with room, failed writes included: ${c.scenario}`,
              pass: c.wcuPerCreate <= 2.1,
              line: `${c.scenario}: ${c.wcuPerCreate.toFixed(3)} WCU per CREATE`,
            },
          ]
        : []),
      // One process never races itself: a 1-port pod is the record and one count write.
      ...(c.ports === 1 && c.count === undefined && c.serving === 'one process'
        ? [
            {
              target: `at most 2 WCU per 1-port pod CREATE and per DELETE, record included: ${c.scenario}`,
              pass: c.wcuPerCreate <= 2 && c.wcuPerDelete <= 2,
              line: `${c.scenario}: ${c.wcuPerCreate.toFixed(3)} WCU per CREATE, ${c.wcuPerDelete.toFixed(3)} per DELETE, failed writes included`,
            },
          ]
        : []),
    ]);
    const day = result.blockDay;
    const denied = day.kinds.reduce((sum, k) => sum + k.denied, 0);
    const blocks = day.kinds.filter((k) => k.kind !== 'single port');
    targets.push({
      target: 'no block denied over a full day with blocks of 4 and 16 among single ports',
      pass: denied === 0,
      line: `a day of ${day.sessions} sessions: ${denied} denied (${day.kinds.map((k) => `${k.kind}: ${k.allocations} placed, ${k.denied} denied`).join('; ')}); placed above the lowest count with ports there left uncovered: ${blocks.map((k) => `${k.kind} ${k.tookSlack}`).join(', ')}; widest spread after an allocation ${day.maxSpread} (releases included); largest free block min ${day.largestFreeBlock.min}, p5 ${day.largestFreeBlock.p5}, p50 ${day.largestFreeBlock.p50}`,
    });
    for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.line}`);
    await writeResults('hostports', { ...result, targets });
    return result;
  } finally {
    await local?.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  await runHostPortBench();
}

/**
 * Public fronts benchmark: berth's fronts worker against OpenKruise Game's AWS
 * network plugins, on the same events and the same ELBv2 and Global Accelerator fakes, on
 * simulated time (`fronts/harness.ts`):
 * - 100 game servers behind NLBs created at once; 100 behind the Global Accelerator at once;
 * - a chaos run (throttling, an NLB reaching its 50 listeners, CREATEs that never land, the
 *   controller dying twice, deletions and new game servers on freed ports), then repair's grace;
 * - a steady hour of game servers arriving one at a time (reported, not judged).
 * Reports binding → reachable (p50, p99), mutating calls per game server, public ports held
 * twice and orphans left; judges the targets (`fronts/targets.ts`); writes fronts.json. Run with
 * `npm run bench -- fronts`.
 */
import { pathToFileURL } from 'node:url';
import { REFERENCE_FLEET } from './cost/fleet.js';
import { berthSlotsSystem, berthSystem } from './fronts/berth.js';
import {
  type RunResult,
  reachableStats,
  readySignalStats,
  runScenario,
  type Scenario,
} from './fronts/harness.js';
import { CALL_LATENCY_MS } from './fronts/kit.js';
import { type ModeFootprint, modeFootprints } from './fronts/modes.js';
import { okgSystem } from './fronts/okg.js';
import {
  burstScenario,
  chaosScenario,
  SLOT_SEATS,
  slotsChaosScenario,
  slotsChurnScenario,
  slotsScenario,
  steadyScenario,
} from './fronts/scenarios.js';
import { callsPerSeatLifetime, judgeFronts } from './fronts/targets.js';
import { type TargetVerdict, writeResults } from './support/results.js';
import { printTable } from './support/table.js';

/** One run as the results file keeps it: the measures, not every game server. */
function summary(run: RunResult) {
  const readySignal = readySignalStats(run);
  const fronts = (['nlb', 'accelerator'] as const).filter((front) =>
    run.outcomes.some((o) => o.front === front),
  );
  return {
    system: run.system,
    scenario: run.scenario,
    reachable: Object.fromEntries(fronts.map((front) => [front, reachableStats(run, front)])),
    ...(readySignal ? { readySignal } : {}),
    elbv2MutatingCalls: run.elbv2MutatingCalls,
    acceleratorMutatingCalls: run.acceleratorMutatingCalls,
    elbv2Calls: run.elbv2Calls,
    acceleratorCalls: run.acceleratorCalls,
    throttled: run.throttled,
    elbv2OverBucket: run.elbv2OverBucket,
    refusals: run.refusals,
    doublyHeld: run.doublyHeld,
    orphans: run.orphans,
    simulatedSeconds: run.simulatedSeconds,
    ...(run.nodes ? { nodes: run.nodes, elbv2CallsWhileBinding: run.elbv2CallsWhileBinding } : {}),
  };
}

function rows(runs: readonly RunResult[]) {
  return runs.flatMap((run) =>
    (['nlb', 'accelerator'] as const)
      .filter((front) => run.outcomes.some((o) => o.front === front))
      .map((front) => {
        const stats = reachableStats(run, front);
        const calls = front === 'nlb' ? run.elbv2MutatingCalls : run.acceleratorMutatingCalls;
        return [
          run.scenario,
          run.system,
          front,
          stats.gameServers,
          stats.p50,
          stats.p99,
          stats.never,
          calls,
          Math.round((calls / Math.max(1, stats.gameServers)) * 100) / 100,
          run.throttled,
          run.doublyHeld.length,
          run.orphans.length,
        ];
      }),
  );
}

/** What `runFrontsBench` answers and writes. */
export interface FrontsBenchResult {
  readonly runs: readonly ReturnType<typeof summary>[];
  readonly modes: readonly ModeFootprint[];
  readonly targets: readonly TargetVerdict[];
  readonly settings: Readonly<Record<string, unknown>>;
  readonly runtimeMs: number;
}

/** Runs every scenario for berth and OKG, prints the comparison, judges, writes fronts.json. */
export async function runFrontsBench(): Promise<FrontsBenchResult> {
  const started = performance.now();
  const both = async (scenario: Scenario) => ({
    berth: await runScenario(scenario, berthSystem),
    peer: await runScenario(scenario, okgSystem),
  });
  const nlbBurst = await both(burstScenario('nlb'));
  const acceleratorBurst = await both(burstScenario('accelerator'));
  const chaos = await both(chaosScenario());
  const day = await both(steadyScenario());
  const slots = {
    burst: await runScenario(slotsScenario(), berthSlotsSystem),
    churn: await runScenario(slotsChurnScenario(), berthSlotsSystem),
    chaos: await runScenario(slotsChaosScenario(), berthSlotsSystem),
    seats: SLOT_SEATS.length,
  };
  const all = [
    ...[nlbBurst, acceleratorBurst, chaos, day].flatMap((r) => [r.berth, r.peer]),
    slots.burst,
    slots.churn,
    slots.chaos,
  ];
  const targets = judgeFronts({ nlbBurst, acceleratorBurst, chaos, steady: day, slots });
  const modes = modeFootprints();
  printTable(
    [
      'scenario',
      'system',
      'front',
      'game servers',
      'p50 s',
      'p99 s',
      'never',
      'mutating calls',
      'per game server',
      'throttled',
      'held twice',
      'orphans',
    ],
    rows(all),
  );
  for (const run of all) {
    const refusals = Object.entries(run.refusals).map(([code, n]) => `${code} ${n}`);
    if (refusals.length > 0)
      console.log(`  ${run.scenario} ${run.system}: refused ${refusals.join(', ')}`);
    const ready = readySignalStats(run);
    if (ready) {
      console.log(
        `  ${run.scenario} ${run.system}: told ready (berth.dev/fronts-ready) p50 ${ready.p50} s, p99 ${ready.p99} s after players could reach it; ${ready.neverTold} reachable never told, ${ready.toldEarly} told before reachable`,
      );
    }
    for (const line of [...run.doublyHeld.slice(0, 3), ...run.orphans.slice(0, 3)]) {
      console.log(`  ${run.scenario} ${run.system}: ${line}`);
    }
  }
  console.log('');
  console.log(
    `NLB modes for the reference fleet (${REFERENCE_FLEET.gameNodes} nodes, ${REFERENCE_FLEET.concurrentGameServers} game servers at once, all behind NLBs; load balancer hours only):`,
  );
  printTable(
    [
      'mode',
      'listeners',
      'NLBs',
      'target groups / Region quota',
      'NLB $ a month',
      'NLB burst p99 s',
    ],
    modes.map((m) => [
      m.mode,
      m.listeners,
      m.loadBalancers,
      m.targetGroupQuotas,
      m.monthlyUsd,
      reachableStats(m.mode === 'slots' ? slots.burst : nlbBurst.berth, 'nlb').p99,
    ]),
  );
  for (const run of [slots.burst, slots.churn, slots.chaos]) {
    const calls = callsPerSeatLifetime(run, slots.seats);
    const nodes = (run.nodes ?? [])
      .map(
        (n) =>
          `${n.name} ${n.seatsServingMs === undefined ? 'never' : `${n.seatsServingMs / 1000} s`}`,
      )
      .join(', ');
    console.log(
      `  ${run.scenario} ${run.system}: slots serving after Ready: ${nodes}; ${calls.perLifetime} ELB calls per slot lifetime`,
    );
  }
  console.log('');
  for (const target of targets) {
    console.log(`  ${target.pass ? 'PASS' : 'FAIL'}  ${target.target}: ${target.line}`);
  }
  const result: FrontsBenchResult = {
    runs: all.map(summary),
    modes,
    targets,
    settings: {
      callLatencyMs: CALL_LATENCY_MS,
      note: 'simulated time; every call pays the same latency for both systems; OKG at its defaults (bench/fronts/okg.ts cites each)',
    },
    runtimeMs: Math.round(performance.now() - started),
  };
  console.log(`runtime ${result.runtimeMs} ms`);
  await writeResults('fronts', { command: 'npm run bench -- fronts', ...result });
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runFrontsBench();
}

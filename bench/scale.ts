/**
 * The node scale benchmark: one simulated 24-hour day of game sessions (diurnal arrivals,
 * sessions of 5–40 minutes, bursts) on a simulated cluster, scaled twice with the same arrivals
 * and the same node boot delay: once by berth's plan (the very `buildSnapshot` + `planScale` the
 * pass runs, fed Kubernetes objects), once by the paddle-soccer nodescaler as
 * `shared/reference/scale-down.md` describes it (CPU limits against capacity, pod-count sort, no
 * minimum on cordon, re-cordoning, list-order deletion). Reports node-hours, interrupted games,
 * pods that waited for a slot and cordon/uncordon churn; writes `bench/results/scale.json`.
 *
 * Simulation rules, the same for both scalers:
 * - time advances in 10 s steps; both scalers run every 60 s at the same instants;
 * - an instance asked for registers its Node (NotReady) after 90 s and is Ready after 180 s;
 * - the scheduler places pending game servers first come first served, by CPU requests against
 *   allocatable, onto the Ready schedulable node with the most game servers (berth's preferred
 *   pod affinity packs them); a pod not placed in the step it arrived in has waited;
 * - every node runs one DaemonSet pod; a session starts when its pod is placed;
 * - a node deleted with game servers on it interrupts them; the pool never shrinks on a grow
 *   request (the upstream NodePool contract; the GCE shrink bug is not modelled);
 * - the upstream scaler also runs on every game pod Added/Deleted event; here both run on the
 *   same 60 s tick, so the comparison is of the algorithms, not of their triggers.
 *
 * The main scenario carries the targets; the other scenarios are printed and stored beside it to
 * show where berth's advantage comes from (the baseline counts limits, so it over-provisions)
 * and where it ends (a buffer too small for the arrival rate makes berth's players wait).
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../shared/config/schema.js';
import { scalePolicy } from '../shared/scale/policy.js';
import { berthScaler } from './scale/berth.js';
import {
  arrivals,
  type DayOutcome,
  MAIN_SCENARIO,
  round,
  SCENARIOS,
  type Scenario,
  simulateDay,
} from './scale/day.js';
import { paddleSoccerScaler } from './scale/paddle-soccer.js';
import { writeResults } from './support/results.js';

/** Both scalers over one scenario's day. */
export interface ScenarioResult {
  readonly scenario: string;
  readonly description: string;
  readonly berth: DayOutcome;
  readonly baseline: DayOutcome;
  /** berth's node-hours over the baseline's. */
  readonly nodeHoursRatio: number;
  readonly targets: {
    readonly nodeHoursAtMost90Percent: boolean;
    readonly noInterruptedGames: boolean;
    readonly noMoreWaitingPods: boolean;
  };
}

/** The main scenario (which carries the targets) and the others. */
export interface ScaleBenchResult {
  readonly main: ScenarioResult;
  readonly scenarios: readonly ScenarioResult[];
  readonly targetsMet: boolean;
}

function compare(sc: Scenario): ScenarioResult {
  const day = arrivals(sc);
  const policy = scalePolicy(parseConfig({ scale: sc.scale }).scale);
  const berth = simulateDay(sc, day, berthScaler(sc, policy));
  const baseline = simulateDay(sc, day, paddleSoccerScaler(sc));
  const nodeHoursRatio = round(berth.nodeHours / baseline.nodeHours, 3);
  return {
    scenario: sc.name,
    description: sc.description,
    berth,
    baseline,
    nodeHoursRatio,
    targets: {
      nodeHoursAtMost90Percent: nodeHoursRatio <= 0.9,
      noInterruptedGames: berth.interruptedGames === 0,
      noMoreWaitingPods: berth.waitingPods <= baseline.waitingPods,
    },
  };
}

/** Runs every scenario under berth and the baseline, prints tables, writes scale.json. */
export async function runScaleBench(): Promise<ScaleBenchResult> {
  const started = performance.now();
  const scenarios = SCENARIOS.map(compare);
  const [main] = scenarios;
  if (!main) throw new Error('no scenario');
  const targetsMet = Object.values(main.targets).every(Boolean);
  console.log(
    `node scale: one simulated day per scenario, berth vs paddle-soccer (${Math.round(performance.now() - started)} ms)`,
  );
  const rows = Object.keys(main.berth) as Array<keyof DayOutcome>;
  console.log(`scenario "${main.scenario}": ${main.description}`);
  console.table(
    Object.fromEntries(
      rows.map((key) => [key, { berth: main.berth[key], 'paddle-soccer': main.baseline[key] }]),
    ),
  );
  console.table(
    scenarios.map((r) => ({
      scenario: r.scenario,
      'node-hours berth/baseline': `${r.berth.nodeHours} / ${r.baseline.nodeHours} (${r.nodeHoursRatio})`,
      'waiting pods': `${r.berth.waitingPods} / ${r.baseline.waitingPods}`,
      interrupted: `${r.berth.interruptedGames} / ${r.baseline.interruptedGames}`,
      'cordons+uncordons': `${r.berth.cordons + r.berth.uncordons} / ${r.baseline.cordons + r.baseline.uncordons}`,
      targets: Object.values(r.targets).every(Boolean) ? 'met' : 'not met',
    })),
  );
  console.log(
    `main: node-hours ratio ${main.nodeHoursRatio} (target <= 0.9), interrupted ${main.berth.interruptedGames} (target 0), waiting ${main.berth.waitingPods} vs ${main.baseline.waitingPods} (target <=): ${targetsMet ? 'targets met' : 'TARGETS NOT MET'}`,
  );
  const targets = [
    {
      target: 'node-hours at most 90% of the baseline',
      pass: main.targets.nodeHoursAtMost90Percent,
      line: `${main.berth.nodeHours} node-hours against ${main.baseline.nodeHours}: ratio ${main.nodeHoursRatio}`,
    },
    {
      target: 'no game server interrupted',
      pass: main.targets.noInterruptedGames,
      line: `${main.berth.interruptedGames} games interrupted`,
    },
    {
      target: 'no more waiting pods than the baseline',
      pass: main.targets.noMoreWaitingPods,
      line: `${main.berth.waitingPods} pods waited against ${main.baseline.waitingPods}`,
    },
  ];
  await writeResults('scale', {
    policy: scalePolicy(parseConfig({ scale: MAIN_SCENARIO.scale }).scale),
    targets,
    targetsMet,
    main,
    scenarios,
    scenarioSettings: SCENARIOS,
  });
  return { main, scenarios, targetsMet };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await runScaleBench();
}

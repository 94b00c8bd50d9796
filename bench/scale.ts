/**
 * The node scale benchmark: one simulated 24-hour day of game sessions (diurnal arrivals,
 * sessions of 5–40 minutes, bursts) per scenario on a simulated cluster, scaled with the same
 * arrivals and the same node boot delay by berth (the very `buildSnapshot` + `planScale` the pass
 * runs, fed Kubernetes objects) and by each baseline:
 * - paddle-soccer: the nodescaler as `shared/reference/scale-down.md` describes it (CPU limits
 *   against capacity, pod-count sort, no minimum on cordon, re-cordoning, list-order deletion);
 * - Cluster Autoscaler at its defaults, game servers evictable (`bench/scale/cluster-autoscaler.ts`);
 * - Cluster Autoscaler with `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` game servers;
 * - Karpenter `WhenEmpty`, `consolidateAfter: 30s` (`bench/scale/karpenter.ts`);
 * - Karpenter `WhenEmptyOrUnderutilized` (`consolidateAfter: 0s`), game servers
 *   `karpenter.sh/do-not-disrupt`.
 * Cluster Autoscaler and Karpenter keep no spare buffer: they add nodes for pending pods, which is
 * the comparison. Reports node-hours, interrupted games (a scaler removed their node), games lost
 * to a node failure, pods that waited for a slot and cordon/uncordon churn; writes `scale.json`.
 *
 * Simulation rules, the same for every scaler:
 * - time advances in 10 s steps; every scaler runs every 60 s at the same instants;
 * - an instance asked for registers its Node (NotReady) after 90 s and is Ready after 180 s;
 * - the scheduler places pending game servers first come first served, by CPU requests against
 *   allocatable, onto the Ready schedulable node with the most game servers (berth's preferred
 *   pod affinity packs them); a pod not placed in the step it arrived in has waited;
 * - every node runs one DaemonSet pod; a session starts when its pod is placed;
 * - a node deleted with game servers on it interrupts them; the pool never shrinks on a grow
 *   request (the upstream NodePool contract; the GCE shrink bug is not modelled);
 * - a failed node (scenario `node-failure`) loses its games, counted apart as lost;
 * - the upstream scalers also run on events (paddle-soccer on game pod Added/Deleted, Cluster
 *   Autoscaler every 10 s, Karpenter's provisioner on pending pods); here all run on the same 60 s
 *   tick, so the comparison is of the algorithms, not of their triggers.
 *
 * Targets, per scenario (`bench/scale/targets.ts`): berth interrupts no game, has no more waiting
 * pods than the best baseline, and uses at most 90% of the node-hours of the cheapest baseline
 * that made no more pods wait than berth (vacuous when none did).
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../shared/config/schema.js';
import { scalePolicy } from '../shared/scale/policy.js';
import { berthScaler } from './scale/berth.js';
import { clusterAutoscalerScaler } from './scale/cluster-autoscaler.js';
import {
  arrivals,
  type DayOutcome,
  MAIN_SCENARIO,
  SCENARIOS,
  type Scaler,
  type Scenario,
  simulateDay,
} from './scale/day.js';
import {
  KARPENTER_UNDERUTILIZED_DO_NOT_DISRUPT,
  KARPENTER_WHEN_EMPTY_30S,
  karpenterScaler,
} from './scale/karpenter.js';
import { paddleSoccerScaler } from './scale/paddle-soccer.js';
import { judgeScenario, type ScaleTarget, type ScenarioVerdict } from './scale/targets.js';
import { writeResults } from './support/results.js';

/** The baselines berth is measured against, each a fresh scaler per simulated day. */
export const BASELINES: Readonly<Record<string, (sc: Scenario) => Scaler>> = {
  'paddle-soccer': (sc) => paddleSoccerScaler(sc),
  'ca-defaults': () => clusterAutoscalerScaler({ gameServersSafeToEvict: true }),
  'ca-safe-to-evict-false': () => clusterAutoscalerScaler({ gameServersSafeToEvict: false }),
  'karpenter-when-empty-30s': () => karpenterScaler(KARPENTER_WHEN_EMPTY_30S),
  'karpenter-underutilized-dnd': () => karpenterScaler(KARPENTER_UNDERUTILIZED_DO_NOT_DISRUPT),
};

/** berth and every baseline over one scenario's day. */
export interface ScenarioResult {
  readonly scenario: string;
  readonly description: string;
  readonly berth: DayOutcome;
  readonly baselines: Readonly<Record<string, DayOutcome>>;
  readonly targets: readonly ScenarioVerdict[];
}

/** The main scenario and the others, all carrying targets. */
export interface ScaleBenchResult {
  readonly main: ScenarioResult;
  readonly scenarios: readonly ScenarioResult[];
  readonly targets: readonly ScaleTarget[];
  readonly targetsMet: boolean;
}

function compare(sc: Scenario): ScenarioResult {
  const day = arrivals(sc);
  const policy = scalePolicy(parseConfig({ scale: sc.scale }).scale);
  const berth = simulateDay(sc, day, berthScaler(sc, policy));
  const baselines = Object.fromEntries(
    Object.entries(BASELINES).map(([name, make]) => [name, simulateDay(sc, day, make(sc))]),
  );
  return {
    scenario: sc.name,
    description: sc.description,
    berth,
    baselines,
    targets: judgeScenario(berth, baselines),
  };
}

/** Runs every scenario under berth and the baselines, prints tables, writes scale.json. */
export async function runScaleBench(): Promise<ScaleBenchResult> {
  const started = performance.now();
  const scenarios = SCENARIOS.map(compare);
  const [main] = scenarios;
  if (!main) throw new Error('no scenario');
  const targets: ScaleTarget[] = scenarios.flatMap((r) =>
    r.targets.map((t) => ({ target: `${r.scenario}: ${t.name}`, pass: t.pass, line: t.line })),
  );
  const targetsMet = targets.every((t) => t.pass);
  console.log(
    `node scale: one simulated day per scenario, berth vs ${Object.keys(BASELINES).join(', ')} (${Math.round(performance.now() - started)} ms)`,
  );
  const outcomes = (r: ScenarioResult): Record<string, DayOutcome> => ({
    berth: r.berth,
    ...r.baselines,
  });
  console.log(`scenario "${main.scenario}": ${main.description}`);
  const rows = Object.keys(main.berth) as Array<keyof DayOutcome>;
  console.table(
    Object.fromEntries(
      rows.map((key) => [
        key,
        Object.fromEntries(Object.entries(outcomes(main)).map(([name, o]) => [name, o[key]])),
      ]),
    ),
  );
  for (const r of scenarios.slice(1)) console.log(`scenario "${r.scenario}": ${r.description}`);
  console.table(
    scenarios.flatMap((r) =>
      Object.entries(outcomes(r)).map(([scaler, o]) => ({
        scenario: r.scenario,
        scaler,
        'node-hours': o.nodeHours,
        'waiting pods': o.waitingPods,
        interrupted: o.interruptedGames,
        lost: o.lostGames,
      })),
    ),
  );
  for (const t of targets) console.log(`${t.pass ? 'pass' : 'FAIL'}  ${t.target}: ${t.line}`);
  console.log(
    `${targets.filter((t) => t.pass).length}/${targets.length} targets met${targetsMet ? '' : ': TARGETS NOT MET'}`,
  );
  await writeResults('scale', {
    policy: scalePolicy(parseConfig({ scale: MAIN_SCENARIO.scale }).scale),
    targets,
    targetsMet,
    main,
    scenarios,
    scenarioSettings: SCENARIOS,
  });
  return { main, scenarios, targets, targetsMet };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await runScaleBench();
}

/**
 * The node scale benchmark: one simulated 24-hour day of game sessions (diurnal arrivals,
 * sessions of 5–40 minutes, bursts) per scenario on a simulated cluster, scaled with the same
 * arrivals, the same node boot delay and the same scheduler by berth (the very `buildSnapshot` +
 * `planScale` the pass runs, fed Kubernetes objects, every 60 s, with scale-up passes triggered by
 * admissions at most every 10 s between them, as the local server runs them:
 * `bench/scale/berth.ts`, shared/scale/trigger.ts; the same berth on the 60 s schedule alone, as
 * the AWS schedule runs it until the admission function triggers passes there too, is printed as
 * information) and by each baseline, each configured as its users run it for game servers, on its
 * own loop:
 * - paddle-soccer: the nodescaler of the article it was written for (`bench/scale/paddle-soccer.ts`),
 *   every 10 s;
 * - Cluster Autoscaler (`bench/scale/cluster-autoscaler.ts`), every 10 s, game servers
 *   `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` (as Agones and berth's webhook mark
 *   them), with no placeholders, with as many placeholder pods as berth's buffer, and with as many
 *   as a careful operator sizes for the day's peak (`peakPlaceholders`); the run with evictable
 *   game servers (CA's defaults) is printed as information and judged by no target: it interrupts
 *   games;
 * - Karpenter (`bench/scale/karpenter.ts`), provisioning within the step, `WhenEmpty` and
 *   `WhenEmptyOrUnderutilized` with `karpenter.sh/do-not-disrupt` game servers, each with
 *   `consolidateAfter` 30 s, 5 min and 15 min, each with the same three placeholder counts.
 * Every run is printed; the best of each peer (fewest waiting pods, then fewest node-hours) is
 * named. Reports node-hours, interrupted games (a scaler removed their node), games lost to a
 * node failure, pods that waited for a slot, placeholders and their preemptions, and
 * cordon/uncordon churn; writes `scale.json`.
 *
 * Simulation rules, the same for every scaler:
 * - time advances in 10 s steps; a scaler runs at the steps its loop interval divides;
 * - an instance asked for registers its Node (NotReady) after 90 s and is Ready after 180 s;
 * - one scheduler (`bench/scale/day.ts`): game servers packed as Agones' `Packed` strategy does,
 *   preempting placeholders when they fit nowhere; placeholders spread by kube-scheduler's default
 *   scoring; a game server not placed in the step it arrived in has waited;
 * - every node runs one DaemonSet pod; a session starts when its pod is placed;
 * - a node deleted with game servers on it interrupts them; the pool never shrinks on a grow
 *   request (the upstream NodePool contract; the GCE shrink bug is not modelled);
 * - a failed node (scenario `node-failure`) loses its games, counted apart as lost.
 *
 * Two Agones-style days follow (`bench/scale/agones-day.ts`, `bench/scale/agones.ts`): a Fleet
 * keeps a Ready buffer, matches allocate Ready servers, and on the node-upgrade day every node
 * must be replaced within 24 h of its launch; there the waits are allocations that found no Ready
 * server, the interrupted games Allocated servers, and the node-hours target is 0.85.
 *
 * Then the weeks (`bench/scale/weeks.ts`, `bench/scale/tuned-weeks.ts`): four weeks at three
 * seeds, or with `--trace FILE` a recorded trace, berth on its defaults against every peer tuned
 * on the first week by bisection of its placeholder count, each beside the clairvoyant schedule.
 *
 * Targets, per scenario (`bench/scale/targets.ts`), over every baseline run but the information
 * ones: berth interrupts no game, has no more waiting pods than the best run, and uses at most
 * 90% of the node-hours of the cheapest run that made no more pods wait than berth (vacuous when
 * none did); and on each main-style day no more node-hours, at no more waits, than Cluster
 * Autoscaler or Karpenter tuned in hindsight for that day (`tuned-weeks.ts`).
 */

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../shared/config/schema.js';
import { scalePolicy } from '../shared/scale/policy.js';
import { compareAgones } from './scale/agones.js';
import { AGONES_DAY, AGONES_SCENARIOS } from './scale/agones-day.js';
import { compareSessions, SESSIONS_DAY } from './scale/agones-sessions.js';
import { berthAsServed, berthScaler } from './scale/berth.js';
import { clusterAutoscalerScaler } from './scale/cluster-autoscaler.js';
import {
  arrivals,
  type DayOutcome,
  HOUR,
  MAIN_SCENARIO,
  MINUTE,
  round,
  SCENARIOS,
  type Scenario,
  simulateDay,
} from './scale/day.js';
import { nodeHourFloors } from './scale/floor.js';
import {
  CONSOLIDATE_AFTER_SWEEP_MS,
  consolidateAfterLabel,
  KARPENTER_POLICIES,
  karpenterScaler,
  LOOP_MS,
} from './scale/karpenter.js';
import { paddleSoccerScaler } from './scale/paddle-soccer.js';
import type { Baseline, ScenarioResult } from './scale/result.js';
import {
  floorsBeside,
  judgeScenario,
  judgeTunedDay,
  judgeWeeks,
  NODE_HOURS_RATIO_TARGET,
  type ScaleTarget,
} from './scale/targets.js';
import {
  type TraceInput,
  type TunedSetting,
  tunablePeers,
  tunePeer,
  weeksRuns,
} from './scale/tuned-weeks.js';
import { WEEKS_WORKLOAD } from './scale/weeks.js';
import { writeResults } from './support/results.js';

/**
 * Placeholders a careful operator keeps for the day's peak: the game servers that arrive at the
 * peak rate (`basePerMinute + peakPerMinute`) while a node is provisioned (the boot delay and one
 * 10 s loop of the scaler), rounded up. Bursts and waves are not foreseen: a static count held
 * all day for them costs more than the waits it saves.
 */
export function peakPlaceholders(sc: Scenario): number {
  const { basePerMinute, peakPerMinute } = sc.arrivals;
  return Math.ceil(((basePerMinute + peakPerMinute) * (sc.bootDelayMs + LOOP_MS)) / MINUTE);
}

/** The placeholder counts every Cluster Autoscaler and Karpenter run is tried with. */
const PLACEHOLDER_COUNTS: Readonly<Record<string, (sc: Scenario) => number>> = {
  '': () => 0,
  '+ph-buffer': (sc) => sc.scale.bufferGameServers,
  '+ph-peak': peakPlaceholders,
};

function karpenterRuns(): Record<string, Baseline> {
  const runs: Record<string, Baseline> = {};
  for (const [policy, options] of Object.entries(KARPENTER_POLICIES)) {
    for (const after of CONSOLIDATE_AFTER_SWEEP_MS) {
      for (const [suffix, count] of Object.entries(PLACEHOLDER_COUNTS)) {
        runs[`karpenter-${policy}-${consolidateAfterLabel(after)}${suffix}`] = {
          peer: 'karpenter',
          make: (sc) =>
            karpenterScaler({ ...options, consolidateAfterMs: after, placeholders: count(sc) }),
        };
      }
    }
  }
  return runs;
}

/** The baseline runs berth is measured against, each a fresh scaler per simulated day. */
export const BASELINES: Readonly<Record<string, Baseline>> = {
  'paddle-soccer': { peer: 'paddle-soccer', make: (sc) => paddleSoccerScaler(sc) },
  'ca-evictable': {
    peer: 'cluster-autoscaler',
    make: () => clusterAutoscalerScaler({ gameServersSafeToEvict: true }),
    informational: 'game servers evictable (CA defaults): it interrupts games',
  },
  ...Object.fromEntries(
    Object.entries(PLACEHOLDER_COUNTS).map(([suffix, count]): [string, Baseline] => [
      `ca${suffix}`,
      {
        peer: 'cluster-autoscaler',
        make: (sc) =>
          clusterAutoscalerScaler({ gameServersSafeToEvict: false, placeholders: count(sc) }),
      },
    ]),
  ),
  ...karpenterRuns(),
};

/** Hours to replace the nodes of 00:00, or "-" when some outlived the day. */
const replacedHours = (ms: number | undefined): number | string =>
  ms === undefined ? '-' : round(ms / HOUR, 2);

/** The row of berth without triggered passes (AWS today). */
const SCHEDULED_ONLY = 'berth-60s-schedule-only';

/** The main scenario and the others, all carrying targets. */
export interface ScaleBenchResult {
  readonly main: ScenarioResult;
  readonly scenarios: readonly ScenarioResult[];
  readonly targets: readonly ScaleTarget[];
  readonly targetsMet: boolean;
}

async function compare(sc: Scenario): Promise<ScenarioResult> {
  const day = arrivals(sc);
  const berth = await simulateDay(sc, day, berthAsServed(sc));
  const scheduledOnly = await simulateDay(
    sc,
    day,
    berthScaler(sc, scalePolicy(parseConfig({ scale: sc.scale }).scale)),
  );
  const baselines: Record<string, DayOutcome> = {};
  // One day at a time: a scaler's measured time must not include another day's steps.
  for (const [name, b] of Object.entries(BASELINES)) {
    baselines[name] = await simulateDay(sc, day, b.make(sc));
  }
  const judged = Object.fromEntries(
    Object.entries(baselines).filter(([name]) => !BASELINES[name]?.informational),
  );
  const floors = nodeHourFloors(sc, day);
  // Each peer tuned in hindsight for this very day, as the weeks tune on their first.
  const tunedForDay: TunedSetting[] = [];
  for (const peer of tunablePeers()) tunedForDay.push(await tunePeer(peer, { sc, arrivals: day }));
  return {
    scenario: sc.name,
    description: sc.description,
    berth,
    berthScheduledOnly: scheduledOnly,
    baselines,
    best: bestRuns(judged),
    targets: [
      ...judgeScenario(berth, judged, NODE_HOURS_RATIO_TARGET, floors),
      judgeTunedDay(berth, tunedForDay),
    ],
    tunedForDay,
    floors,
  };
}

/** Each peer's best run among `runs`: fewest waiting pods, then fewest node-hours. */
function bestRuns(
  runs: Readonly<Record<string, DayOutcome>>,
  defined: Readonly<Record<string, Baseline>> = BASELINES,
): Record<string, string> {
  const best: Record<string, [string, DayOutcome]> = {};
  for (const [name, o] of Object.entries(runs)) {
    const peer = defined[name]?.peer ?? name;
    const current = best[peer];
    if (
      !current ||
      o.waitingPods < current[1].waitingPods ||
      (o.waitingPods === current[1].waitingPods && o.nodeHours < current[1].nodeHours)
    ) {
      best[peer] = [name, o];
    }
  }
  return Object.fromEntries(Object.entries(best).map(([peer, [name]]) => [peer, name]));
}

/** Runs every scenario under berth and the baselines, prints tables, writes scale.json. */
export async function runScaleBench(
  options: { readonly trace?: TraceInput } = {},
): Promise<ScaleBenchResult> {
  const started = performance.now();
  const scenarios: ScenarioResult[] = [];
  for (const sc of SCENARIOS) scenarios.push(await compare(sc));
  for (const sc of AGONES_SCENARIOS) {
    scenarios.push(await compareAgones(sc, PLACEHOLDER_COUNTS, bestRuns));
  }
  // Multi-session servers, judged against the single-session Agones day just measured.
  const single = scenarios.find((r) => r.scenario === AGONES_DAY.name);
  if (!single) throw new Error(`no ${AGONES_DAY.name} result to judge ${SESSIONS_DAY.name} by`);
  scenarios.push(await compareSessions(SESSIONS_DAY, single.berth));
  const [main] = scenarios;
  if (!main) throw new Error('no scenario');
  console.log(options.trace ? `the trace ${options.trace.path}:` : 'the weeks:');
  const weeks = await weeksRuns(options.trace);
  const targets: ScaleTarget[] = [
    ...scenarios.flatMap((r) =>
      r.targets.map((t) => ({ target: `${r.scenario}: ${t.name}`, pass: t.pass, line: t.line })),
    ),
    ...weeks.flatMap((run) => judgeWeeks(run)),
  ];
  const targetsMet = targets.every((t) => t.pass);
  console.log(
    `node scale: one simulated day per scenario, berth vs ${Object.keys(BASELINES).length} baseline runs (${Math.round(performance.now() - started)} ms)`,
  );
  const outcomes = (r: ScenarioResult): Record<string, DayOutcome> => ({
    berth: r.berth,
    ...(r.berthScheduledOnly ? { [SCHEDULED_ONLY]: r.berthScheduledOnly } : {}),
    ...r.baselines,
  });
  const note = (name: string): string =>
    BASELINES[name]?.informational || name === SCHEDULED_ONLY ? ' (information only)' : '';
  for (const r of scenarios) {
    console.log(`scenario "${r.scenario}": ${r.description}`);
    const clairvoyant = r.floors?.clairvoyant ?? r.clairvoyantNodeHours;
    console.table(
      Object.entries(outcomes(r)).map(([scaler, o]) => ({
        scaler: `${scaler}${note(scaler)}`,
        'node-hours': o.nodeHours,
        ...(clairvoyant ? { 'x clairvoyant': round(o.nodeHours / clairvoyant, 3) } : {}),
        'waiting pods': o.waitingPods,
        'wait p99 s': o.waitSecondsP99,
        interrupted: o.interruptedGames,
        lost: o.lostGames,
        peak: o.peakNodes,
        placeholders: o.placeholders,
        preemptions: o.preemptions,
        cordons: o.cordons,
        deletes: o.deletes,
        ...(o.replacement
          ? {
              'replaced all h': replacedHours(o.replacement.replacedAllMs),
              late: o.replacement.lateNodes,
            }
          : {}),
      })),
    );
    if (r.floors) {
      console.log(`the day's arrivals: ${floorsBeside(r.floors, r.berth.nodeHours)}`);
    }
    console.log(
      `best run per peer: ${Object.entries(r.best)
        .map(([peer, name]) => {
          const o = r.baselines[name];
          return `${peer} ${name} (${o?.nodeHours} node-hours, ${o?.waitingPods} waiting)`;
        })
        .join('; ')}`,
    );
  }
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
    weeks,
    weeksWorkload: WEEKS_WORKLOAD,
    scenarioSettings: [...SCENARIOS, ...AGONES_SCENARIOS, SESSIONS_DAY],
    baselines: Object.fromEntries(
      Object.entries(BASELINES).map(([name, b]) => [
        name,
        { peer: b.peer, ...(b.informational ? { informational: b.informational } : {}) },
      ]),
    ),
  });
  return { main, scenarios, targets, targetsMet };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await runScaleBench();
}

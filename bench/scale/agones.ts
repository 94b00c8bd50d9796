/**
 * The Agones-style days' runs (`./agones-day.ts`: the fleet, the node lifetime, the operator's
 * upgrade), each peer as Agones users run it:
 * - Cluster Autoscaler (`ca…`, `./cluster-autoscaler.ts`): every game server pod
 *   `safe-to-evict: "false"`, Ready ones included (Agones' default `eviction.safe: Never`), with
 *   0, buffer-sized and peak-sized placeholders as on the other days; on the node-upgrade day,
 *   which Cluster Autoscaler has no lifetime for, the operator's node group upgrade at 00:00
 *   (`withNodeGroupUpgrade`: cordon and drain every node, waiting on Agones' PodDisruptionBudget);
 * - Karpenter (`karpenter-underutilized-dnd-allocated-…`, `./karpenter.ts`):
 *   `WhenEmptyOrUnderutilized` with `karpenter.sh/do-not-disrupt` on Allocated game servers only,
 *   so Ready ones move with a consolidated node, `consolidateAfter` swept (30 s, 5 min, 15 min)
 *   with the same placeholders; on the node-upgrade day `expireAfter: 23h` and
 *   `terminationGracePeriod: 1h`, so a node is gone by its 24 h whatever its drain waits on and
 *   a session (at most 40 minutes) started before the drain ends within the grace period;
 * - berth (`./berth.ts` with `agones`): the main day's config (buffer 10 following demand, 60 s
 *   passes, admission-triggered scale-up), reading game state from the GameServers, moving Ready
 *   servers off the nodes it cordons (`scale.drain` defaults); on the node-upgrade day
 *   `scale.drain.nodeLifetimeSeconds: 86400`.
 *
 * Targets (`judgeAgonesDay`): no Allocated game server interrupted, no more waiting allocations
 * than the best run, node-hours at most 0.85 of the cheapest run that kept as few waiting; on
 * the node-upgrade day, every node gone before its deadline, with each run's time to replace
 * the nodes of 00:00 printed.
 */
import { parseConfig } from '../../shared/config/schema.js';
import { scalePolicy } from '../../shared/scale/policy.js';
import { TRIGGER_DEBOUNCE_MS } from '../../shared/scale/trigger.js';
import type { Arrival } from '../../sim/arrivals.js';
import { type AgonesScenario, agonesCluster, withNodeGroupUpgrade } from './agones-day.js';
import { berthScaler } from './berth.js';
import { clusterAutoscalerScaler } from './cluster-autoscaler.js';
import {
  arrivals,
  type DayOutcome,
  everyMs,
  HOUR,
  round,
  type Scenario,
  SECOND,
  simulateDay,
} from './day.js';
import { clairvoyantNodeHours } from './floor.js';
import { CONSOLIDATE_AFTER_SWEEP_MS, consolidateAfterLabel, karpenterScaler } from './karpenter.js';
import type { Baseline, ScenarioResult } from './result.js';
import { judgeScenario, type ScenarioVerdict } from './targets.js';

/** berth's node-hours may be at most this share of the cheapest comparable run's, on these days. */
export const AGONES_NODE_HOURS_RATIO = 0.85;

/** Karpenter's `terminationGracePeriod` on the node-upgrade day: above the longest session. */
export const KARPENTER_GRACE_MS = HOUR;

/** The baseline runs of one Agones-style day, with the placeholder counts every day tries. */
export function agonesBaselines(
  sc: AgonesScenario,
  placeholderCounts: Readonly<Record<string, (sc: Scenario) => number>>,
): Record<string, Baseline> {
  const lifetime = sc.nodeLifetimeMs;
  const runs: Record<string, Baseline> = {};
  for (const [suffix, count] of Object.entries(placeholderCounts)) {
    runs[`ca${suffix}`] = {
      peer: 'cluster-autoscaler',
      make: (s) => {
        const ca = clusterAutoscalerScaler({
          gameServersSafeToEvict: false,
          placeholders: count(s),
        });
        return lifetime === undefined ? ca : withNodeGroupUpgrade(ca, 0);
      },
    };
  }
  for (const after of CONSOLIDATE_AFTER_SWEEP_MS) {
    for (const [suffix, count] of Object.entries(placeholderCounts)) {
      runs[`karpenter-underutilized-dnd-allocated-${consolidateAfterLabel(after)}${suffix}`] = {
        peer: 'karpenter',
        make: (s) =>
          karpenterScaler({
            consolidationPolicy: 'WhenEmptyOrUnderutilized',
            consolidateAfterMs: after,
            gameServersDoNotDisrupt: true,
            readyMovable: true,
            placeholders: count(s),
            ...(lifetime === undefined
              ? {}
              : {
                  expireAfterMs: lifetime - KARPENTER_GRACE_MS,
                  terminationGracePeriodMs: KARPENTER_GRACE_MS,
                }),
          }),
      };
    }
  }
  return runs;
}

/** berth's policy on an Agones-style day: the day's scale config, with its node lifetime. */
export function agonesPolicy(sc: AgonesScenario, triggered: boolean) {
  const lifetime = sc.nodeLifetimeMs;
  const scale = {
    ...sc.scale,
    ...(lifetime === undefined ? {} : { drain: { nodeLifetimeSeconds: lifetime / SECOND } }),
  };
  return scalePolicy(
    parseConfig({ scale }).scale,
    triggered ? { reactionMs: TRIGGER_DEBOUNCE_MS } : {},
  );
}

/** One Agones-style day under berth and every baseline run. */
export async function compareAgones(
  sc: AgonesScenario,
  placeholderCounts: Readonly<Record<string, (sc: Scenario) => number>>,
  bestRuns: (
    runs: Readonly<Record<string, DayOutcome>>,
    defined: Readonly<Record<string, Baseline>>,
  ) => Record<string, string>,
): Promise<ScenarioResult & { readonly seed: number }> {
  const day = arrivals(sc);
  const floor = await clairvoyantFloorNodeHours(sc, day);
  const berthRun = berthScaler(sc, agonesPolicy(sc, true), { triggered: true, agones: true });
  const berth = await simulateDay(sc, day, berthRun, agonesCluster);
  const defined = agonesBaselines(sc, placeholderCounts);
  const baselines: Record<string, DayOutcome> = {};
  for (const [name, b] of Object.entries(defined))
    baselines[name] = await simulateDay(sc, day, b.make(sc), agonesCluster);
  return {
    scenario: sc.name,
    description: sc.description,
    seed: sc.seed,
    clairvoyantNodeHours: floor,
    berth,
    baselines,
    best: bestRuns(baselines, defined),
    targets: judgeAgonesDay(berth, baselines, sc.nodeLifetimeMs !== undefined, floor),
  };
}

/**
 * Information beside the node-hours target: the clairvoyant schedule (`floor.ts`) of the day's
 * game servers (Allocated, Ready and those being made): packed perfectly onto whole nodes at
 * every step, each node asked for exactly a boot time before it is needed. No scaler that keeps
 * every game server placed uses fewer.
 */
export async function clairvoyantFloorNodeHours(
  sc: AgonesScenario,
  day: readonly Arrival[],
): Promise<number> {
  const podsPerStep: number[] = [];
  const measure = everyMs(sc.stepMs, (cluster) => {
    // Room for every pod, so the fleet never waits on a node and the count is the demand's.
    cluster.growTo(sc.scale.maxNodes);
    if (cluster.now < 0) return;
    let pods = cluster.queue.length;
    for (const node of cluster.nodes) pods += node.games.size;
    podsPerStep.push(pods);
  });
  await simulateDay(sc, day, measure, agonesCluster);
  return clairvoyantNodeHours(sc, podsPerStep);
}

/** Hours, two decimals, of a replacement time; "not within the day" when it did not finish. */
function replacedIn(o: DayOutcome): string {
  const ms = o.replacement?.replacedAllMs;
  return ms === undefined ? 'not within the day' : `${round(ms / HOUR, 2)} h`;
}

/**
 * The targets of an Agones-style day: those of every day (`judgeScenario`) at a ratio of 0.85,
 * where the games are the Allocated servers and the waits the allocations; on the node-upgrade
 * day (`upgrade`), also every node replaced before its deadline by berth, with each run's time
 * to replace the nodes of 00:00 in the line.
 */
export function judgeAgonesDay(
  berth: DayOutcome,
  baselines: Readonly<Record<string, DayOutcome>>,
  upgrade: boolean,
  floorNodeHours: number,
): ScenarioVerdict[] {
  const verdicts = judgeScenario(berth, baselines, AGONES_NODE_HOURS_RATIO).map((v) =>
    v.name.startsWith('nodeHours')
      ? { ...v, line: `${v.line}; clairvoyant schedule ${floorNodeHours} node-hours (information)` }
      : v,
  );
  if (!upgrade) return verdicts;
  const r = berth.replacement;
  const late = r?.lateNodes ?? Number.POSITIVE_INFINITY;
  const peers = Object.entries(baselines)
    .map(
      ([name, o]) =>
        `${name} ${replacedIn(o)} (${o.replacement?.lateNodes ?? '?'} late, ${o.interruptedGames} interrupted)`,
    )
    .join('; ');
  return [
    ...verdicts,
    {
      name: 'everyNodeReplacedBeforeItsDeadline',
      pass: late === 0 && berth.interruptedGames === 0 && r?.replacedAllMs !== undefined,
      line: `berth replaced the ${r?.nodesAtStart ?? '?'} nodes of 00:00 in ${replacedIn(berth)}, ${late} node(s) past their 24 h deadline, ${berth.interruptedGames} Allocated interrupted; time to replace all: ${peers}`,
    },
  ];
}

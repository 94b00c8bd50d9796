/**
 * berth in the node scale benchmark: the simulated cluster as Kubernetes objects, through the very
 * `buildSnapshot`, memory (`withArrivals`, `rememberPass`) and `planScale` the pass runs, and the
 * pass's own act phase (`actOnPlan`) over the simulated cluster (sim/stepped-cluster-api.ts). The scheduled pass runs
 * every pass interval; with `triggered`, admissions also trigger scale-up passes between them as
 * the local server runs them (shared/scale/trigger.ts): each game server counts against the slack
 * the last pass left, and the step whose arrivals exhaust it runs a scale-up-only pass at its end,
 * at most one per `TRIGGER_DEBOUNCE_MS` (the step).
 *
 * With `agones` (the Agones-style days, `./agones-day.ts`), each game-server pod is owned by an
 * `agones.dev/v1` GameServer of the fleet's GameServerSet, `Ready` or `Allocated`, and the
 * scheduled pass is the whole `planPass` the pass runs: the node plan with the measured session
 * lengths (shared/scale/sessions.ts), and the Ready game servers it moves off the nodes it
 * cordoned (shared/scale/eviction.ts), each GameServer deleted as the pass deletes it.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { AgonesGameServer } from '../../shared/k8s/cluster-api.js';
import {
  AGONES_API_VERSION,
  AGONES_LAST_ALLOCATED,
  indexAgones,
} from '../../shared/scale/game-state.js';
import {
  EMPTY_SCALE_MEMORY,
  passOutcome,
  rememberPass,
  type ScaleMemory,
  withArrivals,
} from '../../shared/scale/memory.js';
import { GAME_SERVER_LABEL } from '../../shared/scale/names.js';
import { actOnPlan, planPass, withSessionsSeen } from '../../shared/scale/pass.js';
import { planScale } from '../../shared/scale/plan.js';
import type { ScalePolicy } from '../../shared/scale/policy.js';
import { formatRfc3339 } from '../../shared/scale/rfc3339.js';
import { buildSnapshot, type ClusterSnapshot } from '../../shared/scale/snapshot.js';
import {
  afterPass,
  NO_PASS_YET,
  onAdmitted,
  scaleUpOnly,
  TRIGGER_DEBOUNCE_MS,
  type TriggerState,
  triggeredOutcome,
  triggeredView,
} from '../../shared/scale/trigger.js';
import { gamePodName, gameServerName, steppedScaleDeps } from '../../sim/stepped-cluster-api.js';
import { everyMs, type Scaler, type Scenario, type SimCluster, type SimGame } from './day.js';

/** berth: the cluster as Kubernetes objects, through the same snapshot and plan code as the pass. */
export function berthScaler(
  sc: Scenario,
  policy: ScalePolicy,
  options: { readonly triggered?: boolean; readonly agones?: boolean } = {},
): Scaler {
  const agones = options.agones === true;
  let memory: ScaleMemory = EMPTY_SCALE_MEMORY;
  let trigger: TriggerState = NO_PASS_YET;
  let counted = 0;
  const scheduled = async (cluster: SimCluster) => {
    const snapshot = clusterSnapshot(sc, cluster, agones);
    memory = withArrivals(memory, snapshot.gameServerCreatedAtMs, cluster.now, policy);
    if (agones) memory = withSessionsSeen(memory, snapshot, cluster.now);
    const plan = agones
      ? planPass(snapshot, policy, cluster.now, memory).plan
      : planScale(snapshot, policy, cluster.now, memory);
    const { actions } = await actOnPlan(steppedScaleDeps(cluster), policy, plan);
    memory = rememberPass(memory, passOutcome(snapshot, plan, cluster.now, actions));
    trigger = afterPass(plan.tally, cluster.now);
  };
  const triggeredPass = async (cluster: SimCluster) => {
    const snapshot = clusterSnapshot(sc, cluster, agones);
    const view = triggeredView(
      memory,
      snapshot.gameServerCreatedAtMs,
      cluster.now,
      policy.passIntervalMs,
    );
    const plan = planScale(snapshot, policy, cluster.now, view);
    const up = { ...plan, actions: scaleUpOnly(plan.actions) };
    const { actions: done } = await actOnPlan(steppedScaleDeps(cluster), policy, up);
    const outcome = passOutcome(snapshot, plan, cluster.now, done);
    memory = rememberPass(memory, triggeredOutcome(outcome, memory, done));
    trigger = afterPass(plan.tally, cluster.now);
  };
  if (!options.triggered) return scheduled;
  return everyMs(TRIGGER_DEBOUNCE_MS, async (cluster) => {
    // Admissions since the last look: every game server that arrived (the webhook saw it).
    const arrived = cluster.arrivedCount - counted;
    counted = cluster.arrivedCount;
    if (cluster.now % sc.passIntervalMs === 0) return scheduled(cluster);
    const admitted = onAdmitted(trigger, arrived, cluster.now);
    trigger = admitted.state;
    if (admitted.wanted) await triggeredPass(cluster);
  });
}

/** The fleet's GameServerSet, owner of every simulated GameServer. */
const GAME_SERVER_SET = {
  apiVersion: AGONES_API_VERSION,
  kind: 'GameServerSet',
  name: 'fleet',
  uid: 'fleet-set',
  controller: true,
};

/**
 * The GameServer owning a simulated game server's pod: Allocated while it holds players, with
 * Agones' `agones.dev/last-allocated`.
 */
function gameServerObject(cluster: SimCluster, game: SimGame): AgonesGameServer {
  const allocatedAtMs = cluster.allocatedAtMs(game);
  return {
    apiVersion: AGONES_API_VERSION,
    kind: 'GameServer',
    metadata: {
      name: gameServerName(game),
      namespace: 'games',
      uid: gameServerName(game),
      ownerReferences: [GAME_SERVER_SET],
      ...(allocatedAtMs === undefined
        ? {}
        : { annotations: { [AGONES_LAST_ALLOCATED]: formatRfc3339(allocatedAtMs) } }),
    },
    status: { state: allocatedAtMs === undefined ? 'Ready' : 'Allocated' },
  };
}

/**
 * The simulated cluster as the pass lists it: registered Nodes, their pods, pending pods; with
 * `agones`, each game server's pod owned by its GameServer, listed too.
 */
function clusterSnapshot(sc: Scenario, cluster: SimCluster, agones = false): ClusterSnapshot {
  const nodes: V1Node[] = [];
  const pods: V1Pod[] = [];
  const gameServers: AgonesGameServer[] = [];
  const gamePod = (game: SimGame, nodeName: string | undefined): V1Pod => {
    const pod = podObject(sc, gamePodName(game), nodeName, game.arrivedAtMs, true);
    if (!agones) return pod;
    if (nodeName) gameServers.push(gameServerObject(cluster, game));
    const owner = {
      apiVersion: AGONES_API_VERSION,
      kind: 'GameServer',
      name: gameServerName(game),
      uid: gameServerName(game),
      controller: true,
    };
    return { ...pod, metadata: { ...pod.metadata, ownerReferences: [owner] } };
  };
  const cpu = (millis: number) => `${millis}m`;
  for (const node of cluster.nodes) {
    if (!cluster.registered(node)) continue;
    nodes.push({
      metadata: {
        name: node.name,
        labels: { role: 'game-server' },
        annotations: { ...node.annotations },
        creationTimestamp: new Date(node.launchedAtMs + sc.registerDelayMs),
      },
      spec: { unschedulable: node.unschedulable, providerID: `aws:///zone-a/i-${node.name}` },
      status: {
        allocatable: { cpu: cpu(sc.node.allocatableMillis) },
        conditions: [
          cluster.ready(node)
            ? {
                type: 'Ready',
                status: 'True',
                lastTransitionTime: new Date(node.launchedAtMs + sc.bootDelayMs),
              }
            : { type: 'Ready', status: 'False' },
        ],
      },
    });
    pods.push(podObject(sc, `${node.name}-daemon`, node.name, node.launchedAtMs, false));
    for (const game of node.games) pods.push(gamePod(game, node.name));
  }
  for (const game of cluster.queue) pods.push(gamePod(game, undefined));
  return buildSnapshot(nodes, pods, { desiredSize: cluster.desired }, indexAgones(gameServers));
}

function podObject(
  sc: Scenario,
  name: string,
  nodeName: string | undefined,
  createdAtMs: number,
  game: boolean,
): V1Pod {
  const shape = game ? sc.game : sc.daemon;
  return {
    metadata: {
      name,
      creationTimestamp: new Date(createdAtMs),
      namespace: game ? 'games' : 'kube-system',
      labels: game ? { [GAME_SERVER_LABEL]: 'true' } : { app: 'node-agent' },
    },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      containers: [
        {
          name: 'main',
          resources: {
            requests: { cpu: `${shape.requestMillis}m` },
            limits: { cpu: `${shape.limitMillis}m` },
          },
        },
      ],
    },
    status: { phase: nodeName ? 'Running' : 'Pending' },
  };
}

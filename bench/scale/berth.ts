/**
 * berth in the node scale benchmark: the simulated cluster listed as Kubernetes objects
 * (`buildSnapshot`), then the pass's own plan phase (`planOnSnapshot`: memory, `planPass`) and
 * act phase (`actOnPlan`, over sim/stepped-cluster-api.ts); the protection patches that follow
 * game state are not applied (the simulated pods carry no annotations). The scheduled pass runs
 * every pass interval; with `triggered`, admissions also trigger scale-up passes between them as
 * berth runs them (shared/scale/trigger.ts): each game server created counts against the slack
 * the last pass left and each one deleted gives its slot back, and the step whose net rise
 * exhausts it runs a scale-up-only pass at its end, at most one per `TRIGGER_DEBOUNCE_MS` (the
 * step).
 *
 * With `agones` (the Agones-style days, `./agones-day.ts`), each game-server pod is owned by an
 * `agones.dev/v1` GameServer of the fleet's GameServerSet, `Ready` or `Allocated`, so the plan
 * has the measured session lengths (shared/scale/sessions.ts) and moves the Ready game servers
 * off the nodes it cordoned (shared/scale/eviction.ts), each GameServer deleted as the pass does.
 */

import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parseConfig } from '../../shared/config/schema.js';
import type { AgonesGameServer } from '../../shared/k8s/cluster-api.js';
import { AGONES_API_VERSION, indexAgones } from '../../shared/scale/game-state.js';
import { actOnPlan, memoryAfterPass, planOnSnapshot } from '../../shared/scale/pass.js';
import { type ScalePolicy, scalePolicy } from '../../shared/scale/policy.js';
import { formatRfc3339 } from '../../shared/scale/rfc3339.js';
import { buildSnapshot, type ClusterSnapshot } from '../../shared/scale/snapshot.js';
import {
  EMPTY_SCALE_MEMORY,
  NO_PASS_YET,
  type ScaleMemory,
  type TriggerState,
} from '../../shared/scale/store.js';
import { afterPass, onAdmitted, TRIGGER_DEBOUNCE_MS } from '../../shared/scale/trigger.js';
import { AGONES_LAST_ALLOCATED, GAME_SERVER_LABEL } from '../../shared/vocabulary/labels.js';
import { gamePodName, gameServerName, steppedScaleDeps } from '../../sim/stepped-cluster-api.js';
import { everyMs, type Scaler, type Scenario, type SimCluster, type SimGame } from './day.js';

/**
 * berth on `sc`'s config as the local server runs it: scale-up passes triggered by admissions
 * between the scheduled ones, the buffer sized for a triggered pass's reaction.
 */
export function berthAsServed(sc: Scenario): Scaler {
  const policy = scalePolicy(parseConfig({ scale: sc.scale }).scale, {
    reactionMs: TRIGGER_DEBOUNCE_MS,
  });
  return berthScaler(sc, policy, { triggered: true });
}

/** berth: the cluster as Kubernetes objects, through the same snapshot and plan code as the pass. */
export function berthScaler(
  sc: Scenario,
  policy: ScalePolicy,
  options: {
    readonly triggered?: boolean;
    readonly agones?: boolean;
    /** `scale.gameState.counter`: the Counter multi-session GameServers carry. */
    readonly counter?: string;
  } = {},
): Scaler {
  const agones = options.agones === true;
  let memory: ScaleMemory = EMPTY_SCALE_MEMORY;
  let trigger: TriggerState = NO_PASS_YET;
  let counted = 0;
  /** One pass of berth: the pass's own plan and act phases, on the simulated cluster. */
  const pass = async (cluster: SimCluster, triggered: boolean) => {
    const snapshot = clusterSnapshot(sc, cluster, agones, options.counter);
    const planned = planOnSnapshot(snapshot, memory, policy, cluster.now, triggered);
    const { actions } = await actOnPlan(steppedScaleDeps(cluster), policy, planned.plan);
    memory = memoryAfterPass(
      planned.memory,
      snapshot,
      planned.plan,
      cluster.now,
      actions,
      triggered,
    );
    trigger = afterPass(planned.plan.tally, cluster.now);
  };
  const scheduled = (cluster: SimCluster) => pass(cluster, false);
  if (!options.triggered) return scheduled;
  return everyMs(TRIGGER_DEBOUNCE_MS, async (cluster) => {
    // What the webhook saw since the last look: game servers created less those deleted.
    const net = cluster.arrivedCount - cluster.endedCount;
    const change = net - counted;
    counted = net;
    if (cluster.now % sc.passIntervalMs === 0) return scheduled(cluster);
    const admitted = onAdmitted(trigger, change, cluster.now);
    trigger = admitted.state;
    if (admitted.wanted) await pass(cluster, true);
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
 * Agones' `agones.dev/last-allocated`; a multi-session one carries its Counter as `counter`.
 */
function gameServerObject(
  cluster: SimCluster,
  game: SimGame,
  counter: string | undefined,
): AgonesGameServer {
  const allocatedAtMs = cluster.allocatedAtMs(game);
  const sessions = counter === undefined ? undefined : cluster.sessionsOf(game);
  return {
    apiVersion: AGONES_API_VERSION,
    kind: 'GameServer',
    metadata: {
      name: gameServerName(game),
      namespace: 'games',
      uid: gameServerName(game),
      ownerReferences: [GAME_SERVER_SET],
      ...(sessions === undefined ? {} : { labels: { ...cluster.gameServerLabels(game) } }),
      ...(allocatedAtMs === undefined
        ? {}
        : { annotations: { [AGONES_LAST_ALLOCATED]: formatRfc3339(allocatedAtMs) } }),
    },
    status: {
      state: allocatedAtMs === undefined ? 'Ready' : 'Allocated',
      ...(counter === undefined || sessions === undefined
        ? {}
        : { counters: { [counter]: { count: sessions.count, capacity: sessions.capacity } } }),
    },
  };
}

/**
 * The simulated cluster as the pass lists it: registered Nodes, their pods, pending pods; with
 * `agones`, each game server's pod owned by its GameServer, listed too (with its `counter`).
 */
function clusterSnapshot(
  sc: Scenario,
  cluster: SimCluster,
  agones = false,
  counter?: string,
): ClusterSnapshot {
  const nodes: V1Node[] = [];
  const pods: V1Pod[] = [];
  const gameServers: AgonesGameServer[] = [];
  const gamePod = (game: SimGame, nodeName: string | undefined): V1Pod => {
    const pod = podObject(sc, gamePodName(game), nodeName, game.arrivedAtMs, true);
    if (!agones) return pod;
    if (nodeName) gameServers.push(gameServerObject(cluster, game, counter));
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
  return buildSnapshot(
    nodes,
    pods,
    { desiredSize: cluster.desired },
    indexAgones(gameServers),
    counter,
  );
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

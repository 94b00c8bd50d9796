/**
 * berth in the node scale benchmark: the simulated cluster as Kubernetes objects, through the very
 * `buildSnapshot`, memory (`withArrivals`, `rememberPass`) and `planScale` the pass runs, its
 * removals as the pass makes them (after a look at the node's games).
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import {
  EMPTY_SCALE_MEMORY,
  passOutcome,
  rememberPass,
  type ScaleMemory,
  withArrivals,
} from '../../shared/scale/memory.js';
import { CORDONED_AT, GAME_SERVER_LABEL } from '../../shared/scale/names.js';
import { planScale } from '../../shared/scale/plan.js';
import type { ScalePolicy } from '../../shared/scale/policy.js';
import { formatRfc3339 } from '../../shared/scale/rfc3339.js';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import type { Scaler, Scenario } from './day.js';

/** berth: the cluster as Kubernetes objects, through the same snapshot and plan code as the pass. */
export function berthScaler(sc: Scenario, policy: ScalePolicy): Scaler {
  let memory: ScaleMemory = EMPTY_SCALE_MEMORY;
  return (cluster) => {
    const nodes: V1Node[] = [];
    const pods: V1Pod[] = [];
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
      for (const game of node.games) {
        pods.push(podObject(sc, `game-${game.id}`, node.name, game.arrivedAtMs, true));
      }
    }
    for (const game of cluster.queue) {
      pods.push(podObject(sc, `game-${game.id}`, undefined, game.arrivedAtMs, true));
    }
    const snapshot = buildSnapshot(nodes, pods, { desiredSize: cluster.desired });
    memory = withArrivals(memory, snapshot.gameServerCreatedAtMs, cluster.now, policy);
    const plan = planScale(snapshot, policy, cluster.now, memory);
    const byName = new Map(cluster.nodes.map((n) => [n.name, n]));
    for (const action of plan.actions) {
      const node = action.node ? byName.get(action.node) : undefined;
      switch (action.type) {
        case 'cordon':
          if (!node) break;
          node.unschedulable = true;
          node.annotations = { ...node.annotations, [CORDONED_AT]: formatRfc3339(cluster.now) };
          cluster.cordons++;
          break;
        case 'uncordon':
          if (!node) break;
          node.unschedulable = false;
          node.annotations = {};
          cluster.uncordons++;
          break;
        case 'grow':
          cluster.growTo(action.to);
          break;
        case 'delete':
          // The pass looks at the node's games after marking it; a game there stops the removal.
          if (node && node.games.size === 0) cluster.remove(node);
          break;
      }
    }
    memory = rememberPass(memory, passOutcome(snapshot, plan, cluster.now, plan.actions));
  };
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

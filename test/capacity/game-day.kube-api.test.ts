/**
 * Two clusters on the Kubernetes API stand-in, one berth table, through a game day: game servers
 * of two fleets (and of none) arrive through berth's webhooks, are bound, become ready or take
 * players, and end. After each round of passes, every figure of the capacity view is checked
 * against the clusters' objects as the stand-in stores them, never against berth's own records.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { capacityReader } from '../../shared/app/capacity.js';
import type { ClusterCapacity } from '../../shared/capacity/view.js';
import { dynamoClient } from '../../shared/store/client.js';
import { DynamoCapacityLedger } from '../../shared/store/dynamo-capacity-ledger.js';
import {
  AGONES_FLEET_LABEL,
  GAME_SERVER_LABEL,
  GAME_STATE_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import { seededRandom } from '../../sim/random.js';
import { node } from '../scale/builders.js';
import { type ChainedCluster, startChainedCluster } from '../support/chained-cluster.js';

const PODS = '/api/v1/namespaces/games/pods';
const NODES = ['gs-1', 'gs-2', 'gs-3'];
/** Each node has 4 CPUs; each game server asks for one: four slots a node. */
const SLOTS_PER_NODE = 4;
const RANGE = { name: 'default', first: 7000, size: 40 };
/** The pool's one NLB at the default listener ports, 10000-59999. */
const LISTENER_PORTS = 50_000;

let clusters: ChainedCluster[];
let read: ReturnType<typeof capacityReader>;

const scaleConfig = {
  nodeSelector: 'role=game-server',
  gameServerCpuMillis: 1000,
  bufferGameServers: 2,
  // As many nodes as there are: the passes never cordon, so what they planned on stands.
  minNodes: NODES.length,
  maxNodes: NODES.length,
  demand: { enabled: false },
};

beforeAll(async () => {
  const tableName = `capacity-day-${Date.now()}`;
  const overrides = (cluster: string) => ({
    cluster,
    hostPortRanges: { [RANGE.name]: `${RANGE.first}-${RANGE.first + RANGE.size - 1}` },
    scale: scaleConfig,
    eni: { intervalSeconds: 0 },
  });
  // games-a fronts its game servers with an NLB; games-b has no fronts.
  const a = await startChainedCluster(overrides('games-a'), { nlb: true, tableName });
  const b = await startChainedCluster(overrides('games-b'), { tableName });
  clusters = [a, b];
  for (const [i, cluster] of clusters.entries()) {
    for (const [j, name] of NODES.entries()) {
      const made = node(name);
      cluster.api.addNode({
        ...made,
        status: {
          ...made.status,
          addresses: [{ type: 'InternalIP', address: `10.${i}.0.${10 + j}` }],
        },
      });
    }
  }
  read = capacityReader(
    clusters.map((c) => c.config),
    new DynamoCapacityLedger({
      client: dynamoClient({ endpoint: inject('dynamodbEndpoint') }),
      tableName,
    }),
  );
});

afterAll(async () => {
  await Promise.all((clusters ?? []).map((c) => c.close()));
});

/** A game server as a fleet's controller writes it: one CPU, one UDP port, maybe fronted. */
function gameServer(name: string, fleet: string | undefined, fronted: boolean) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { [GAME_SERVER_LABEL]: 'true', ...(fleet ? { [AGONES_FLEET_LABEL]: fleet } : {}) },
      annotations: {
        [PORTS_ANNOTATION]: JSON.stringify([
          { name: 'game', containerPort: 7777, ...(fronted ? { front: 'nlb' } : {}) },
        ]),
      },
    },
    spec: {
      containers: [
        { name: 'server', image: 'example/game:1', resources: { requests: { cpu: '1' } } },
      ],
    },
  };
}

async function expectStatus(
  cluster: ChainedCluster,
  method: string,
  path: string,
  status: number,
  body?: unknown,
) {
  const answer = await cluster.request(method, path, body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
}

const livePods = (cluster: ChainedCluster): V1Pod[] =>
  [...cluster.api.pods.values()].filter(
    (pod) =>
      pod.metadata?.labels?.[GAME_SERVER_LABEL] === 'true' &&
      pod.metadata.deletionTimestamp === undefined,
  );

const schedulable = (n: V1Node) =>
  n.spec?.unschedulable !== true &&
  n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/** The view's figures as the stand-in's objects say they must be. */
function fromObjects(cluster: ChainedCluster) {
  const nodes = [...cluster.api.nodes.values()].filter(schedulable);
  const pods = livePods(cluster);
  const bound = pods.filter((pod) => pod.spec?.nodeName);
  const readyByFleet: Record<string, number> = {};
  for (const pod of bound) {
    if (pod.metadata?.annotations?.[GAME_STATE_ANNOTATION] !== 'ready') continue;
    const fleet = pod.metadata?.labels?.[AGONES_FLEET_LABEL] ?? '';
    readyByFleet[fleet] = (readyByFleet[fleet] ?? 0) + 1;
  }
  const counts = new Array<number>(RANGE.size).fill(0);
  for (const pod of pods)
    for (const container of pod.spec?.containers ?? [])
      for (const port of container.ports ?? []) {
        const offset = (port.hostPort ?? 0) - RANGE.first;
        if (offset >= 0 && offset < RANGE.size) counts[offset] = (counts[offset] ?? 0) + 1;
      }
  const lowest = Math.min(...counts);
  let run = 0;
  let largestFreeBlock = 0;
  for (const count of counts) {
    run = count === lowest ? run + 1 : 0;
    largestFreeBlock = Math.max(largestFreeBlock, run);
  }
  const used = counts.reduce((sum, c) => sum + c, 0);
  const fronted = pods.filter((pod) =>
    (pod.metadata?.annotations?.[PORTS_ANNOTATION] ?? '').includes('"front":"nlb"'),
  ).length;
  return {
    readyByFleet,
    freeSlots: nodes.reduce(
      (sum, n) =>
        sum +
        SLOTS_PER_NODE -
        bound.filter((pod) => pod.spec?.nodeName === n.metadata?.name).length,
      0,
    ),
    pending: pods.length - bound.length,
    nodes: nodes.length,
    hostPort: { used, free: RANGE.size * nodes.length - used, largestFreeBlock },
    fronted,
  };
}

function checkAgainstObjects(cluster: ChainedCluster, view: ClusterCapacity, fronts: boolean) {
  const want = fromObjects(cluster);
  const context = `${view.cluster}: ${JSON.stringify(view)}`;
  expect(view.stale, context).toBe(false);
  expect(view.gameServers?.readyByFleet, context).toEqual(want.readyByFleet);
  expect(view.gameServers?.ready, context).toBe(
    Object.values(want.readyByFleet).reduce((s, n) => s + n, 0),
  );
  expect(view.gameServers?.freeSlots, context).toBe(want.freeSlots);
  expect(view.gameServers?.pending, context).toBe(want.pending);
  expect(view.buffer, context).toMatchObject({
    buffer: scaleConfig.bufferGameServers,
    nodesComing: false,
    slotsComing: 0,
    nodes: want.nodes,
  });
  expect(view.hostPorts?.ranges, context).toEqual([
    { range: RANGE.name, size: RANGE.size, ...want.hostPort },
  ]);
  if (fronts) {
    expect(view.fronts, context).toMatchObject({
      kind: 'listeners',
      total: LISTENER_PORTS,
      free: LISTENER_PORTS - want.fronted,
    });
  } else {
    expect(view.fronts, context).toBeUndefined();
  }
  expect(view.eni, context).toBeUndefined();
  for (const age of [view.gameServers?.ageSeconds, view.hostPorts?.ageSeconds])
    expect(age, context).toBeLessThanOrEqual(5);
}

describe('the capacity view over a game day on two clusters', () => {
  it('says what the clusters’ objects say after every round of passes', async () => {
    const random = seededRandom(7);
    const fleets = ['red', 'blue', undefined];
    let made = 0;
    for (let round = 0; round < 5; round++) {
      for (const [index, cluster] of clusters.entries()) {
        const fronts = index === 0;
        // Arrivals: a few game servers, most bound at once, some left pending.
        for (let i = 0; i < 3 + Math.floor(random() * 3); i++) {
          const name = `gs-${round}-${made++}`;
          const fleet = fleets[Math.floor(random() * fleets.length)];
          await expectStatus(cluster, 'POST', PODS, 201, gameServer(name, fleet, fronts));
          const room = NODES.filter(
            (n) =>
              livePods(cluster).filter((pod) => pod.spec?.nodeName === n).length < SLOTS_PER_NODE,
          );
          if (random() < 0.8 && room.length > 0) {
            await expectStatus(cluster, 'POST', `${PODS}/${name}/binding`, 201, {
              apiVersion: 'v1',
              kind: 'Binding',
              metadata: { name },
              target: { apiVersion: 'v1', kind: 'Node', name: room[0] },
            });
          }
        }
        // Game state changes: bound servers declare themselves ready or take players.
        for (const pod of livePods(cluster).filter((p) => p.spec?.nodeName)) {
          if (random() < 0.5) continue;
          const state = random() < 0.5 ? 'ready' : 'allocated';
          await expectStatus(cluster, 'PATCH', `${PODS}/${pod.metadata?.name}`, 200, [
            {
              op: 'add',
              path: `/metadata/annotations/${GAME_STATE_ANNOTATION.replace('/', '~1')}`,
              value: state,
            },
          ]);
        }
        // Session ends: some game servers go.
        for (const pod of livePods(cluster)) {
          if (random() < 0.25)
            await expectStatus(cluster, 'DELETE', `${PODS}/${pod.metadata?.name}`, 200);
        }
      }
      // An ended game server's listener is given back after the settle delay (never at once:
      // its DELETE may not commit). Once it is, every pass runs once per cluster.
      const [fronted] = clusters as [ChainedCluster];
      for (let wait = 0; wait < 20; wait++) {
        await fronted.settleFronts();
        if ((await fronted.listenerHolders()).length === fromObjects(fronted).fronted) break;
      }
      for (const [index, cluster] of clusters.entries()) {
        await cluster.repairPass();
        await cluster.scalePass();
        if (index === 0) await cluster.frontsPass();
      }
      const view = await read();
      expect(view.clusters.map((c) => c.cluster)).toEqual(['games-a', 'games-b']);
      for (const [index, cluster] of clusters.entries()) {
        checkAgainstObjects(cluster, view.clusters[index] as ClusterCapacity, index === 0);
      }
      expect((await read('games-b')).clusters.map((c) => c.cluster)).toEqual(['games-b']);
    }
  });
});

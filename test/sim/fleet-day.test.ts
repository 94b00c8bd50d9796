/**
 * The `agones-fleet` day of `berth sim`: its fleet over the Kubernetes API stand-in (Ready
 * buffer, Packed, replacement, berth's scale pass draining a node of it through the real
 * client-node adapter), and a whole day through the real server, berth's scale pass draining its
 * nodes (deleting their Ready GameServers, which the fleet makes again), and never interrupting
 * an Allocated one.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { runScalePass } from '../../shared/scale/pass.js';
import { GAME_SERVER_LABEL } from '../../shared/vocabulary/labels.js';
import { SimCluster, type Webhook } from '../../sim/cluster.js';
import { simConfig } from '../../sim/config.js';
import type { KubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { SimAgonesFleet } from '../../sim/fleet-day.js';
import { fleetReadyBuffer, runSim, SIM_DEFAULTS } from '../../sim/run.js';
import { startSimServer } from '../../sim/server.js';
import { berthCordoned, node, T0 } from '../scale/builders.js';
import { freshTable } from '../support/dynamo.js';

const MINUTE = 60_000;

const DAY = {
  ...SIM_DEFAULTS,
  scenario: 'agones-fleet' as const,
  hours: 0.5,
  speed: 1_000_000,
  nodes: 8,
  sessionsPerMinute: 6,
  services: 2,
  serviceChurnMinutes: 10,
  checkEvery: 50,
};

describe('berth sim --scenario agones-fleet', { timeout: 300_000 }, () => {
  it('serves every allocation and drains nodes of the fleet without interrupting an Allocated one', async () => {
    const { client, tableName } = await freshTable();
    const internalFaults: unknown[] = [];
    const sim = await startSimServer({
      config: simConfig(parseConfig({ cluster: 'sim' }), DAY),
      dynamo: client,
      tableName,
      listen: { host: '127.0.0.1', port: 0 },
      onError: (error) => internalFaults.push(error),
    });
    try {
      const report = await runSim(sim.target, DAY);
      expect(report.violations).toEqual([]);
      expect(report.fleet?.allocations).toBe(report.sessions);
      expect(report.fleet?.allocatedInterrupted).toBe(0);
      expect(report.gameServersInterrupted).toBe(0);
      // Eight nodes are more than the day needs: berth cordons and removes some. (Packed keeps the
      // Ready servers on the fullest nodes, so the cordoned ones rarely hold any to move; the
      // moves themselves are tested above.)
      expect(report.cordons).toBeGreaterThan(0);
      expect(report.nodesRemoved).toBeGreaterThan(0);
      // The buffer: every session's server plus the Ready ones were admitted.
      expect(report.gameServersAdmitted).toBeGreaterThanOrEqual(
        report.sessions + fleetReadyBuffer(DAY),
      );
      expect(internalFaults).toEqual([]);
    } finally {
      await sim.close();
    }
  });
});

/** Admits every pod as berth's webhook labels a game server, and everything else as it comes. */
const labelGameServers: Webhook = async (body) => {
  const { request } = body as { request: { kind: { kind: string }; operation: string } };
  if (request.kind.kind !== 'Pod' || request.operation !== 'CREATE') return { allowed: true };
  const path = `/metadata/labels/${GAME_SERVER_LABEL.replaceAll('/', '~1')}`;
  const patch = [{ op: 'add', path, value: 'true' }];
  return { allowed: true, patch: Buffer.from(JSON.stringify(patch)).toString('base64') };
};

describe('the agones-fleet day’s fleet over the Kubernetes API stand-in', () => {
  let fake: KubeApiServer;
  beforeEach(async () => {
    fake = await startKubeApiServer({ agones: true, now: () => T0 });
  });
  afterEach(async () => {
    await fake.stop();
  });

  /** A cluster of `nodes` nodes of `cpuMillis` each (stored as the builders make them) and its fleet. */
  const world = (nodes: number, readyBuffer: number, cpuMillis = 4000) => {
    const cluster = new SimCluster(labelGameServers, {
      nodeCpuMillis: cpuMillis,
      nodeLabels: { role: 'game-server' },
      api: fake,
      dayMs: () => 0,
    });
    const names = Array.from({ length: nodes }, () => addNode(cluster));
    const fleet = new SimAgonesFleet(cluster, fake, { readyBuffer, cpuMillis: 100 });
    return { cluster, fleet, names };
  };
  const addNode = (cluster: SimCluster) => {
    const name = cluster.addNode();
    fake.nodes.set(name, node(name, { labels: { role: 'game-server' } }));
    return name;
  };
  const inState = (state: string) =>
    [...fake.gameServers.values()].filter((gs) => gs.status?.state === state);
  const nodeOf = (name: string | undefined) => fake.pods.get(`games/${name}`)?.spec?.nodeName;

  it('keeps its buffer Ready, packed on the fullest node that fits', async () => {
    const { fleet, names } = world(2, 4, 500);
    await fleet.refill();
    expect(inState('Ready')).toHaveLength(4);
    // Packed: the first lands on the first node, the rest follow it while it fits.
    expect(inState('Ready').map((gs) => nodeOf(gs.metadata?.name))).toEqual(
      Array(4).fill(names[0]),
    );
  });

  it('flips a Ready GameServer to Allocated and makes another Ready', async () => {
    const { cluster, fleet } = world(1, 2);
    await fleet.refill();
    await fleet.allocate('s1');
    expect(inState('Ready')).toHaveLength(2);
    expect(inState('Allocated')).toHaveLength(1);
    expect(cluster.counts.podsCreated).toBe(3);
    expect(fleet.tally.allocations).toBe(1);
  });

  it('makes a deleted Ready GameServer again, and counts an Allocated one that goes as interrupted', async () => {
    const { fleet } = world(1, 1);
    await fleet.refill();
    const api = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig() });
    const [ready] = inState('Ready');
    await api.deleteGameServer('games', ready?.metadata?.name ?? '');
    await fleet.afterPass();
    expect(inState('Ready')).toHaveLength(1);
    expect(inState('Ready')[0]?.metadata?.name).not.toBe(ready?.metadata?.name);
    await fleet.allocate('s1');
    const [playing] = inState('Allocated');
    await api.evictPod('games', playing?.metadata?.name ?? '');
    expect(await fleet.afterPass()).toEqual(['s1']);
    expect(fleet.tally.allocatedInterrupted).toBe(1);
  });

  it('leaves a pod no node fits Pending, and places it once a node has room', async () => {
    const { cluster, fleet } = world(0, 1);
    await fleet.refill();
    expect(inState('Scheduled')).toHaveLength(1);
    addNode(cluster);
    await cluster.schedulePending();
    await fleet.refill();
    expect(inState('Ready')).toHaveLength(1);
  });

  it('lets berth move its Ready GameServers off a drained node, never an Allocated one, and the node go once the last session ends', async () => {
    const { cluster, fleet, names } = world(2, 3);
    const [a = '', b = ''] = names;
    await fleet.refill();
    // Everything packed on a; one match there.
    await fleet.allocate('s1');
    const [playing] = inState('Allocated');
    // berth cordoned a ten minutes ago (a surplus); the fleet's servers are still on it.
    fake.nodes.set(a, berthCordoned(a, T0 - 10 * MINUTE, { labels: { role: 'game-server' } }));
    await cluster.syncNodes();
    expect(inState('Ready').every((gs) => nodeOf(gs.metadata?.name) === a)).toBe(true);

    const api = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(), now: () => T0 });
    const memory = new InProcessScaleMemory();
    const pool = new FakeNodePool(2);
    const config = parseConfig({
      scale: { bufferGameServers: 5, cordonAfterSeconds: 0, demand: { enabled: false } },
    }).scale;
    const pass = (now: number) =>
      runScalePass(
        {
          cluster: api,
          pool,
          lease: new FakeLease(() => now),
          now: () => now,
          holder: 'h',
          memory,
        },
        config,
        { dryRun: false },
      );

    const first = await pass(T0);
    expect(first.failures).toEqual([]);
    expect(first.actions.filter((x) => x.type === 'evict')).toHaveLength(3);
    // The fleet made its Ready servers again on b; the match on a plays on.
    expect(await fleet.afterPass()).toEqual([]);
    expect(inState('Ready').map((gs) => nodeOf(gs.metadata?.name))).toEqual([b, b, b]);
    expect(nodeOf(playing?.metadata?.name)).toBe(a);
    expect(fake.nodes.has(a)).toBe(true);

    await fleet.end('s1');
    const second = await pass(T0 + MINUTE);
    expect(second.actions.map((x) => `${x.type} ${x.node}`)).toContain(`delete ${a}`);
    expect(fake.nodes.has(a)).toBe(false);
    expect(await fleet.afterPass()).toEqual([]);
    expect(fleet.tally.allocatedInterrupted).toBe(0);
  });
});

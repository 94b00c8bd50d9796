/**
 * The Agones-like fleet of the Kubernetes API stand-in, and berth's scale pass draining a node
 * of such a fleet through the real client-node adapter: ready GameServers are deleted and made
 * again elsewhere, allocated ones play out, and the node goes once the last one ends.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { runScalePass } from '../../shared/scale/pass.js';
import { AgonesFleet } from '../../sim/agones-fleet.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { berthCordoned, node, T0 } from '../scale/builders.js';

const MINUTE = 60_000;
let fake: KubeApiServer;

beforeEach(async () => {
  fake = await startKubeApiServer({ agones: true, now: () => T0 });
});

afterEach(async () => {
  await fake.stop();
});

const nodeOf = (name: string | undefined) => fake.pods.get(`games/${name}`)?.spec?.nodeName;

describe('AgonesFleet', () => {
  it('keeps its buffer Ready, packed on the fullest node that fits', () => {
    fake.addNode(node('a', { cpu: '0.5' }));
    fake.addNode(node('b'));
    const fleet = new AgonesFleet(fake, { name: 'f', readyBuffer: 4 });
    fleet.reconcile();
    expect(fleet.inState('Ready')).toHaveLength(4);
    // Packed: the first lands on a (by name), the rest follow it while it fits.
    expect(
      fleet
        .inState('Ready')
        .map((gs) => nodeOf(gs.metadata?.name))
        .sort(),
    ).toEqual(['a', 'a', 'a', 'a']);
  });

  it('flips a Ready GameServer to Allocated and makes another Ready', () => {
    fake.addNode(node('a'));
    const fleet = new AgonesFleet(fake, { name: 'f', readyBuffer: 2 });
    fleet.reconcile();
    const allocated = fleet.allocate();
    expect(allocated?.status?.state).toBe('Allocated');
    expect(fleet.inState('Ready')).toHaveLength(2);
    expect(fleet.inState('Allocated')).toHaveLength(1);
    expect(fleet.counts).toMatchObject({ created: 3, allocations: 1 });
  });

  it('makes a deleted Ready GameServer again, and counts an Allocated one that goes as interrupted', async () => {
    fake.addNode(node('a'));
    const fleet = new AgonesFleet(fake, { name: 'f', readyBuffer: 1 });
    fleet.reconcile();
    const cluster = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig() });
    const [ready] = fleet.inState('Ready');
    await cluster.deleteGameServer('games', ready?.metadata?.name ?? '');
    expect(fleet.inState('Ready')).toHaveLength(1);
    expect(fleet.inState('Ready')[0]?.metadata?.name).not.toBe(ready?.metadata?.name);
    const playing = fleet.allocate();
    await cluster.evictPod('games', playing?.metadata?.name ?? '');
    expect(fleet.counts.allocatedInterrupted).toBe(1);
  });

  it('leaves a pod no node fits Pending, and places it once a node has room', () => {
    const fleet = new AgonesFleet(fake, { name: 'f', readyBuffer: 1 });
    fleet.reconcile();
    expect(fleet.inState('Scheduled')).toHaveLength(1);
    fake.addNode(node('a'));
    fleet.reconcile();
    expect(fleet.inState('Ready')).toHaveLength(1);
  });
});

describe('berth draining a node of an Agones fleet', () => {
  it('moves its Ready GameServers, never an Allocated one, and removes it once the last session ends', async () => {
    fake.addNode(node('a'));
    fake.addNode(node('b'));
    const fleet = new AgonesFleet(fake, { name: 'f', readyBuffer: 3 });
    fleet.reconcile();
    // Everything packed on a; two matches there, then b is made the fuller one.
    const playing = fleet.allocate();
    // berth cordoned a ten minutes ago (a surplus); the fleet's servers are still on it.
    const a = fake.nodes.get('a');
    const cordoned = berthCordoned('a', T0 - 10 * MINUTE);
    fake.nodes.set('a', {
      ...a,
      spec: cordoned.spec,
      metadata: { ...a?.metadata, annotations: cordoned.metadata?.annotations },
    });
    expect(fleet.inState('Ready').every((gs) => nodeOf(gs.metadata?.name) === 'a')).toBe(true);

    const cluster = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(), now: () => T0 });
    const memory = new InProcessScaleMemory();
    const pool = new FakeNodePool(2);
    const config = parseConfig({
      scale: { bufferGameServers: 5, cordonAfterSeconds: 0, demand: { enabled: false } },
    }).scale;
    const pass = (now: number) =>
      runScalePass(
        { cluster, pool, lease: new FakeLease(() => now), now: () => now, holder: 'h', memory },
        config,
        { dryRun: false },
      );

    const first = await pass(T0);
    expect(first.failures).toEqual([]);
    expect(first.actions.filter((x) => x.type === 'evict')).toHaveLength(3);
    // The fleet made its Ready servers again on b; the match on a plays on.
    expect(fleet.inState('Ready').map((gs) => nodeOf(gs.metadata?.name))).toEqual(['b', 'b', 'b']);
    expect(nodeOf(playing?.metadata?.name)).toBe('a');
    expect(fake.nodes.has('a')).toBe(true);

    fleet.end(playing?.metadata?.name ?? '');
    const second = await pass(T0 + MINUTE);
    expect(second.actions.map((x) => `${x.type} ${x.node}`)).toContain('delete a');
    expect(fake.nodes.has('a')).toBe(false);
    expect(fleet.counts.allocatedInterrupted).toBe(0);
  });
});

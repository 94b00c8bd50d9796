import type { V1Pod } from '@kubernetes/client-node';
/**
 * The scale pass over the real `@kubernetes/client-node` adapter, talking HTTP to the loopback
 * fake of the Kubernetes API: listing, compare-and-swap patches, node deletion and Events end to
 * end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { runScalePass } from '../../shared/scale/pass.js';
import { CORDONED_AT, REMOVAL_STARTED_AT } from '../../shared/vocabulary/labels.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { berthCordoned, gameServers, node, pod, T0 } from './builders.js';

const TOKEN = 'berth-test-token';
let fake: KubeApiServer;
let cluster: ClientNodeClusterApi;

beforeAll(async () => {
  fake = await startKubeApiServer({ token: TOKEN, now: () => T0 });
  cluster = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(TOKEN), now: () => T0 });
});

afterAll(async () => {
  await fake.stop();
});

describe('runScalePass over the Kubernetes API', () => {
  it('cordons, removes a drained node and records Events through client-node', async () => {
    for (const n of [
      node('busy'),
      node('idle'),
      node('spare'),
      berthCordoned('drained', T0 - 10 * 60_000),
      node('other-pool', { labels: { role: 'web' } }),
    ]) {
      fake.addNode(n);
    }
    for (const p of [
      ...gameServers('busy', 30),
      pod('finished', { node: 'drained', phase: 'Succeeded' }),
      daemonSetPod('daemon', 'drained'),
    ]) {
      fake.addPod(p);
    }
    const pool = new FakeNodePool(4);
    const memory = new InProcessScaleMemory();
    const pass = (now: number) =>
      runScalePass(
        { cluster, pool, lease: new FakeLease(() => now), now: () => now, holder: 'e2e', memory },
        parseConfig({
          scale: { bufferGameServers: 10, shutdownDelaySeconds: 60, cordonAfterSeconds: 0 },
        }).scale,
        { dryRun: false },
      );
    const report = await pass(T0);
    expect(report.failures).toEqual([]);
    // busy keeps 10 free slots, the buffer: both empty nodes go.
    expect(report.actions.map((a) => `${a.type} ${a.node}`)).toEqual([
      'cordon idle',
      'cordon spare',
      'delete drained',
    ]);
    expect(fake.nodes.has('drained')).toBe(false);
    expect(pool.released).toEqual(new Set(['drained']));
    const later = await pass(T0 + 60_000);
    expect(later.failures).toEqual([]);
    // Cordoned a shutdown delay ago and drained: one removal a pass (10% of 4, rounded up).
    expect(later.actions.map((a) => `${a.type} ${a.node}`)).toEqual(['delete idle']);
    expect(fake.nodes.has('idle')).toBe(false);
    expect(fake.nodes.get('spare')?.spec?.unschedulable).toBe(true);
    expect(fake.nodes.get('spare')?.metadata?.annotations?.[CORDONED_AT]).toBe(
      '2026-01-01T00:00:00.000Z',
    );
    expect(fake.nodes.get('other-pool')?.spec?.unschedulable).toBeUndefined();
    expect(pool.released).toEqual(new Set(['drained', 'idle']));
    // The removal mark went in before the instance was released.
    const patches = fake.requests.filter(
      (r) => r.method === 'PATCH' && r.path.endsWith('/drained'),
    );
    expect(JSON.stringify(patches[0]?.body)).toContain(REMOVAL_STARTED_AT.replace('/', '~1'));
    expect(fake.events.map((e) => [e.involvedObject.name, e.reason, e.source?.component])).toEqual(
      expect.arrayContaining([
        ['idle', 'BerthCordoned', 'berth-scale'],
        ['drained', 'BerthNodeRemoved', 'berth-scale'],
      ]),
    );
  });
});

/** A DaemonSet's pod on `node`: it goes with the node. */
function daemonSetPod(name: string, node: string): V1Pod {
  const base = pod(name, { node, game: false });
  return {
    ...base,
    metadata: {
      ...base.metadata,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'ds-1' }],
    },
  };
}

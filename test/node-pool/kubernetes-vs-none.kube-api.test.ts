/**
 * Node pool `none` (the default) against `kubernetes`, through the scale pass over the Kubernetes
 * API stand-in: `none` cordons and uncordons only and reports the removals it would make;
 * `kubernetes` also deletes drained Node objects.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { createNodePool } from '../../shared/node-pool/create.js';
import { KubernetesNodePool } from '../../shared/node-pool/kubernetes.js';
import { runScalePass } from '../../shared/scale/pass.js';
import { CORDONED_AT, REMOVAL_STARTED_AT } from '../../shared/vocabulary/labels.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { berthCordoned, gameServers, node, T0 } from '../scale/builders.js';

const TOKEN = 'berth-test-token';
const MINUTE = 60_000;
let fake: KubeApiServer;
let cluster: ClientNodeClusterApi;

beforeEach(async () => {
  fake = await startKubeApiServer({ token: TOKEN, now: () => T0 });
  cluster = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(TOKEN), now: () => T0 });
  for (const n of [node('busy'), node('idle'), berthCordoned('drained', T0 - 10 * MINUTE)]) {
    fake.addNode(n);
  }
  for (const p of gameServers('busy', 30)) fake.addPod(p);
});

afterEach(async () => {
  await fake.stop();
});

/** Two passes a shutdown delay apart under `scale` (the pool as the config builds it). */
async function twoPasses(scale: Record<string, unknown>) {
  const config = parseConfig({
    scale: { bufferGameServers: 10, shutdownDelaySeconds: 60, cordonAfterSeconds: 0, ...scale },
  }).scale;
  const pool = createNodePool(config.nodePool, { eksClusterName: 'games' });
  const memory = new InProcessScaleMemory();
  const pass = (now: number) =>
    runScalePass(
      { cluster, pool, lease: new FakeLease(() => now), now: () => now, holder: 't', memory },
      config,
      { dryRun: false },
    );
  return [await pass(T0), await pass(T0 + 2 * MINUTE)];
}

describe('node pool none (the default)', () => {
  it('cordons only, never deletes a Node, and reports the removals and instance changes it would make', async () => {
    const [first, second] = await twoPasses({});
    expect(first?.failures).toEqual([]);
    expect(first?.actions.map((a) => `${a.type} ${a.node}`)).toEqual([
      'cordon idle',
      'delete drained',
    ]);
    expect(first?.actions[1]?.reason).toMatch(
      /^not deleted: node pool none deletes no Node and no instance \(node pool none: would terminate instance i-daed0000 and decrement the desired size, and would delete Node drained\)/,
    );
    // The next pass finds the node as it was, and reports the same removal again.
    expect(second?.actions.map((a) => `${a.type} ${a.node}`)).toEqual(['delete drained']);
    for (const name of ['drained', 'idle']) {
      const left = fake.nodes.get(name);
      expect(left, name).toBeDefined();
      expect(left?.spec?.unschedulable).toBe(true);
      expect(left?.metadata?.annotations?.[CORDONED_AT]).toBeDefined();
      expect(left?.metadata?.annotations?.[REMOVAL_STARTED_AT]).toBeUndefined();
    }
    expect(fake.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
    // A removal only reported is no Event: nothing was removed.
    expect(fake.events.map((e) => e.reason)).not.toContain('BerthNodeRemoved');
  });
});

describe('node pool kubernetes', () => {
  it('is a pool type of the config, made without AWS', () => {
    const config = parseConfig({ scale: { nodePool: { type: 'kubernetes' } } });
    expect(config.scale.nodePool).toEqual({ type: 'kubernetes' });
    expect(createNodePool(config.scale.nodePool, { eksClusterName: 'x' })).toBeInstanceOf(
      KubernetesNodePool,
    );
  });

  it('deletes the drained Node objects berth cordoned, leaving the machines to something else', async () => {
    const [first, second] = await twoPasses({ nodePool: { type: 'kubernetes' } });
    expect(first?.failures).toEqual([]);
    expect(first?.actions[1]?.reason).toMatch(
      /node pool kubernetes: the machine of drained is left to whatever reclaims it; Node deleted/,
    );
    expect(fake.nodes.has('drained')).toBe(false);
    expect(second?.failures).toEqual([]);
    expect([...fake.nodes.keys()].sort()).toEqual(['busy', 'idle']);
  });
});

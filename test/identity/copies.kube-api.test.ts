/**
 * A value is never held by two live objects, whatever a user copies or changes by hand
 * (contract sections 4, 5 and 11): a pod made from another game server's manifest outside
 * berth's CREATE, then given `berth.dev/ports` by an UPDATE (pods have no UPDATE webhook), is
 * not put behind the other's NLB listener at its binding; a copy of an unbound generateName pod
 * frees nothing of the original when it is deleted; and a running game server whose
 * `berth.dev/game-server` label is removed keeps its listener through the fronts pass.
 * Everything goes through the Kubernetes API stand-in, with an injector after berth.
 */
import type { V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALLOCATION_ID_ANNOTATION,
  FRONTS_ANNOTATION,
  GAME_SERVER_LABEL,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import { type ChainedCluster, startChainedCluster } from '../support/chained-cluster.js';
import { gamePod, rangeUse, records } from './objects.js';

let cluster: ChainedCluster;
const PODS = '/api/v1/namespaces/games/pods';

const node = (name: string, ip: string): V1Node => ({
  metadata: { name },
  status: { addresses: [{ type: 'InternalIP', address: ip }] },
});

beforeAll(async () => {
  cluster = await startChainedCluster({}, { nlb: true });
  cluster.api.addNode(node('node-a', '10.0.1.10'));
  cluster.api.addNode(node('node-b', '10.0.1.20'));
});

afterAll(async () => {
  await cluster?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: pods as the API answered them.
type Stored = any;

const fronted = (metadata: Record<string, unknown>) => gamePod(metadata, { front: 'nlb' });

async function create(pod: unknown): Promise<Stored> {
  const created = await cluster.request('POST', PODS, pod);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

async function bind(name: string, nodeName: string): Promise<void> {
  const bound = await cluster.request('POST', `${PODS}/${name}/binding`, {
    apiVersion: 'v1',
    kind: 'Binding',
    metadata: { name },
    target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
  });
  expect(bound.status, JSON.stringify(bound.body)).toBe(201);
}

async function read(name: string): Promise<Stored> {
  return (await cluster.request('GET', `${PODS}/${name}`)).body;
}

/** A pod made from `original`'s manifest with nothing of berth's CREATE in its way. */
function copyOf(original: Stored, metadata: Record<string, unknown>): Stored {
  const { [PORTS_ANNOTATION]: _ports, ...annotations } = original.metadata.annotations;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...metadata, labels: original.metadata.labels, annotations },
    spec: { containers: original.spec.containers },
  };
}

/** Every address the NLB's target groups send players to. */
function targets(): string[] {
  return cluster.elbv2
    .targetGroups()
    .flatMap((group) => cluster.elbv2.targets(group.arn).map((t) => `${t.ip}:${t.port}`));
}

describe('a copy made outside berth', () => {
  it('is not put behind the original game server’s NLB listener at its binding', async () => {
    const original = await create(fronted({ name: 'arena-1' }));
    await bind('arena-1', 'node-a');
    await cluster.settleFronts();
    const hostPort = JSON.parse(original.metadata.annotations[HOST_PORTS_ANNOTATION]).game;
    expect(targets()).toEqual([`10.0.1.10:${hostPort}`]);

    await create(copyOf(original, { name: 'arena-copy' }));
    const given = await cluster.request('PATCH', `${PODS}/arena-copy`, [
      {
        op: 'add',
        path: `/metadata/annotations/${PORTS_ANNOTATION.replace('/', '~1')}`,
        value: original.metadata.annotations[PORTS_ANNOTATION],
      },
    ]);
    expect(given.status).toBe(200);
    await bind('arena-copy', 'node-b');
    await cluster.settleFronts();

    expect(targets()).toEqual([`10.0.1.10:${hostPort}`]);
    const copy = await read('arena-copy');
    // Told nothing of the original's listener: the address it carried is taken away.
    expect(JSON.parse(copy.metadata.annotations[FRONTS_ANNOTATION] ?? '{}')).toEqual({});
    expect((await read('arena-1')).metadata.annotations[FRONTS_ANNOTATION]).toBe(
      original.metadata.annotations[FRONTS_ANNOTATION],
    );
  });

  it('frees nothing of an unbound generateName pod when it is deleted', async () => {
    const original = await create(fronted({ generateName: 'lobby-' }));
    const id = original.metadata.annotations[ALLOCATION_ID_ANNOTATION];
    const copy = await create(copyOf(original, { generateName: 'lobby-' }));
    expect(copy.metadata.annotations[ALLOCATION_ID_ANNOTATION]).toBe(id);
    const used = await rangeUse(cluster.runtime, 'default');

    const deleted = await cluster.request('DELETE', `${PODS}/${copy.metadata.name}`);
    expect(deleted.status).toBe(200);
    expect(await records(cluster.runtime)).toContain(id);
    expect(await rangeUse(cluster.runtime, 'default')).toBe(used);

    // The original, bound now, still gets its listener, and its DELETE frees it all.
    await bind(original.metadata.name, 'node-a');
    await cluster.settleFronts();
    expect((await read(original.metadata.name)).metadata.annotations[FRONTS_ANNOTATION]).toMatch(
      /elb/,
    );
    await cluster.request('DELETE', `${PODS}/${original.metadata.name}`);
    expect(await records(cluster.runtime)).not.toContain(id);
    expect(await rangeUse(cluster.runtime, 'default')).toBe(used - 1);
  });
});

describe('a cluster that cannot be listed', () => {
  it('frees nothing at a generateName pod’s DELETE, and leaves its told address at binding', async () => {
    const pod = await create(fronted({ generateName: 'unlisted-' }));
    const id = pod.metadata.annotations[ALLOCATION_ID_ANNOTATION];
    const told = pod.metadata.annotations[FRONTS_ANNOTATION];
    cluster.api.failNext({ path: /^\/api\/v1\/pods$/, status: 500 });
    await bind(pod.metadata.name, 'node-a');
    expect((await read(pod.metadata.name)).metadata.annotations[FRONTS_ANNOTATION]).toBe(told);
    cluster.api.failNext({ path: /^\/api\/v1\/pods$/, status: 500 });
    const deleted = await cluster.request('DELETE', `${PODS}/${pod.metadata.name}`);
    expect(deleted.status).toBe(200);
    // Left to the repair pass, which frees it once no live pod carries the id.
    expect(await records(cluster.runtime)).toContain(id);
  });
});

describe('a running game server whose label is removed', () => {
  it('keeps its listener through the fronts pass', async () => {
    const pod = await create(fronted({ name: 'unlabelled-1' }));
    await bind('unlabelled-1', 'node-a');
    await cluster.settleFronts();
    const hostPort = JSON.parse(pod.metadata.annotations[HOST_PORTS_ANNOTATION]).game;
    const removed = await cluster.request('PATCH', `${PODS}/unlabelled-1`, [
      { op: 'remove', path: `/metadata/labels/${GAME_SERVER_LABEL.replace('/', '~1')}` },
    ]);
    expect(removed.status).toBe(200);
    // Past the pass's grace for a CREATE the apiserver may still store.
    cluster.advance(10 * 60_000);
    await cluster.frontsPass();
    await cluster.settleFronts();
    expect(targets()).toContain(`10.0.1.10:${hostPort}`);
  });
});

/**
 * What berth refuses, it holds nothing for; what a pod holds, berth never hands it again:
 * a CREATE berth denies itself (a namespace over its host port quota) keeps none of the NLB
 * listener slots it claimed first, and a pod's own host ports (a hand-written `hostPort`, a
 * `hostNetwork` pod's container ports) are never allocated to it a second time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOCATION_ID_ANNOTATION, HOST_PORTS_ANNOTATION } from '../../shared/vocabulary/labels.js';
import { type ChainedCluster, startChainedCluster } from '../support/chained-cluster.js';
import { gamePod } from './objects.js';

let cluster: ChainedCluster;

beforeAll(async () => {
  cluster = await startChainedCluster(
    { hostPortRanges: { default: '7000-7001' }, hostPortQuotas: { games: 1 } },
    { nlb: true },
  );
});

afterAll(async () => {
  await cluster?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: pods as the API answered them.
type Stored = any;

const hostPortsOf = (pod: Stored): number[] =>
  pod.spec.containers.flatMap((c: Stored) => (c.ports ?? []).map((p: Stored) => p.hostPort));

describe('a CREATE berth refuses itself', () => {
  it('frees the NLB listener slots it claimed before the quota said no', async () => {
    const pods = '/api/v1/namespaces/games/pods';
    const first = await cluster.request('POST', pods, gamePod({ name: 'a' }, { front: 'nlb' }));
    expect(first.status).toBe(201);
    const second = await cluster.request('POST', pods, gamePod({ name: 'b' }, { front: 'nlb' }));
    expect(second.status).toBe(403);
    expect(await cluster.listenerHolders()).toEqual([
      first.body.metadata.annotations[ALLOCATION_ID_ANNOTATION],
    ]);
  });
});

describe('a pod’s own host ports', () => {
  const pods = '/api/v1/namespaces/tools/pods';

  it('are never allocated to it again (a hand-written hostPort in the range)', async () => {
    for (let i = 0; i < 8; i++) {
      const pod = gamePod({ name: `hand-${i}` });
      (pod.spec as Stored).containers[0].ports = [
        { name: 'query', containerPort: 27015, hostPort: 7000, protocol: 'UDP' },
      ];
      const created = await cluster.request('POST', pods, pod);
      expect(created.status).toBe(201);
      expect(hostPortsOf(created.body).sort()).toEqual([7000, 7001]);
      expect(JSON.parse(created.body.metadata.annotations[HOST_PORTS_ANNOTATION])).toEqual({
        game: 7001,
      });
    }
  });

  it('keep a hostNetwork pod’s own port entry', async () => {
    for (let i = 0; i < 8; i++) {
      const pod = gamePod({ name: `host-${i}` });
      (pod.spec as Stored).hostNetwork = true;
      (pod.spec as Stored).containers[0].ports = [
        { name: 'metrics', containerPort: 7000, protocol: 'UDP' },
      ];
      const created = await cluster.request('POST', pods, pod);
      expect(created.status).toBe(201);
      const ports = created.body.spec.containers[0].ports;
      expect(ports).toContainEqual(
        expect.objectContaining({ name: 'metrics', containerPort: 7000 }),
      );
      expect(ports).toContainEqual(
        expect.objectContaining({ name: 'game', containerPort: 7001, hostPort: 7001 }),
      );
    }
  });
});

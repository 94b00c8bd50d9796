import { describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import { clusterViewOf, clusterViewReader } from '../../shared/ui/cluster-view.js';
import { REMOVAL_STARTED_AT } from '../../shared/vocabulary/labels.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { berthCordoned, gameServers, node, pod, T0 } from '../scale/builders.js';

describe("the web view of a real cluster's nodes", () => {
  it('draws the game-server nodes with their CPU and game servers by state, cordoned, draining and joining ones marked', () => {
    const nodes = [
      node('busy'),
      node('booting', { ready: false }),
      berthCordoned('leaving', T0 - 60_000, {
        annotations: { [REMOVAL_STARTED_AT]: new Date(T0).toISOString() },
      }),
      node('web', { labels: { role: 'web' } }),
    ];
    const view = clusterViewOf(
      buildSnapshot(nodes.slice(0, 3), [...gameServers('busy', 3), pod('waiting')], {}),
    );
    expect(view).toEqual({
      nodes: [
        {
          name: 'busy',
          cpuMillis: 4000,
          usedCpuMillis: 300,
          gameServers: 3,
          // Game servers that say nothing of their state are allocated: the safe default.
          gameStates: { ready: 0, reserved: 0, allocated: 3 },
          cordoned: false,
          draining: false,
          joining: false,
          badges: [],
        },
        {
          name: 'booting',
          cpuMillis: 4000,
          usedCpuMillis: 0,
          gameServers: 0,
          gameStates: { ready: 0, reserved: 0, allocated: 0 },
          cordoned: false,
          draining: false,
          joining: true,
          badges: [{ kind: 'joining', text: 'joining: not Ready yet' }],
        },
        {
          name: 'leaving',
          cpuMillis: 4000,
          usedCpuMillis: 0,
          gameServers: 0,
          gameStates: { ready: 0, reserved: 0, allocated: 0 },
          cordoned: true,
          draining: true,
          joining: false,
          badges: [
            { kind: 'cordoned', text: 'cordoned' },
            { kind: 'draining', text: 'draining' },
          ],
        },
      ],
      gameStates: { ready: 0, reserved: 0, allocated: 3 },
      pendingGameServers: 1,
    });
  });

  it('reads the cluster at most once per five seconds however often the page polls', async () => {
    const cluster = new FakeClusterApi()
      .withNodes(node('a'), node('web', { labels: { role: 'web' } }))
      .withPods(...gameServers('a', 2));
    let now = T0;
    const read = clusterViewReader(cluster, { nodeSelector: 'role=game-server' }, () => now);
    expect((await read()).nodes.map((n) => n.name)).toEqual(['a']);
    await read();
    expect(cluster.calls.filter((c) => c.method === 'listNodes')).toHaveLength(1);
    now += 5_000;
    expect((await read()).nodes[0]?.gameServers).toBe(2);
    expect(cluster.calls.filter((c) => c.method === 'listNodes')).toHaveLength(2);
  });
});

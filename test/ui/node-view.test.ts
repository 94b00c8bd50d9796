import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { indexAgones } from '../../shared/scale/game-state.js';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import { clusterViewOf } from '../../shared/ui/cluster-view.js';
import {
  type NodeFacts,
  nodeBadges,
  nodesView,
  type PlacedGameServer,
  uiGameStateOf,
} from '../../shared/ui/node-view.js';
import { agonesServer, berthCordoned, node, statefulServer, T0 } from '../scale/builders.js';

const facts = (name: string, marks: Partial<NodeFacts> = {}): NodeFacts => ({
  name,
  cpuMillis: 4000,
  usedCpuMillis: 0,
  gameServers: 0,
  cordoned: false,
  draining: false,
  joining: false,
  ...marks,
});

describe('the web view of nodes and their game servers', () => {
  it('counts each node’s ready, reserved and allocated game servers apart, and totals the nodes drawn', () => {
    const servers: PlacedGameServer[] = [
      { node: 'a', state: 'ready' },
      { node: 'a', state: 'ready' },
      { node: 'a', state: 'allocated', reserved: true },
      { node: 'a', state: 'allocated' },
      { node: 'b', state: 'allocated' },
      // A node the view does not draw (another node group): counted nowhere.
      { node: 'web', state: 'allocated' },
    ];
    const view = nodesView([facts('a'), facts('b'), facts('empty')], servers);
    expect(view.nodes.map((n) => [n.name, n.gameStates])).toEqual([
      ['a', { ready: 2, reserved: 1, allocated: 1 }],
      ['b', { ready: 0, reserved: 0, allocated: 1 }],
      ['empty', { ready: 0, reserved: 0, allocated: 0 }],
    ]);
    expect(view.gameStates).toEqual({ ready: 2, reserved: 1, allocated: 2 });
  });

  it('reads reserved as its own state only when the reader marks it, ready never reserved', () => {
    expect(uiGameStateOf({ state: 'allocated', reserved: true })).toBe('reserved');
    expect(uiGameStateOf({ state: 'allocated' })).toBe('allocated');
    expect(uiGameStateOf({ state: 'ready' })).toBe('ready');
  });

  it('marks cordoned, draining and joining nodes, a draining one as cordoned too', () => {
    expect(nodeBadges(facts('plain'))).toEqual([]);
    expect(nodeBadges(facts('c', { cordoned: true }))).toEqual([
      { kind: 'cordoned', text: 'cordoned' },
    ]);
    expect(nodeBadges(facts('d', { cordoned: true, draining: true })).map((b) => b.kind)).toEqual([
      'cordoned',
      'draining',
    ]);
    expect(nodeBadges(facts('j', { joining: true }))).toEqual([
      { kind: 'joining', text: 'joining: not Ready yet' },
    ]);
    expect(nodesView([facts('c', { cordoned: true })], []).nodes[0]?.badges).toHaveLength(1);
  });

  it('counts every game server on a drawn node exactly once, in one state', () => {
    const names = ['a', 'b', 'c'];
    const server = fc.record({
      node: fc.constantFrom(...names, 'elsewhere'),
      state: fc.constantFrom('ready' as const, 'allocated' as const),
      reserved: fc.option(fc.constant(true as const), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(server, { maxLength: 60 }), (servers) => {
        const placed = servers.map(({ reserved, ...s }) => ({
          ...s,
          ...(reserved ? { reserved } : {}),
        }));
        const view = nodesView(
          names.map((name) => facts(name)),
          placed,
        );
        for (const drawn of view.nodes) {
          const { ready, reserved, allocated } = drawn.gameStates;
          expect(ready + reserved + allocated).toBe(
            placed.filter((s) => s.node === drawn.name).length,
          );
          expect(ready).toBe(
            placed.filter((s) => s.node === drawn.name && s.state === 'ready').length,
          );
        }
        const { ready, reserved, allocated } = view.gameStates;
        expect(ready + reserved + allocated).toBe(
          placed.filter((s) => s.node !== 'elsewhere').length,
        );
      }),
    );
  });

  it('shows a real cluster’s game states as the scale pass reads them: Agones, the annotation, the safe default', () => {
    const ready = agonesServer('gs-ready', 'n1', 'Ready');
    const reserved = agonesServer('gs-reserved', 'n1', 'Reserved');
    const allocated = agonesServer('gs-allocated', 'n2', 'Allocated');
    const starting = agonesServer('gs-starting', 'n2', 'Scheduled');
    const pods = [
      ready.pod,
      reserved.pod,
      allocated.pod,
      starting.pod,
      statefulServer('plain-ready', 'n2', 'ready'),
      statefulServer('plain-allocated', 'n2', 'allocated'),
    ];
    const snapshot = buildSnapshot(
      [node('n1'), berthCordoned('n2', T0 - 60_000)],
      pods,
      {},
      indexAgones([ready, reserved, allocated, starting].map((s) => s.gameServer)),
    );
    const view = clusterViewOf(snapshot);
    expect(view.nodes.map((n) => [n.name, n.gameServers, n.gameStates, n.cordoned])).toEqual([
      ['n1', 2, { ready: 1, reserved: 1, allocated: 0 }, false],
      // A starting Agones server stays put, as the pass keeps it: allocated.
      ['n2', 4, { ready: 1, reserved: 0, allocated: 3 }, true],
    ]);
    expect(view.gameStates).toEqual({ ready: 2, reserved: 1, allocated: 3 });
  });
});

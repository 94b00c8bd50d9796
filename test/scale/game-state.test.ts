import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { gameStateOf, indexAgones } from '../../shared/scale/game-state.js';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import {
  AGONES_LAST_ALLOCATED,
  GAME_STATE_ANNOTATION,
  OKG_OPS_STATE_LABEL,
} from '../../shared/vocabulary/labels.js';
import { agonesServer, node, pod, statefulServer } from './builders.js';

const NONE = indexAgones([]);

/** A game-server pod owned by a controller, with extra labels and annotations. */
function okgPod(opsState: string, annotations: Record<string, string> = {}): V1Pod {
  const base = statefulServer('okg-0', 'n1', 'allocated');
  return {
    ...base,
    metadata: {
      ...base.metadata,
      labels: { ...base.metadata?.labels, [OKG_OPS_STATE_LABEL]: opsState },
      annotations,
    },
  };
}

describe('gameStateOf: Agones', () => {
  it('reads a Ready GameServer in a fleet as ready, moved by deleting it under its resourceVersion', () => {
    const { pod: p, gameServer } = agonesServer('gs-1', 'n1', 'Ready');
    expect(gameStateOf(p, indexAgones([gameServer]))).toEqual({
      state: 'ready',
      source: 'agones',
      detail: 'Agones GameServer state Ready',
      move: {
        kind: 'gameserver',
        namespace: 'games',
        name: 'gs-1',
        uid: 'gs-gs-1',
        resourceVersion: '42',
      },
    });
  });

  it.each(['Reserved', 'Allocated', 'Scheduled', 'RequestReady', 'Shutdown', 'Unhealthy', 'Error'])(
    'reads %s as allocated, never moved',
    (state) => {
      const { pod: p, gameServer } = agonesServer('gs-1', 'n1', state);
      const reading = gameStateOf(p, indexAgones([gameServer]));
      expect(reading.state).toBe('allocated');
      expect(reading.move).toBeUndefined();
    },
  );

  it("reads when an Allocated GameServer was allocated from Agones' last-allocated annotation", () => {
    const { pod: p, gameServer } = agonesServer('gs-2', 'n1', 'Allocated');
    const annotated = {
      ...gameServer,
      metadata: {
        ...gameServer.metadata,
        annotations: { [AGONES_LAST_ALLOCATED]: '2026-11-27T12:00:00.123456789Z' },
      },
    };
    expect(gameStateOf(p, indexAgones([annotated])).allocatedAtMs).toBe(
      Date.parse('2026-11-27T12:00:00.123Z'),
    );
    // Without it (or with a value that is not RFC 3339), the session counts from the pod.
    expect(gameStateOf(p, indexAgones([gameServer])).allocatedAtMs).toBeUndefined();
    const garbled = {
      ...annotated,
      metadata: { ...annotated.metadata, annotations: { [AGONES_LAST_ALLOCATED]: 'noon' } },
    };
    expect(gameStateOf(p, indexAgones([garbled])).allocatedAtMs).toBeUndefined();
  });

  it('reads a pod whose GameServer was not listed as allocated', () => {
    const { pod: p } = agonesServer('gs-1', 'n1', 'Ready');
    expect(gameStateOf(p, NONE)).toMatchObject({ state: 'allocated', source: 'agones' });
  });

  it('moves a standalone Ready GameServer too, saying nothing makes it again', () => {
    const { pod: p, gameServer } = agonesServer('gs-1', 'n1', 'Ready', { standalone: true });
    const reading = gameStateOf(p, indexAgones([gameServer]));
    expect(reading.state).toBe('ready');
    expect(reading.move).toMatchObject({ kind: 'gameserver', name: 'gs-1', alone: true });
  });

  it('lets the GameServer decide over an annotation on its pod', () => {
    const { pod: p, gameServer } = agonesServer('gs-1', 'n1', 'Allocated');
    const annotated = {
      ...p,
      metadata: { ...p.metadata, annotations: { [GAME_STATE_ANNOTATION]: 'ready' } },
    };
    expect(gameStateOf(annotated, indexAgones([gameServer])).state).toBe('allocated');
  });
});

describe('gameStateOf: OpenKruise Game', () => {
  it.each(['WaitToBeDeleted', 'Kill'])('reads opsState %s as ready, moved by eviction', (ops) => {
    const reading = gameStateOf(okgPod(ops), NONE);
    expect(reading).toMatchObject({ state: 'ready', source: 'openkruise' });
    expect(reading.move).toMatchObject({ kind: 'eviction', name: 'okg-0', resourceVersion: '7' });
  });

  it.each(['Allocated', 'Maintaining'])('reads opsState %s as allocated', (ops) => {
    expect(gameStateOf(okgPod(ops, { [GAME_STATE_ANNOTATION]: 'ready' }), NONE)).toMatchObject({
      state: 'allocated',
      source: 'openkruise',
    });
  });

  it('leaves opsState None to the annotation, and to the safe default without one', () => {
    expect(gameStateOf(okgPod('None', { [GAME_STATE_ANNOTATION]: 'ready' }), NONE).state).toBe(
      'ready',
    );
    expect(gameStateOf(okgPod('None'), NONE)).toMatchObject({
      state: 'allocated',
      source: 'default',
    });
  });
});

describe('gameStateOf: the berth.dev/state annotation', () => {
  it('reads ready and allocated as the game server says', () => {
    expect(gameStateOf(statefulServer('a', 'n1', 'ready'), NONE)).toMatchObject({
      state: 'ready',
      source: 'annotation',
      move: { kind: 'eviction', namespace: 'games', name: 'a', uid: 'uid-a' },
    });
    expect(gameStateOf(statefulServer('a', 'n1', 'allocated'), NONE)).toMatchObject({
      state: 'allocated',
      source: 'annotation',
    });
  });

  it('reads a game server without the annotation, or with another value, as allocated', () => {
    expect(gameStateOf(pod('plain', { node: 'n1' }), NONE)).toMatchObject({
      state: 'allocated',
      source: 'default',
    });
    const odd = statefulServer('a', 'n1', 'ready');
    odd.metadata = { ...odd.metadata, annotations: { [GAME_STATE_ANNOTATION]: 'Ready' } };
    expect(gameStateOf(odd, NONE)).toMatchObject({ state: 'allocated', source: 'default' });
  });

  it('moves a ready pod no controller owns, saying so, and never one being deleted', () => {
    const bare = statefulServer('a', 'n1', 'ready');
    bare.metadata = { ...bare.metadata, ownerReferences: [] };
    expect(gameStateOf(bare, NONE)).toMatchObject({
      state: 'ready',
      move: { kind: 'eviction', name: 'a', alone: true },
    });
    expect(gameStateOf(statefulServer('c', 'n1', 'ready'), NONE).move?.alone).toBeUndefined();
    const going = statefulServer('b', 'n1', 'ready');
    going.metadata = { ...going.metadata, deletionTimestamp: new Date(0) };
    expect(gameStateOf(going, NONE).move).toBeUndefined();
  });
});

describe('buildSnapshot with game state', () => {
  it('counts allocated and ready game servers per node and lists them', () => {
    const agones = agonesServer('gs-1', 'n1', 'Ready');
    const snapshot = buildSnapshot(
      [node('n1'), node('n2')],
      [
        agones.pod,
        statefulServer('a', 'n1', 'allocated'),
        statefulServer('b', 'n2', 'ready'),
        pod('plain', { node: 'n2' }),
      ],
      {},
      indexAgones([agones.gameServer]),
    );
    expect(
      snapshot.nodes.map((n) => [
        n.name,
        n.gameServers,
        n.allocatedGameServers,
        n.readyGameServers,
      ]),
    ).toEqual([
      ['n1', 2, 1, 1],
      ['n2', 2, 1, 1],
    ]);
    expect(snapshot.gameServers.map((gs) => `${gs.name}:${gs.state}:${gs.source}`)).toEqual([
      'gs-1:ready:agones',
      'a:allocated:annotation',
      'b:ready:annotation',
      'plain:allocated:default',
    ]);
  });
});

/**
 * Game state, read from where the fleet keeps it. A game server is *allocated* (it holds
 * players: never interrupted) or *ready* (it holds none: it may be moved). Pure: the pass lists
 * pods and Agones `GameServer`s, this module reads them. The rules (docs/game-state.md):
 *
 * 1. Agones: a pod owned by an `agones.dev/v1` `GameServer` takes that GameServer's
 *    `status.state`: `Ready` is ready; every other state is allocated. `Reserved` and
 *    `Allocated` hold (or are about to hold) players; the starting states (`PortAllocation`,
 *    `Creating`, `Starting`, `Scheduled`, `RequestReady`) become `Ready` within seconds and are
 *    moved then; `Shutdown`, `Error` and `Unhealthy` are Agones' own to end, and an Unhealthy
 *    server may still have players on it. A GameServer berth cannot see reads as allocated.
 *    States: googleforgames/agones `pkg/apis/agones/v1/gameserver.go`.
 * 2. OpenKruise Game: the GameServer controller mirrors `spec.opsState` onto the pod label
 *    `game.kruise.io/gs-opsState` (`SyncGsToPod`, openkruise/kruise-game v1.0.0
 *    `pkg/controllers/gameserver/gameserver_manager.go`). `WaitToBeDeleted` (the operator wants it
 *    gone first) and `Kill` (the GameServerSet deletes it) are ready; `Allocated` and
 *    `Maintaining` are allocated. `None` says nothing about players: the next rule decides.
 * 3. Any other fleet: the pod annotation `berth.dev/state: ready | allocated` that the game
 *    server sets on itself; absent (or any other value) means allocated, the safe default.
 *
 * A ready game server not already being deleted may be moved, as the contract says. Its fleet
 * makes it again elsewhere when a controller owns it (for Agones, a GameServerSet owning the
 * GameServer); one nothing owns is only deleted, and the move says so (`alone`): it declared
 * itself ready, and otherwise its node could never drain.
 */
import type { V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import type { AgonesGameServer } from '../k8s/cluster-api.js';
import {
  AGONES_LAST_ALLOCATED,
  GAME_STATE_ANNOTATION,
  OKG_OPS_STATE_LABEL,
} from '../vocabulary/labels.js';
import { parseRfc3339 } from './rfc3339.js';

/** Agones' API version of `GameServer` and `GameServerSet`. */
export const AGONES_API_VERSION = 'agones.dev/v1';

/** Allocated holds players and is never interrupted; ready holds none and may be moved. */
export const GAME_STATES = ['ready', 'allocated'] as const;
/** One of `GAME_STATES`. */
export type GameState = (typeof GAME_STATES)[number];

/** Where a game server's state was read. */
export type GameStateSource = 'agones' | 'openkruise' | 'annotation' | 'default';

/** How a ready game server is moved: delete its Agones GameServer, or evict its pod. */
export type MoveRoute = {
  readonly kind: 'gameserver' | 'eviction';
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  /** No controller makes it again: the move only deletes it. */
  readonly alone?: true;
};

/** A game server's state as berth reads it. */
export interface GameStateReading {
  readonly state: GameState;
  readonly source: GameStateSource;
  /** What was read, for reasons: e.g. `Agones GameServer state Reserved`. */
  readonly detail: string;
  /** How to move it, when it may be moved; undefined when it must stay. */
  readonly move?: MoveRoute;
  /**
   * Agones `Reserved`: held for a match that has not begun. Allocated to every pass; the web
   * view draws it apart, so an operator sees the servers that will fill soon.
   */
  readonly reserved?: true;
  /** Epoch ms the fleet last allocated it (Agones' `agones.dev/last-allocated`), when it says. */
  readonly allocatedAtMs?: number;
}

/** Agones GameServers by `namespace/name`. */
export type AgonesIndex = ReadonlyMap<string, AgonesGameServer>;

/** Indexes listed GameServers by `namespace/name`. */
export function indexAgones(gameServers: Iterable<AgonesGameServer>): AgonesIndex {
  const index = new Map<string, AgonesGameServer>();
  for (const gs of gameServers) {
    const name = gs.metadata?.name;
    if (name) index.set(`${gs.metadata?.namespace ?? 'default'}/${name}`, gs);
  }
  return index;
}

const isController = (owner: V1OwnerReference): boolean => owner.controller === true;

/** The Agones GameServer that owns the pod, by reference. */
export function agonesOwnerOf(pod: V1Pod): V1OwnerReference | undefined {
  return (pod.metadata?.ownerReferences ?? []).find(
    (owner) => owner.kind === 'GameServer' && owner.apiVersion === AGONES_API_VERSION,
  );
}

const OKG_READY: ReadonlySet<string> = new Set(['WaitToBeDeleted', 'Kill']);
const OKG_ALLOCATED: ReadonlySet<string> = new Set(['Allocated', 'Maintaining']);

/** Reads a pod's game state; `agones` holds the GameServers listed in the same pass. */
export function gameStateOf(pod: V1Pod, agones: AgonesIndex): GameStateReading {
  const namespace = pod.metadata?.namespace ?? 'default';
  const name = pod.metadata?.name ?? '';
  const deleting = pod.metadata?.deletionTimestamp !== undefined;
  const podRoute = (): MoveRoute | undefined =>
    deleting
      ? undefined
      : {
          kind: 'eviction',
          namespace,
          name,
          ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}),
          ...(pod.metadata?.resourceVersion
            ? { resourceVersion: pod.metadata.resourceVersion }
            : {}),
          ...((pod.metadata?.ownerReferences ?? []).some(isController)
            ? {}
            : { alone: true as const }),
        };

  const owner = agonesOwnerOf(pod);
  if (owner) {
    const gs = agones.get(`${namespace}/${owner.name}`);
    const state = gs?.status?.state;
    if (gs === undefined || (owner.uid && gs.metadata?.uid && owner.uid !== gs.metadata.uid)) {
      return { state: 'allocated', source: 'agones', detail: `Agones GameServer not seen` };
    }
    const detail = `Agones GameServer state ${state ?? '(none)'}`;
    if (state !== 'Ready') {
      const text = gs.metadata?.annotations?.[AGONES_LAST_ALLOCATED];
      const allocatedAtMs = text === undefined ? undefined : parseRfc3339(text);
      return {
        state: 'allocated',
        source: 'agones',
        detail,
        ...(state === 'Reserved' ? { reserved: true as const } : {}),
        ...(allocatedAtMs !== undefined ? { allocatedAtMs } : {}),
      };
    }
    const inFleet = (gs.metadata?.ownerReferences ?? []).some(
      (o) => o.kind === 'GameServerSet' && isController(o),
    );
    const gsDeleting = gs.metadata?.deletionTimestamp !== undefined;
    return {
      state: 'ready',
      source: 'agones',
      detail,
      ...(!deleting && !gsDeleting
        ? {
            move: {
              kind: 'gameserver',
              namespace,
              name: owner.name,
              ...(gs.metadata?.uid ? { uid: gs.metadata.uid } : {}),
              ...(gs.metadata?.resourceVersion
                ? { resourceVersion: gs.metadata.resourceVersion }
                : {}),
              ...(inFleet ? {} : { alone: true as const }),
            },
          }
        : {}),
    };
  }

  const opsState = pod.metadata?.labels?.[OKG_OPS_STATE_LABEL];
  if (opsState !== undefined && (OKG_READY.has(opsState) || OKG_ALLOCATED.has(opsState))) {
    const detail = `OpenKruise Game opsState ${opsState}`;
    if (OKG_ALLOCATED.has(opsState)) return { state: 'allocated', source: 'openkruise', detail };
    const move = podRoute();
    return { state: 'ready', source: 'openkruise', detail, ...(move ? { move } : {}) };
  }

  const annotated = pod.metadata?.annotations?.[GAME_STATE_ANNOTATION];
  if (annotated === 'ready') {
    const move = podRoute();
    return {
      state: 'ready',
      source: 'annotation',
      detail: `${GAME_STATE_ANNOTATION}: ready`,
      ...(move ? { move } : {}),
    };
  }
  if (annotated === 'allocated') {
    return {
      state: 'allocated',
      source: 'annotation',
      detail: `${GAME_STATE_ANNOTATION}: allocated`,
    };
  }
  return {
    state: 'allocated',
    source: 'default',
    detail:
      annotated === undefined
        ? `no ${GAME_STATE_ANNOTATION}: allocated by default`
        : `${GAME_STATE_ANNOTATION}: "${annotated}" is neither ready nor allocated: allocated by default`,
  };
}

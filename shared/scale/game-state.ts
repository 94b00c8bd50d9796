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
 * 4. Multi-session servers (`scale.gameState.counter` names a Counter): a GameServer that has
 *    that Counter in `status.counters` (`count`, `capacity`), or, when it has no Counter of that
 *    name, a List of it in `status.lists` (`values`, `capacity`), counts its sessions there. A
 *    count above zero is allocated whatever `status.state` says: a server hosting matches stays
 *    `Ready` or `Allocated` while they come and go (Agones' "High Density GameServers": the
 *    allocation increments the Counter, the game server decrements it as a session ends;
 *    googleforgames/agones v1.56.0 `site/content/en/docs/Integration Patterns/
 *    high-density-gameservers.md`). A count of zero leaves the state to rule 1. A server in
 *    state `Ready` or `Allocated` whose count is below its capacity offers the difference as
 *    room: match slots (`room`). A GameServer without the name counts as rule 1 says.
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
  /**
   * Multi-session (rule 4): the sessions it counts and the most it hosts, read from the named
   * Counter or List; absent when no counter is named or the GameServer has none of that name.
   */
  readonly sessions?: SessionCount;
  /** Of `sessions`, the matches it can take now: `capacity - count` while it serves, else 0. */
  readonly room?: number;
  /**
   * With `sessions`: its GameServer, whose session label a cordon closes and an uncordon opens
   * (`ScalePolicy.sessionLabel`); `labels` as listed, undefined when it has none.
   */
  readonly gameServer?: {
    readonly namespace: string;
    readonly name: string;
    readonly labels: Readonly<Record<string, string>> | undefined;
  };
}

/** A multi-session server's sessions, from its Counter or List. */
export interface SessionCount {
  readonly count: number;
  readonly capacity: number;
  /** Where it was read: an Agones Counter or List, by name. */
  readonly from: 'Counter' | 'List';
}

/** States in which a multi-session server takes matches (the allocation's `gameServerState`). */
const SERVING_STATES: ReadonlySet<string> = new Set(['Ready', 'Allocated']);

const wholeOrZero = (value: number | undefined): number =>
  typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.floor(value)) : 0;

/**
 * The sessions `gs` counts under `name`: its Counter of that name, or, with no such Counter, its
 * List (the values are the sessions). Undefined when it has neither.
 */
export function sessionCountOf(gs: AgonesGameServer, name: string): SessionCount | undefined {
  // Own keys only: a name such as `constructor` must not read the prototype.
  const counters = gs.status?.counters ?? {};
  if (Object.hasOwn(counters, name)) {
    const counter = counters[name];
    return {
      count: wholeOrZero(counter?.count),
      capacity: wholeOrZero(counter?.capacity),
      from: 'Counter',
    };
  }
  const lists = gs.status?.lists ?? {};
  if (Object.hasOwn(lists, name)) {
    const list = lists[name];
    return {
      count: list?.values?.length ?? 0,
      capacity: wholeOrZero(list?.capacity),
      from: 'List',
    };
  }
  return undefined;
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

/**
 * Reads a pod's game state; `agones` holds the GameServers listed in the same pass, `counter`
 * the Counter or List multi-session servers count their sessions in (rule 4), when named.
 */
export function gameStateOf(pod: V1Pod, agones: AgonesIndex, counter?: string): GameStateReading {
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
    const sessions = counter === undefined ? undefined : sessionCountOf(gs, counter);
    const gsDeleting = gs.metadata?.deletionTimestamp !== undefined;
    const counted =
      sessions === undefined
        ? {}
        : {
            sessions,
            gameServer: { namespace, name: owner.name, labels: gs.metadata?.labels },
            room:
              SERVING_STATES.has(state ?? '') && !deleting && !gsDeleting
                ? Math.max(0, sessions.capacity - sessions.count)
                : 0,
          };
    const detail = `Agones GameServer state ${state ?? '(none)'}${
      sessions === undefined
        ? ''
        : `, ${sessions.from} ${counter} ${sessions.count}/${sessions.capacity}`
    }`;
    if (state !== 'Ready' || (sessions !== undefined && sessions.count > 0)) {
      const text = gs.metadata?.annotations?.[AGONES_LAST_ALLOCATED];
      const allocatedAtMs = text === undefined ? undefined : parseRfc3339(text);
      return {
        state: 'allocated',
        source: 'agones',
        detail,
        ...(state === 'Reserved' ? { reserved: true as const } : {}),
        ...(allocatedAtMs !== undefined ? { allocatedAtMs } : {}),
        ...counted,
      };
    }
    const inFleet = (gs.metadata?.ownerReferences ?? []).some(
      (o) => o.kind === 'GameServerSet' && isController(o),
    );
    return {
      state: 'ready',
      source: 'agones',
      detail,
      ...counted,
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

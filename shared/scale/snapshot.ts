/**
 * What the scale plan sees of a cluster: the managed nodes with the CPU their pods request and
 * their game-server counts, the game servers waiting for a node, and the node pool's size.
 * Built from listed Kubernetes objects by a pure function, so the benchmark and the tests feed
 * the same code the pass runs.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { autoModeReason } from '../node-pool/auto-mode.js';
import {
  AGONES_FLEET_LABEL,
  GAME_SERVER_LABEL,
  OKG_OWNER_GSS_LABEL,
} from '../vocabulary/labels.js';
import { cpuMillisOf, effectiveCpuRequestMillis } from './cpu.js';
import { type AgonesIndex, type GameStateReading, gameStateOf } from './game-state.js';
import { isPlaceholder } from './placeholders.js';

/** One managed node as the plan reads it. */
export interface NodeView {
  readonly name: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  /** Epoch ms of `metadata.creationTimestamp`; undefined when absent. */
  readonly createdAtMs?: number;
  /** The `Ready` condition is `True`. */
  readonly ready: boolean;
  /** Epoch ms the `Ready` condition last changed (`lastTransitionTime`), when the Node says. */
  readonly readyAtMs?: number;
  readonly unschedulable: boolean;
  /** `metadata.deletionTimestamp` is set: someone is deleting it already. */
  readonly deleting: boolean;
  readonly annotations: Readonly<Record<string, string>>;
  /** Whether `metadata.annotations` exists (a JSON patch must create the map first). */
  readonly hasAnnotationMap: boolean;
  /** `spec.providerID`, e.g. `aws:///us-east-1a/i-0abc`. */
  readonly providerId?: string;
  /** Why it is an EKS Auto Mode node, by its labels (node-pool/auto-mode.ts); absent if not. */
  readonly autoMode?: string;
  readonly allocatableMillis: number;
  /** Effective CPU requests of every non-terminal pod on the node, game servers or not. */
  readonly requestedMillis: number;
  /** The game servers' share of `requestedMillis`. */
  readonly gameServerRequestedMillis: number;
  /** Game-server pods on the node that are Pending, Running or Unknown. */
  readonly gameServers: number;
  /** Of `gameServers`, those that hold players (game-state.ts): never interrupted. */
  readonly allocatedGameServers: number;
  /** Of `gameServers`, those that hold none (the rest are allocated). */
  readonly readyGameServers: number;
  /**
   * Multi-session (`scale.gameState.counter` named): the matches its game servers can take now,
   * in match slots: each counted server's room (game-state.ts rule 4), and one for each ready
   * server that counts no sessions. Absent when no counter is named.
   */
  readonly matchRoom?: number;
  /**
   * NLB slots mode: how many of its slots' chains serve. A game server placed on a slot that does
   * not serve yet has no public address players reach, so only serving slots are ready capacity.
   */
  readonly servingFrontSeats?: number;
}

/** A game-server pod bound to a node, with its game state. */
export interface GameServerView extends GameStateReading {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly requestMillis: number;
  /** Epoch ms of the pod's `metadata.creationTimestamp`; undefined when absent. */
  readonly createdAtMs?: number;
  /** `metadata.deletionTimestamp` is set: it is going already. */
  readonly deleting: boolean;
  /** Its Agones Fleet or OpenKruise GameServerSet, by the pod's labels; absent for neither. */
  readonly fleet?: string;
  readonly annotations: Readonly<Record<string, string>>;
  /** Whether `metadata.annotations` exists (a JSON patch must create the map first). */
  readonly hasAnnotationMap: boolean;
}

/** A game-server pod no node has been chosen for yet. */
export interface PendingGameServer {
  readonly namespace: string;
  readonly name: string;
  readonly requestMillis: number;
}

/** The node pool as its cloud API reports it; `desiredSize` is unknown for `none` and Karpenter. */
export interface PoolSize {
  readonly desiredSize?: number;
}

/** Everything one plan is computed from. */
export interface ClusterSnapshot {
  readonly nodes: readonly NodeView[];
  readonly pendingGameServers: readonly PendingGameServer[];
  readonly pool: PoolSize;
  /** Epoch ms each live game server was created (bound or not): the demand buffer's arrivals. */
  readonly gameServerCreatedAtMs: readonly number[];
  /** Every bound, non-terminal game server, with its game state (on any node). */
  readonly gameServers: readonly GameServerView[];
  /** The lifetime the node pool forces on its nodes (Karpenter's `expireAfter`), when it says. */
  readonly nodeLifetimeMs?: number;
  /** What is wrong with the node pool as the cluster has it, for the pass's notes. */
  readonly poolProblem?: string;
}

const TERMINAL_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed']);

/** Pending, Running and Unknown pods hold their node's CPU (and a game, for game servers). */
export function isNonTerminal(pod: V1Pod): boolean {
  return !TERMINAL_PHASES.has(pod.status?.phase ?? 'Pending');
}

/** The pod carries berth's game-server label. */
export function isGameServer(pod: V1Pod): boolean {
  return pod.metadata?.labels?.[GAME_SERVER_LABEL] === 'true';
}

/** The fleet a game-server pod's labels name. */
function fleetOf(pod: V1Pod): { fleet?: string } {
  const labels = pod.metadata?.labels ?? {};
  const fleet = labels[AGONES_FLEET_LABEL] ?? labels[OKG_OWNER_GSS_LABEL];
  return fleet === undefined ? {} : { fleet };
}

function epochMs(value: Date | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * The snapshot for `nodes` (already filtered by the node selector) and every pod in the cluster
 * (pods on other nodes are ignored; unbound game servers are demand). `agones` holds the Agones
 * GameServers listed with the pods; a game server whose state cannot be read is allocated.
 * `counter` names the Counter or List multi-session servers count their sessions in
 * (`scale.gameState.counter`), when set.
 */
export function buildSnapshot(
  nodes: Iterable<V1Node>,
  pods: Iterable<V1Pod>,
  pool: PoolSize,
  agones: AgonesIndex = new Map(),
  counter?: string,
): ClusterSnapshot {
  const usage = new Map<
    string,
    {
      requested: number;
      game: number;
      gameServers: number;
      allocated: number;
      ready: number;
      room: number;
    }
  >();
  const gameServers: GameServerView[] = [];
  const pendingGameServers: PendingGameServer[] = [];
  const gameServerCreatedAtMs: number[] = [];
  for (const pod of pods) {
    // A placeholder's CPU is a free slot: a game server preempts it.
    if (!isNonTerminal(pod) || isPlaceholder(pod)) continue;
    const nodeName = pod.spec?.nodeName;
    const request = effectiveCpuRequestMillis(pod);
    const game = isGameServer(pod);
    const createdAtMs = game ? epochMs(pod.metadata?.creationTimestamp) : undefined;
    if (createdAtMs !== undefined) gameServerCreatedAtMs.push(createdAtMs);
    if (!nodeName) {
      if (game && pod.metadata?.deletionTimestamp === undefined) {
        pendingGameServers.push({
          namespace: pod.metadata?.namespace ?? 'default',
          name: pod.metadata?.name ?? '',
          requestMillis: request,
        });
      }
      continue;
    }
    const entry = usage.get(nodeName) ?? {
      requested: 0,
      game: 0,
      gameServers: 0,
      allocated: 0,
      ready: 0,
      room: 0,
    };
    entry.requested += request;
    if (game) {
      const reading = gameStateOf(pod, agones, counter);
      entry.game += request;
      entry.gameServers += 1;
      if (reading.state === 'allocated') entry.allocated += 1;
      else entry.ready += 1;
      entry.room += reading.room ?? (reading.state === 'ready' ? 1 : 0);
      gameServers.push({
        ...reading,
        namespace: pod.metadata?.namespace ?? 'default',
        name: pod.metadata?.name ?? '',
        node: nodeName,
        ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}),
        ...(pod.metadata?.resourceVersion ? { resourceVersion: pod.metadata.resourceVersion } : {}),
        requestMillis: request,
        ...(createdAtMs !== undefined ? { createdAtMs } : {}),
        deleting: pod.metadata?.deletionTimestamp !== undefined,
        ...fleetOf(pod),
        annotations: { ...(pod.metadata?.annotations ?? {}) },
        hasAnnotationMap: pod.metadata?.annotations !== undefined,
      });
    }
    usage.set(nodeName, entry);
  }
  const views: NodeView[] = [];
  for (const node of nodes) {
    const name = node.metadata?.name;
    if (!name) continue;
    const used = usage.get(name);
    const readyCondition = node.status?.conditions?.find((c) => c.type === 'Ready');
    const ready = readyCondition?.status === 'True';
    const readyAtMs = ready ? epochMs(readyCondition?.lastTransitionTime) : undefined;
    const autoMode = autoModeReason(node.metadata?.labels);
    views.push({
      name,
      uid: node.metadata?.uid,
      resourceVersion: node.metadata?.resourceVersion,
      createdAtMs: epochMs(node.metadata?.creationTimestamp),
      ready,
      ...(readyAtMs !== undefined ? { readyAtMs } : {}),
      unschedulable: node.spec?.unschedulable === true,
      deleting: node.metadata?.deletionTimestamp !== undefined,
      annotations: { ...(node.metadata?.annotations ?? {}) },
      hasAnnotationMap: node.metadata?.annotations !== undefined,
      providerId: node.spec?.providerID,
      ...(autoMode === undefined ? {} : { autoMode }),
      allocatableMillis: cpuMillisOf(node.status?.allocatable),
      requestedMillis: used?.requested ?? 0,
      gameServerRequestedMillis: used?.game ?? 0,
      gameServers: used?.gameServers ?? 0,
      allocatedGameServers: used?.allocated ?? 0,
      readyGameServers: used?.ready ?? 0,
      ...(counter === undefined ? {} : { matchRoom: used?.room ?? 0 }),
    });
  }
  return { nodes: views, pendingGameServers, pool, gameServerCreatedAtMs, gameServers };
}

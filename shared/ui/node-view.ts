/**
 * The web view's nodes and their game servers, as the page reads them: each node's game servers
 * counted by state (ready, reserved, allocated) from the readings of the scale pass's own reader
 * (shared/scale/game-state.ts, through the snapshot's `gameServers`), its marks, and the fleet's
 * totals. Pure: the simulator and `berth serve` hand it what they see; the page only draws it.
 */
import type { GameServerView } from '../scale/snapshot.js';
import type { UiBadge, UiClusterView, UiGameStates, UiNode } from './state.js';

/** What the view knows of a node before its game servers' states are counted. */
export interface NodeFacts {
  readonly name: string;
  readonly cpuMillis: number;
  readonly usedCpuMillis: number;
  readonly gameServers: number;
  readonly cordoned: boolean;
  readonly draining: boolean;
  readonly joining: boolean;
  /** An EKS Auto Mode node: its pod IPs are Auto Mode's, not berth's (node-pool/auto-mode.ts). */
  readonly autoMode?: boolean;
}

/** A bound game server and the state berth read of it. */
export type PlacedGameServer = Pick<GameServerView, 'node' | 'state' | 'reserved'>;

/** One of the view's game-server states. */
export type UiGameState = keyof UiGameStates;

/** No game servers. */
export const NO_GAME_SERVERS: UiGameStates = { ready: 0, reserved: 0, allocated: 0 };

/** The view's state of one reading: reserved is allocated to berth, drawn apart. */
export function uiGameStateOf(server: Pick<PlacedGameServer, 'state' | 'reserved'>): UiGameState {
  if (server.state === 'ready') return 'ready';
  return server.reserved ? 'reserved' : 'allocated';
}

/**
 * A node's marks, in the order drawn. A table, so a new mark (a node kind, a forced lifetime) is
 * one row: a draining node is cordoned too, and says both.
 */
const BADGES: readonly {
  readonly kind: string;
  readonly text: string;
  readonly applies: (node: NodeFacts) => boolean;
}[] = [
  { kind: 'cordoned', text: 'cordoned', applies: (node) => node.cordoned },
  { kind: 'draining', text: 'draining', applies: (node) => node.draining },
  { kind: 'joining', text: 'joining: not Ready yet', applies: (node) => node.joining },
  {
    kind: 'auto-mode',
    text: 'EKS Auto Mode: no ENI pool',
    applies: (node) => node.autoMode === true,
  },
];

/** The marks a node carries. */
export function nodeBadges(node: NodeFacts): UiBadge[] {
  return BADGES.filter((badge) => badge.applies(node)).map(({ kind, text }) => ({ kind, text }));
}

const add = (a: UiGameStates, b: UiGameStates): UiGameStates => ({
  ready: a.ready + b.ready,
  reserved: a.reserved + b.reserved,
  allocated: a.allocated + b.allocated,
});

/**
 * The nodes drawn, each with its game servers counted by state and its marks, and the totals of
 * the nodes drawn (game servers on nodes the view does not draw count nowhere).
 */
export function nodesView(
  nodes: readonly NodeFacts[],
  gameServers: Iterable<PlacedGameServer>,
): Pick<UiClusterView, 'nodes' | 'gameStates'> {
  const byNode = new Map<string, Record<UiGameState, number>>();
  for (const server of gameServers) {
    const counts = byNode.get(server.node) ?? { ...NO_GAME_SERVERS };
    counts[uiGameStateOf(server)] += 1;
    byNode.set(server.node, counts);
  }
  const drawn = nodes.map(
    (node): UiNode => ({
      ...node,
      gameStates: byNode.get(node.name) ?? NO_GAME_SERVERS,
      badges: nodeBadges(node),
    }),
  );
  return {
    nodes: drawn,
    gameStates: drawn.reduce((total, node) => add(total, node.gameStates), NO_GAME_SERVERS),
  };
}

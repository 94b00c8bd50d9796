/**
 * The scale pass's act phase over a stepped simulated cluster (the scale benchmark's day,
 * bench/scale/day.ts): the few Kubernetes and node pool calls its actions make, answered from
 * the cluster's own state, so the benchmark measures the pass's own cordons, removals (mark,
 * look at the node's pods, release, delete), moves and GameServer label patches instead of a
 * copy of them. Node patches
 * go through the API stand-in's JSON Patch applier, so a cordon that changed since the listing
 * fails its `test` as it would against an apiserver.
 */

import type { V1Node } from '@kubernetes/client-node';
import type { ScaleActDeps } from '../shared/scale/pass.js';
import { GAME_SERVER_LABEL } from '../shared/vocabulary/labels.js';
import { applyPatch } from './fakes/json-patch.js';

/** A game server of the stepped cluster, known to the API by its id. */
export type SteppedGame = { readonly id: number };

/** A node of the stepped cluster: what a patch changes, and the game servers on it. */
export type SteppedNode = {
  readonly name: string;
  unschedulable: boolean;
  annotations: Record<string, string>;
  readonly games: ReadonlySet<SteppedGame>;
};

/** What the act phase needs of a stepped cluster. */
export interface SteppedCluster {
  readonly now: number;
  readonly nodes: readonly SteppedNode[];
  cordons: number;
  uncordons: number;
  growTo(size: number): void;
  /** The instance goes, with the node (its game servers interrupted). */
  remove(node: SteppedNode): void;
  /** Deletes a game server that holds no players; false for one that does. */
  evict(game: SteppedGame): boolean;
  setPlaceholderReplicas(replicas: number): void;
  /** The labels of a game server's GameServer, as a patch last left them. */
  gameServerLabels(game: SteppedGame): Readonly<Record<string, string>> | undefined;
  setGameServerLabels(game: SteppedGame, labels: Readonly<Record<string, string>>): void;
}

/** The name of a game server's pod, as the cluster's snapshot lists it. */
export const gamePodName = (game: SteppedGame): string => `game-${game.id}`;
/** The name of the Agones GameServer owning a game server's pod. */
export const gameServerName = (game: SteppedGame): string => `gs-${game.id}`;

/** The act phase's cluster, pool and clock over `cluster`. */
export function steppedScaleDeps(cluster: SteppedCluster): ScaleActDeps {
  const nodeNamed = (name: string) => cluster.nodes.find((node) => node.name === name);
  /** Deletes the game server `named` names, as a delete with preconditions would end. */
  const gameNamed = (name: string) => {
    for (const node of cluster.nodes) {
      for (const game of node.games) if (gameServerName(game) === name) return game;
    }
    return undefined;
  };
  const move = (name: string, named: (game: SteppedGame) => string) => {
    for (const node of cluster.nodes) {
      for (const game of node.games) {
        if (named(game) === name) return cluster.evict(game) ? 'deleted' : 'changed';
      }
    }
    return 'gone';
  };
  return {
    now: () => cluster.now,
    cluster: {
      async patchNode(name, patch) {
        const node = nodeNamed(name);
        if (!node) throw new Error(`node ${name} not found`);
        const listed: V1Node = {
          metadata: { name, annotations: { ...node.annotations } },
          spec: node.unschedulable ? { unschedulable: true } : {},
        };
        const patched = applyPatch(listed, patch);
        const cordoned = patched.spec?.unschedulable === true;
        if (cordoned && !node.unschedulable) cluster.cordons++;
        if (!cordoned && node.unschedulable) cluster.uncordons++;
        node.unschedulable = cordoned;
        node.annotations = { ...patched.metadata?.annotations };
        return patched;
      },
      async *listPods(options) {
        const name = options?.fieldSelector?.replace(/^spec\.nodeName=/, '') ?? '';
        for (const game of nodeNamed(name)?.games ?? []) {
          const labels = { [GAME_SERVER_LABEL]: 'true' };
          const metadata = { name: gamePodName(game), namespace: 'games', labels };
          yield {
            metadata,
            spec: { nodeName: name, containers: [] },
            status: { phase: 'Running' },
          };
        }
      },
      // The pool released the node with its instance: its Node went with it.
      async deleteNode() {},
      async createEvent() {},
      async scaleDeployment(_namespace, _name, replicas) {
        cluster.setPlaceholderReplicas(replicas);
      },
      async evictPod(_namespace, name) {
        const outcome = move(name, gamePodName);
        return outcome === 'deleted' ? 'evicted' : outcome;
      },
      async deleteGameServer(_namespace, name) {
        return move(name, gameServerName);
      },
      async patchGameServer(namespace, name, patch) {
        const game = gameNamed(name);
        if (!game) throw new Error(`GameServer ${namespace}/${name} not found`);
        const labels = cluster.gameServerLabels(game);
        const listed = {
          metadata: { name, namespace, ...(labels ? { labels: { ...labels } } : {}) },
        };
        const patched = applyPatch(listed, patch);
        cluster.setGameServerLabels(game, { ...patched.metadata?.labels });
        return patched;
      },
    },
    pool: {
      type: 'asg',
      async growTo(size) {
        cluster.growTo(size);
        return { applied: true, description: `desired ${size}` };
      },
      async releaseInstance(released) {
        const node = nodeNamed(released.name);
        if (node) cluster.remove(node);
        return { applied: true, description: `${released.name} released` };
      },
    },
  };
}

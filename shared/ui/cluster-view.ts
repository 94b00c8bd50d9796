/**
 * The web view's cluster, read from a real one (`berth serve` with a kubeconfig): the game-server
 * nodes (`scale.nodeSelector`) as boxes filled with their ready, reserved and allocated game
 * servers, cordoned and draining ones marked, and the game servers waiting for a node. Built from
 * the same snapshot the scale pass plans from, so the view and the pass count CPU, game servers
 * and their states alike.
 */
import type { ScaleConfig } from '../config/schema.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import type { NodePool } from '../node-pool/node-pool.js';
import { readClusterSnapshot } from '../scale/pass.js';
import type { ClusterSnapshot } from '../scale/snapshot.js';
import { REMOVAL_STARTED_AT } from '../vocabulary/labels.js';
import { type NodeFacts, nodesView } from './node-view.js';
import type { UiClusterView } from './state.js';

/** What the view shows of a snapshot: its game servers counted by the state the pass read. Pure. */
export function clusterViewOf(snapshot: ClusterSnapshot): UiClusterView {
  const nodes = snapshot.nodes.map(
    (node): NodeFacts => ({
      name: node.name,
      cpuMillis: node.allocatableMillis,
      usedCpuMillis: node.requestedMillis,
      gameServers: node.gameServers,
      cordoned: node.unschedulable,
      draining: node.annotations[REMOVAL_STARTED_AT] !== undefined,
      joining: !node.ready,
      ...(node.autoMode === undefined ? {} : { autoMode: true }),
    }),
  );
  return {
    ...nodesView(nodes, snapshot.gameServers),
    pendingGameServers: snapshot.pendingGameServers.length,
  };
}

/** The view draws no pool size. */
const NO_POOL: Pick<NodePool, 'describe'> = { describe: async () => ({}) };

/**
 * Reads the cluster's game-server nodes and every pod for the view, at most once per `maxAgeMs`
 * however often the page polls (it polls every second; listing a large cluster's pods that
 * often would load its apiserver for a picture).
 */
export function clusterViewReader(
  cluster: ClusterApi,
  scale: Pick<ScaleConfig, 'nodeSelector'>,
  now: () => number,
  maxAgeMs = 5_000,
): () => Promise<UiClusterView> {
  let last: { readonly at: number; readonly view: Promise<UiClusterView> } | undefined;
  return () => {
    if (!last || now() - last.at >= maxAgeMs) {
      const view = readClusterSnapshot(cluster, NO_POOL, scale.nodeSelector).then(clusterViewOf);
      // A failed read is not kept: the next poll asks again.
      view.catch(() => {
        last = undefined;
      });
      last = { at: now(), view };
    }
    return last.view;
  };
}

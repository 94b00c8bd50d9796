/**
 * The paddle-soccer nodescaler (2017), as a baseline of the node scale benchmark.
 *
 * Sources: Mark Mandel, "Scaling Dedicated Game Servers with Kubernetes: Part 4 – Scaling Down"
 * (compoundtheory.com, https://www.compoundtheory.com/scaling-dedicated-game-servers-with-kubernetes-part-4-scaling-down/),
 * which lists `scaleNodes`, `cordonNodes` and `deleteCordonedNodes`; the parts it does not list
 * (`uncordonNodes`, `increaseNodes`, `cpuRequestsAvailable`, the loop) from the code it comes
 * from, github.com/markmandel/paddle-soccer server/nodescaler/{scaler.go,server.go,deployment.yaml}
 * at commit 6dd300b. Rule by rule:
 * - game servers pack by a preferred pod affinity on the hostname (the article's pod spec): the
 *   shared scheduler (`./day.ts`);
 * - `scaleNodes`: below the buffer, uncordon and return if that was enough ("short circuit if
 *   uncordoning means we have enough buffer now"), else recompute and grow; above it, cordon; then
 *   `deleteCordonedNodes` (the article's listing has no minimum-size step, so neither has the model);
 * - `cpuRequestsAvailable`: over Ready, schedulable nodes, `(capacity - sum of CPU limits) /
 *   cpuRequest` per node, integer division (scaler.go);
 * - `uncordonNodes`: cordoned nodes by CPU limits, most first, until `cpuRequest × gameNumber` of
 *   capacity is back (scaler.go);
 * - `increaseNodes`: `size = available nodes + ceil(gameNumber × cpuRequest / capacity)`, capped at
 *   `MAX_NODE`; the pool never shrinks on it (scaler.go);
 * - `cordonNodes`: `diff = floor(gameNumber × cpuRequest / capacity of Items[0])`; the nodes sorted
 *   by the number of their pods (all pods: `nl.nodePods(n).Items`, the DaemonSet pod included),
 *   fewest first, over all the listed nodes (cordoned ones too, re-cordoned), and the first `diff`
 *   cordoned, with a `nodescale/timestamp`; no minimum (the article's listing);
 * - `deleteCordonedNodes`: none when the listed nodes are at `MIN_NODE`; else each cordoned node in
 *   list order with no game pod whose timestamp plus `SHUTDOWN_NODE` is before now is deleted,
 *   stopping at `MIN_NODE`; a timestamp that does not parse aborts the pass (`return err`);
 * - the loop: every `TICK` (10 s in the code and in deployment.yaml) and on every Added or Deleted
 *   game pod (server.go); with the bench's 10 s steps, one pass a step.
 * `SHUTDOWN_NODE` is the scenario's shutdown delay (60 s, the code's default), `BUFFER_COUNT`
 * berth's buffer, `CPU_REQUEST` the game server's request.
 */
import { formatRfc3339, parseRfc3339 } from '../../shared/scale/rfc3339.js';
import { everyMs, type Scaler, type Scenario, SECOND, type SimNode } from './day.js';

/** `TICK` in server/nodescaler/deployment.yaml (and the code's default). */
export const PADDLE_SOCCER_TICK_MS = 10 * SECOND;

/** The paddle-soccer nodescaler's `scaleNodes()` on its tick. */
export function paddleSoccerScaler(sc: Scenario): Scaler {
  const { gameServerCpuMillis: cpuRequest, bufferGameServers: bufferCount } = sc.scale;
  const { minNodes: minNodeNumber, maxNodes: maxNodeNumber, shutdownDelaySeconds } = sc.scale;
  const capacity = sc.node.capacityMillis;
  const limitsOf = (node: SimNode) => sc.daemon.limitMillis + node.games.size * sc.game.limitMillis;
  const podsOf = (node: SimNode) => node.games.size + 1;
  return everyMs(PADDLE_SOCCER_TICK_MS, (cluster) => {
    // The node list is what the Kubernetes API lists: registered nodes, by name.
    const list = () => cluster.nodes.filter((n) => cluster.registered(n));
    const availableNodes = (nl: SimNode[]) =>
      nl.filter((n) => cluster.ready(n) && !n.unschedulable);
    const cpuRequestsAvailable = (nl: SimNode[]) =>
      availableNodes(nl).reduce(
        (sum, n) => sum + Math.trunc((capacity - limitsOf(n)) / cpuRequest),
        0,
      );
    const cordon = (node: SimNode, unschedulable: boolean) => {
      node.unschedulable = unschedulable;
      node.annotations = { 'nodescale/timestamp': formatRfc3339(cluster.now) };
      if (unschedulable) cluster.cordons++;
      else cluster.uncordons++;
    };

    let nl = list();
    let available = cpuRequestsAvailable(nl);
    if (available < bufferCount) {
      const gameNumber = bufferCount - available;
      const cordoned = nl.filter((n) => n.unschedulable).sort((a, b) => limitsOf(b) - limitsOf(a));
      let finished = false;
      if (cordoned.length > 0) {
        let need = cpuRequest * gameNumber;
        for (const node of cordoned) {
          cordon(node, false);
          need -= capacity - limitsOf(node);
          if (need <= 0) {
            finished = true;
            break;
          }
        }
      }
      if (finished) return;
      nl = list();
      available = cpuRequestsAvailable(nl);
      const missing = bufferCount - available;
      const first = nl[0];
      if (missing > 0 && first) {
        const diff = Math.ceil((missing * cpuRequest) / capacity);
        const size = Math.min(availableNodes(nl).length + diff, maxNodeNumber);
        cluster.growTo(size);
      }
    } else if (available > bufferCount) {
      const diff = Math.floor(((available - bufferCount) * cpuRequest) / capacity);
      if (diff > 0) {
        const order = [...nl].sort((a, b) => podsOf(a) - podsOf(b));
        for (const node of order.slice(0, diff)) cordon(node, true);
      }
    }
    // deleteCordonedNodes()
    nl = list();
    let l = nl.length;
    if (l <= minNodeNumber) return;
    for (const node of nl) {
      if (!node.unschedulable) continue;
      const at = parseRfc3339(node.annotations['nodescale/timestamp'] ?? '');
      if (at === undefined) return;
      if (node.games.size === 0 && at + shutdownDelaySeconds * SECOND < cluster.now) {
        cluster.remove(node);
        l--;
        if (l <= minNodeNumber) break;
      }
    }
  });
}

/** The paddle-soccer nodescaler (2017), as `shared/reference/scale-down.md` describes it. */
import { formatRfc3339, parseRfc3339 } from '../../shared/scale/rfc3339.js';
import { type Scaler, type Scenario, SECOND, type SimNode } from './day.js';

/**
 * The paddle-soccer nodescaler's `scaleNodes()`, as the reference describes it: CPU limits
 * against capacity, integer division per node, uncordon by limits, sizes from the first node,
 * growth from available nodes only, cordon by pod count over all nodes with no minimum (and
 * re-cordoning), deletion in list order, skipped when uncordoning finished the need.
 */
export function paddleSoccerScaler(sc: Scenario): Scaler {
  const { gameServerCpuMillis: cpuRequest, bufferGameServers: bufferCount } = sc.scale;
  const { minNodes: minNodeNumber, maxNodes: maxNodeNumber, shutdownDelaySeconds } = sc.scale;
  const capacity = sc.node.capacityMillis;
  const limitsOf = (node: SimNode) => sc.daemon.limitMillis + node.games.size * sc.game.limitMillis;
  const podsOf = (node: SimNode) => node.games.size + 1;
  return (cluster) => {
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
    if (nl.length < minNodeNumber) {
      cluster.growTo(minNodeNumber);
      return;
    }
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
      const at = parseRfc3339(node.annotations['nodescale/timestamp'] ?? '') ?? 0;
      if (node.games.size === 0 && at + shutdownDelaySeconds * SECOND < cluster.now) {
        cluster.remove(node);
        l--;
        if (l <= minNodeNumber) break;
      }
    }
  };
}

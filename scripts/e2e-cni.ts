/**
 * `npm run e2e:cni`: berth-cni behind Debian's `ptp` plugin, in network namespaces this script
 * makes on this machine and removes again, even when interrupted.
 *
 * The stage (`sim/staged-node.ts`): a node namespace whose links stand in for the node's berth
 * ENIs, a "VPC" namespace behind them where the subnet's router lives (routing each pod address
 * to the ENI that owns it, as the VPC does), and one namespace per pod. berth's node IP API runs
 * in the node namespace on its loopback, over the EC2 fake. Then:
 * 1. 50 pods are ADDed concurrently: 50 distinct addresses, each configured in its namespace,
 *    with the rules and ENI routes on the node, and a ping to the router leaves through the
 *    pod's own ENI (checked with `ip route get` and answered);
 * 2. CHECK passes for every pod;
 * 3. DEL of all leaves no address, rule, route or link behind, and every address free in berth;
 * 4. handed out on the node: the node agent (`berth-cni agent`, as the DaemonSet runs it, on the
 *    node's conflist) learns the node's set and reports, berth is stopped, and 20 pods are
 *    ADDed at once from the set alone (distinct addresses of the set, wired and answered as in
 *    1), then DELed, leaving nothing behind and no lease on the node;
 * 5. an ADD that asks berth while it is down fails with a CNI error and leaves nothing
 *    half-configured.
 * Needs root, iproute2 and `containernetworking-plugins` (`ptp` in /usr/lib/cni).
 */
import { fileURLToPath } from 'node:url';
import { stageNames, withStagedNode } from '../sim/staged-node.js';

const PREFIX = 'berth-e2e-';
const PODS = 50;

if (process.argv[2] === '--inside') {
  const { inside } = await import('./e2e-cni-stage.js');
  process.exit(
    await inside(process.argv[3] ?? '', process.argv[4] ?? '', {
      names: stageNames(PREFIX),
      pods: PODS,
    }),
  );
} else {
  // The driver runs inside the node namespace: berth's API and the plugins share its loopback.
  const code = await withStagedNode(
    { prefix: PREFIX, label: 'e2e:cni', plugins: ['ptp'] },
    (stage) =>
      stage.inside(fileURLToPath(import.meta.url), ['--inside', stage.pluginDir, stage.work]),
  );
  process.exit(code);
}

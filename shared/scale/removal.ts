/**
 * Removing a node without ending a game that landed on it after the pass decided. Karpenter's
 * open bug #3185 is this window: a node chosen while empty is deleted after a do-not-disrupt pod
 * was bound to it during the wait. berth closes it with its cordon: from the cordon on, berth's
 * webhooks refuse game servers for the node (a binding, or a pod created with `spec.nodeName`:
 * shared/admission/removal-guard.ts), so once the cordon is `commitWindowMs` old every game server
 * admitted for the node has committed. A pass then removes a drained node in one go:
 *
 * 1. mark it `berth.dev/removal-started-at` (compare-and-swap: only while it is still berth's same
 *    cordon), so that a pass that dies half-way leaves a node the next pass finishes;
 * 2. look at the pods bound to it now;
 * 3. release the instance through the pool (idempotent), then delete the Node. The Node carries
 *    the instance id (`spec.providerID`) until this very last step: deleting it first would lose
 *    the id of an instance a crash left running.
 *
 * A game server on the node, or any other pod that came to it after berth cordoned it (a cordoned
 * node gets no pod from the scheduler: such a pod was created with `spec.nodeName`), stops the
 * removal: the mark is taken back and the node stays cordoned, to drain again. DaemonSet pods,
 * and the pods that ran there before the cordon, go with the node.
 *
 * With node pool `none` nothing of this happens: the node stays cordoned, and the pass reports
 * the removal it would have made (`deletesNodes`).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { deletesNodes, type NodePool } from '../node-pool/node-pool.js';
import { CORDONED_AT, REMOVAL_STARTED_AT } from '../vocabulary/labels.js';
import { annotationPath, type JsonPatchOperation } from '../vocabulary/patch.js';
import { isPlaceholder } from './placeholders.js';
import { parseRfc3339 } from './rfc3339.js';
import { isGameServer, isNonTerminal, type NodeView } from './snapshot.js';

/**
 * A pod the node must not be removed under: live, and a game server or a pod that came after
 * `cordonedAtMs` (neither a DaemonSet's nor a static pod).
 */
function holdsNode(pod: V1Pod, cordonedAtMs: number | undefined): boolean {
  if (!isNonTerminal(pod) || pod.metadata?.deletionTimestamp !== undefined) return false;
  if (isPlaceholder(pod)) return false;
  if (isGameServer(pod)) return true;
  const owners = pod.metadata?.ownerReferences ?? [];
  if (owners.some((owner) => owner.kind === 'DaemonSet' || owner.kind === 'Node')) return false;
  const created = pod.metadata?.creationTimestamp;
  const createdAtMs = created === undefined ? undefined : new Date(created).getTime();
  return createdAtMs !== undefined && cordonedAtMs !== undefined && createdAtMs >= cordonedAtMs;
}

/** The pods bound to `node` now that stop its removal, by namespace/name. */
async function podsHolding(
  cluster: Pick<ClusterApi, 'listPods'>,
  node: NodeView,
): Promise<string[]> {
  const cordonedAtMs = parseRfc3339(node.annotations[CORDONED_AT] ?? '');
  const holding: string[] = [];
  for await (const pod of cluster.listPods({ fieldSelector: `spec.nodeName=${node.name}` })) {
    if (holdsNode(pod, cordonedAtMs))
      holding.push(`${pod.metadata?.namespace}/${pod.metadata?.name}`);
  }
  return holding;
}

/** Commit to removing a node still under berth's same cordon. */
function removalPatch(node: NodeView, at: string): JsonPatchOperation[] {
  return [
    ...stillBerthCordoned(node),
    { op: 'add', path: annotationPath(REMOVAL_STARTED_AT), value: at },
  ];
}

/** Take back a mark: only the one this removal made (the same time), the cordon kept. */
export function withdrawalPatch(at: string): JsonPatchOperation[] {
  return [
    { op: 'test', path: annotationPath(REMOVAL_STARTED_AT), value: at },
    { op: 'remove', path: annotationPath(REMOVAL_STARTED_AT) },
  ];
}

/** Tests that the node is still under berth's cordon as listed. */
export function stillBerthCordoned(node: NodeView): JsonPatchOperation[] {
  // Tests on the fields that matter rather than resourceVersion: kubelet status updates bump the
  // version all the time and must not make a cordon unremovable.
  return [
    { op: 'test', path: '/spec/unschedulable', value: true },
    { op: 'test', path: annotationPath(CORDONED_AT), value: node.annotations[CORDONED_AT] },
  ];
}

async function stopped(
  cluster: Pick<ClusterApi, 'patchNode'>,
  node: string,
  at: string,
  holding: readonly string[],
): Promise<string> {
  await cluster.patchNode(node, withdrawalPatch(at));
  return `; removal stopped: ${holding.join(', ')} bound to the node after the pass decided; mark taken back, the node stays cordoned`;
}

/** Removes a drained node: mark it, look at its pods, then release its instance and delete it. */
export async function removeNode(
  cluster: Pick<ClusterApi, 'patchNode' | 'listPods' | 'deleteNode'>,
  pool: Pick<NodePool, 'type' | 'releaseInstance'>,
  node: NodeView,
  at: string,
): Promise<string> {
  // Never a deletion with a pool that deletes no Node, whoever calls (the pass reports it first).
  if (!deletesNodes(pool)) return wouldRemove(pool, node);
  await cluster.patchNode(node.name, removalPatch(node, at));
  return finishRemoval(cluster, pool, {
    ...node,
    annotations: { ...node.annotations, [REMOVAL_STARTED_AT]: at },
  });
}

/**
 * Finishes the removal of a marked node (this pass's, or one a pass that died left): looks at
 * its pods, then releases its instance and deletes the Node.
 */
export async function finishRemoval(
  cluster: Pick<ClusterApi, 'patchNode' | 'listPods' | 'deleteNode'>,
  pool: Pick<NodePool, 'type' | 'releaseInstance'>,
  node: NodeView,
): Promise<string> {
  if (!deletesNodes(pool)) return wouldRemove(pool, node);
  const at = node.annotations[REMOVAL_STARTED_AT] ?? '';
  const holding = await podsHolding(cluster, node);
  if (holding.length > 0) return stopped(cluster, node.name, at, holding);
  const change = await pool.releaseInstance({ name: node.name, providerId: node.providerId });
  await cluster.deleteNode(node.name);
  return `; ${change.description}; Node deleted`;
}

/**
 * The removal a pool that deletes no Node would have made, as a report: the pool says what it
 * would do with the instance, and the node is left as it is, cordoned. Said first in the action's
 * reason: nothing was deleted.
 */
export async function wouldRemove(
  pool: Pick<NodePool, 'type' | 'releaseInstance'>,
  node: NodeView,
): Promise<string> {
  const change = await pool.releaseInstance({ name: node.name, providerId: node.providerId });
  return `not deleted: node pool ${pool.type} deletes no Node and no instance (${change.description}, and would delete Node ${node.name}); the node stays cordoned`;
}

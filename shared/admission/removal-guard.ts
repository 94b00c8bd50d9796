/**
 * Game servers are never placed on a node berth is draining or removing. From the moment berth
 * cordons a node (`spec.unschedulable` with `berth.dev/cordoned-at`) until it uncordons it, and
 * while it is removing it (`berth.dev/removal-started-at`, shared/scale/removal.ts), a binding of
 * a berth game server to it, or a game server created with `spec.nodeName` naming it, is
 * refused: the scheduler places the pod elsewhere, and a pod created on the node directly fails
 * visibly instead of being ended with the node. The scheduler places nothing on a cordoned node
 * anyway; this closes the two ways around it (a binding decided before the cordon, a pod that
 * names its node). So once a cordon is a commit window old, every game server admitted for the
 * node has committed, and the pass's look at the node's pods sees them all.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { CORDONED_AT, PORTS_ANNOTATION, REMOVAL_STARTED_AT } from '../vocabulary/labels.js';
import { annotationOf, stringAt } from '../vocabulary/opaque.js';
import type { AdmissionHandler } from './dispatch.js';
import { type AdmissionVerdict, deny } from './response.js';

/**
 * The refusal for game server `pod` headed to `node` through `field` (the Binding's `target.name`,
 * or the pod's own `spec.nodeName`), when berth is draining or removing the node; undefined to go
 * on. Pure: the callers read the node (the binding webhook already has).
 */
export function refusalForDrainingNode(
  node: V1Node | undefined,
  nodeName: string,
  pod: string,
  field: 'target.name' | 'spec.nodeName',
): AdmissionVerdict | undefined {
  const annotations = node?.metadata?.annotations ?? {};
  const refuse = (why: string) =>
    deny(
      409,
      `${field}: node ${nodeName} is ${why}; game server ${pod} may not be placed on it, choose another node`,
    );
  const startedAt = annotations[REMOVAL_STARTED_AT];
  if (startedAt !== undefined) {
    return refuse(`being removed by berth (${REMOVAL_STARTED_AT}: ${startedAt})`);
  }
  const cordonedAt = annotations[CORDONED_AT];
  if (cordonedAt !== undefined && node?.spec?.unschedulable === true) {
    return refuse(`cordoned by berth to drain (${CORDONED_AT}: ${cordonedAt})`);
  }
  return undefined;
}

/** Where the guard reads a node: through a short-lived cache, and as it is now. */
export interface NodeReads {
  readonly cached: Pick<ClusterApi, 'getNode'>;
  readonly current: Pick<ClusterApi, 'getNode'>;
}

/** The node a game server is headed to, and the refusal when berth drains it. */
export interface GameServerNode {
  readonly node: V1Node | undefined;
  readonly refused?: AdmissionVerdict;
}

/**
 * Reads the node game server `pod` is headed to through `field`, and decides. A refusal is made
 * on the node as it is now: the cache may still show a cordon berth has lifted (it uncordons as
 * demand rises, when game servers are wanted there at once), so a node the cache shows draining
 * is read again past it.
 */
export async function nodeForGameServer(
  reads: NodeReads,
  nodeName: string,
  pod: string,
  field: 'target.name' | 'spec.nodeName',
): Promise<GameServerNode> {
  const cached = await reads.cached.getNode(nodeName);
  if (!refusalForDrainingNode(cached, nodeName, pod, field)) return { node: cached };
  const node = await reads.current.getNode(nodeName);
  const refused = refusalForDrainingNode(node, nodeName, pod, field);
  return refused ? { node, refused } : { node };
}

/** `pods` CREATE: refuses a berth game server created with `spec.nodeName` on a node berth drains. */
export function guardPodCreates(reads: NodeReads, next: AdmissionHandler): AdmissionHandler {
  return async (request) => {
    const pod = request.object;
    const nodeName = pod ? stringAt(pod, 'spec', 'nodeName') : '';
    if (
      request.operation === 'CREATE' &&
      pod &&
      nodeName &&
      annotationOf(pod, PORTS_ANNOTATION) !== undefined
    ) {
      const name = stringAt(pod, 'metadata', 'name') || request.name || '(generated name)';
      const { refused } = await nodeForGameServer(
        reads,
        nodeName,
        `${request.namespace ?? 'default'}/${name}`,
        'spec.nodeName',
      );
      if (refused) return refused;
    }
    return next(request);
  };
}

/**
 * Game servers are never placed on a node berth is removing. Once the scale pass has marked a
 * node `berth.dev/removal-started-at` (shared/scale/removal.ts), a binding of a berth game
 * server to it, or a game server created with `spec.nodeName` naming it, is refused: the
 * scheduler places the pod elsewhere, and a pod created on the node directly fails visibly
 * instead of being ended with the node. What was admitted before the mark was visible is caught
 * by the pass's last look at the node's pods, a commit window after the mark.
 */
import type { V1Node } from '@kubernetes/client-node';
import { PORTS_ANNOTATION } from '../hostports/spec.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { REMOVAL_STARTED_AT } from '../scale/names.js';
import type { AdmissionHandler } from './dispatch.js';
import { annotationOf, stringAt } from './identity.js';
import { type AdmissionVerdict, deny } from './response.js';

/**
 * The refusal for a game server headed to `node`, when berth is removing it; undefined to go on.
 * Pure: the callers read the node (the binding webhook already has).
 */
export function refusalForNodeBeingRemoved(
  node: V1Node | undefined,
  nodeName: string,
  pod: string,
): AdmissionVerdict | undefined {
  const startedAt = node?.metadata?.annotations?.[REMOVAL_STARTED_AT];
  if (startedAt === undefined) return undefined;
  return deny(
    409,
    `${pod}: node ${nodeName} is being removed by berth (${REMOVAL_STARTED_AT}: ${startedAt}); a game server may not be placed on it, choose another node`,
  );
}

/** `pods` CREATE: refuses a berth game server created with `spec.nodeName` on a node being removed. */
export function guardPodCreates(
  reads: Pick<ClusterApi, 'getNode'>,
  next: AdmissionHandler,
): AdmissionHandler {
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
      const refused = refusalForNodeBeingRemoved(
        await reads.getNode(nodeName),
        nodeName,
        `${request.namespace ?? 'default'}/${name}`,
      );
      if (refused) return refused;
    }
    return next(request);
  };
}

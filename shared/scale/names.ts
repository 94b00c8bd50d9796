/**
 * The labels and annotations the scale pass reads and writes. Berth's own annotations mark which
 * cordons it owns: a node cordoned without them is someone else's and is never touched.
 */

import { pointer } from '../admission/patch.js';

/** Label of game-server pods: the one the pod webhook sets, so the two can never drift apart. */
export { GAME_SERVER_LABEL } from '../hostports/patch.js';
/** RFC 3339 time berth cordoned the node; its presence makes the cordon berth's. */
export const CORDONED_AT = 'berth.dev/cordoned-at';
/**
 * RFC 3339 time berth committed to removing the node. Written (compare-and-swap) before the
 * instance is released, so a pass that dies half-way is finished by the next one.
 */
export const REMOVAL_STARTED_AT = 'berth.dev/removal-started-at';
/** Karpenter's opt-out of voluntary disruption; berth honours it on nodes. */
export const KARPENTER_DO_NOT_DISRUPT = 'karpenter.sh/do-not-disrupt';
/** Cluster Autoscaler's per-node opt-out of scale-down; berth honours it. */
export const SCALE_DOWN_DISABLED = 'cluster-autoscaler.kubernetes.io/scale-down-disabled';

/** The JSON Patch path of one of a node's annotations. */
export const annotationPath = (key: string): string => pointer('metadata', 'annotations', key);

/**
 * Which node roles may call which cluster's node IP API in a stack of several clusters. IAM lets
 * every granted role invoke the function URL; this is what keeps a role meant for one cluster out
 * of another's pools, where it could release a pod's address by its name and let it be handed to
 * a second pod. A role listed without a cluster is trusted by every cluster of the stack.
 */
import type { NodeCallers } from '../config/load.js';

/** Every cluster's own callers' key for the ones trusted by all. */
export const EVERY_CLUSTER = '*';

/** The account and name of an IAM role ARN (its path dropped: an assumed-role ARN has none). */
export function roleOf(arn: string): string | undefined {
  const match = /^arn:aws[a-z-]*:iam::(\d{12}):role\/(?:[\w+=,.@-]+\/)*([\w+=,.@-]+)$/.exec(arn);
  return match ? `${match[1]}/${match[2]}` : undefined;
}

/** The account and role name a caller's `arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION` names. */
function assumedRoleOf(arn: string): string | undefined {
  const match = /^arn:aws[a-z-]*:sts::(\d{12}):assumed-role\/([\w+=,.@-]+)\/[^/]+$/.exec(arn);
  return match ? `${match[1]}/${match[2]}` : undefined;
}

/**
 * Whether a caller (the SigV4 identity Lambda names for a function URL request, an assumed-role
 * ARN) may call a cluster's API: its role is listed for that cluster or for every cluster. No
 * list at all leaves the decision to IAM alone (a single-cluster stack). The listed roles are
 * read once, so a request costs one parse of its caller and a set lookup.
 */
export function nodeCallerCheck(
  callers: NodeCallers | undefined,
): (cluster: string, callerArn: string | undefined) => boolean {
  if (callers === undefined) return () => true;
  const rolesOf = (key: string) =>
    (callers[key] ?? []).flatMap((arn) => {
      const role = roleOf(arn);
      return role === undefined ? [] : [role];
    });
  const everyCluster = new Set(rolesOf(EVERY_CLUSTER));
  const byCluster = new Map(Object.keys(callers).map((key) => [key, new Set(rolesOf(key))]));
  return (cluster, callerArn) => {
    const role = callerArn === undefined ? undefined : assumedRoleOf(callerArn);
    if (role === undefined) return false;
    return everyCluster.has(role) || (byCluster.get(cluster)?.has(role) ?? false);
  };
}

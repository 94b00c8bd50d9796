/**
 * Host port quotas per namespace (`hostPortQuotas`), as a ResourceQuota caps NodePorts: the
 * ports a namespace holds are counted in one store item, taken before an allocation by one
 * conditional write that keeps the count within the quota, and given back when the allocation
 * fails or the pod's release happens (exactly once: only the release that deleted the record).
 * Namespaces without a quota cost nothing.
 */
import { HostPortQuotaError } from './errors.js';
import { isAllocated, PORTS_PATH, type PortSpec, portsOf } from './spec.js';
import type { HostPortStore, PodPortRecord } from './store.js';

/** The quota store calls. */
export type QuotaStore = Pick<HostPortStore, 'adjustNamespaceUse' | 'namespaceUse'>;

/** The host ports a pod's specs take from berth's ranges: a block's each, a TCPUDP port once. */
export function portsAsked(specs: readonly PortSpec[]): number {
  return specs.filter((s) => isAllocated(s.portPolicy)).reduce((sum, s) => sum + portsOf(s), 0);
}

/**
 * Runs `allocate` within the namespace's quota: takes the pod's ports from it first (a dry run
 * only checks), gives them back when `allocate` throws. Throws `HostPortQuotaError` when the
 * namespace would go over its quota.
 */
export async function withinQuota<T>(
  store: QuotaStore,
  quota: number | undefined,
  request: { readonly namespace: string; readonly asked: number; readonly dryRun: boolean },
  allocate: () => Promise<T>,
): Promise<T> {
  const { namespace, asked, dryRun } = request;
  if (quota === undefined || asked === 0) return allocate();
  const refuse = (used: number) =>
    new HostPortQuotaError(PORTS_PATH, namespace, quota, used, asked);
  // A pod larger than the whole quota: the conditional write below would pass on a namespace
  // never counted (its count absent).
  if (dryRun || asked > quota) {
    const used = await store.namespaceUse(namespace);
    if (used + asked > quota) throw refuse(used);
    return allocate();
  }
  const taken = await store.adjustNamespaceUse(namespace, asked, quota);
  if (!taken.applied) throw refuse(taken.used);
  try {
    return await allocate();
  } catch (error) {
    await store.adjustNamespaceUse(namespace, -asked);
    throw error;
  }
}

/** Gives a released record's ports back to its namespace's quota. */
export async function releaseQuota(
  store: QuotaStore,
  quota: number | undefined,
  record: PodPortRecord | undefined,
): Promise<void> {
  if (quota === undefined || !record || record.ports.length === 0) return;
  await store.adjustNamespaceUse(record.pod.namespace, -record.ports.length);
}

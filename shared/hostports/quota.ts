/**
 * Host port quotas per namespace (`hostPortQuotas`), as a ResourceQuota caps NodePorts: the
 * ports a namespace holds are counted in one store item, which is always the sum of the quota
 * units its pod records hold: a record's first write takes its units from the count in one
 * transaction, conditioned on the quota, and whoever deletes the record gives them back in the
 * same transaction (`HostPortStore`). So no crash, retry or repair pass can lose or double a
 * unit, and a namespace that holds nothing fits its whole quota. Namespaces without a quota cost
 * nothing.
 */
import { HostPortQuotaError, NamespaceQuotaFullError } from './errors.js';
import { isAllocated, PORTS_PATH, type PortSpec, portsOf } from './spec.js';
import type { HostPortStore, PodPortRecord } from './store.js';

/** The quota store calls. */
export type QuotaStore = Pick<HostPortStore, 'adjustNamespaceUse' | 'namespaceUse'>;

/** The host ports a pod's specs take from berth's ranges: a block's each, a TCPUDP port once. */
export function portsAsked(specs: readonly PortSpec[]): number {
  return specs.filter((s) => isAllocated(s.portPolicy)).reduce((sum, s) => sum + portsOf(s), 0);
}

/**
 * Runs `allocate`, which writes the pod's record with `quota` (its first write takes the units),
 * within the namespace's quota: one read refuses a pod the namespace has no room for before any
 * port is chosen (all a dry run does), and a record write that finds the room taken meanwhile is
 * refused the same way. Throws `HostPortQuotaError` when the namespace would go over its quota.
 */
export async function withinQuota<T>(
  store: QuotaStore,
  quota: number | undefined,
  request: { readonly namespace: string; readonly asked: number },
  allocate: () => Promise<T>,
): Promise<T> {
  const { namespace, asked } = request;
  if (quota === undefined || asked === 0) return allocate();
  const refuse = (used: number) =>
    new HostPortQuotaError(PORTS_PATH, namespace, quota, used, asked);
  const used = await store.namespaceUse(namespace);
  if (used + asked > quota) throw refuse(used);
  try {
    return await allocate();
  } catch (error) {
    if (error instanceof NamespaceQuotaFullError) throw refuse(error.used);
    throw error;
  }
}

/**
 * Gives back the ports of a released record written before records carried their quota units
 * (0.2.0 took them from the count apart from the record), as 0.2.0 did: after the delete, once
 * for the caller whose delete found the record, never below zero. A record carrying its units
 * gave them back with its delete: nothing to do.
 */
export async function releaseQuota(
  store: QuotaStore,
  quota: number | undefined,
  record: PodPortRecord | undefined,
): Promise<void> {
  if (quota === undefined || !record || record.quotaUnits !== undefined) return;
  if (record.ports.length === 0) return;
  await store.adjustNamespaceUse(record.pod.namespace, -record.ports.length);
}

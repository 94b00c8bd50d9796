/**
 * Reads the cluster's `ServiceCIDR`s and `IPAddress`es (`networking.k8s.io/v1`) into the shapes
 * of `../services/cluster-cidrs.ts`. Field names as the API reference gives them:
 * https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/service-cidr-v1/ and
 * https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/ip-address-v1/.
 */
import type { V1IPAddress, V1ServiceCIDR } from '@kubernetes/client-node';
import { type CidrBlock, parseCidr } from '../net/ip.js';
import type { ClusterApi, ListOptions } from './cluster-api.js';

/** One `ServiceCIDR` as berth reads it. */
export interface ClusterServiceCidr {
  readonly name: string;
  readonly cidrs: readonly CidrBlock[];
  /** Its `Ready` condition; a ServiceCIDR with none counts as ready, as the apiserver counts it. */
  readonly ready: boolean;
  /** `metadata.deletionTimestamp` is set: its finalizer keeps it while addresses remain. */
  readonly terminating: boolean;
}

/** One `IPAddress` as berth reads it: the IP and the Service it was allocated for. */
export interface ClusterIpAddress {
  readonly ip: string;
  /** `namespace/name` of the parent Service; undefined for a parent of another kind. */
  readonly service?: string;
  /** Epoch ms of `metadata.creationTimestamp`; undefined when absent. */
  readonly createdAt?: number;
}

/** The reads of the cluster's Service ranges, as `ClusterApi` offers them. */
export type ServiceCidrApi = Pick<ClusterApi, 'listServiceCidrs' | 'listIpAddresses'>;

/** One ServiceCIDR as berth reads it; CIDRs that do not parse are left out. */
export function readServiceCidr(object: V1ServiceCIDR): ClusterServiceCidr {
  const ready = object.status?.conditions?.find((condition) => condition.type === 'Ready');
  return {
    name: object.metadata?.name ?? '',
    cidrs: (object.spec?.cidrs ?? []).flatMap((text): CidrBlock[] => {
      const block = parseCidr(text);
      return block ? [block] : [];
    }),
    // No condition yet (no controller has set one) counts as ready, as the apiserver counts it.
    ready: ready === undefined || ready.status === 'True',
    terminating: object.metadata?.deletionTimestamp != null,
  };
}

/** One IPAddress as berth reads it: its name is the IP, its parent the Service it is for. */
export function readIpAddress(object: V1IPAddress): ClusterIpAddress {
  const parent = object.spec?.parentRef;
  const created = object.metadata?.creationTimestamp;
  return {
    ip: object.metadata?.name ?? '',
    ...(parent && (parent.group ?? '') === '' && parent.resource === 'services'
      ? { service: `${parent.namespace ?? 'default'}/${parent.name}` }
      : {}),
    ...(created ? { createdAt: new Date(created).getTime() } : {}),
  };
}

/** The cluster's ServiceCIDRs; undefined when it has none to offer (before 1.33). */
export async function clusterServiceCidrs(
  api: ServiceCidrApi,
): Promise<ClusterServiceCidr[] | undefined> {
  const listed = api.listServiceCidrs ? await api.listServiceCidrs() : undefined;
  return listed?.map(readServiceCidr);
}

/** Every IPAddress of the cluster, paged; none from a client that cannot list them. */
export async function clusterIpAddresses(
  api: ServiceCidrApi,
  options: ListOptions = {},
): Promise<ClusterIpAddress[]> {
  const addresses: ClusterIpAddress[] = [];
  if (!api.listIpAddresses) return addresses;
  for await (const object of api.listIpAddresses(options)) addresses.push(readIpAddress(object));
  return addresses;
}

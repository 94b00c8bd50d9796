/** Creating and removing pool records: where a node's ENIs go and what its instance type allows. */
import type { V1Node } from '@kubernetes/client-node';
import { type Ec2Instance, primaryInterfaceOf } from '../ec2/network.js';
import type { EniDeps } from './deps.js';
import { EniConflictError } from './errors.js';
import type { PoolRecord } from './model.js';
import { primaryEniRecord } from './pool-actions.js';

/** The node's allocatable pods (kubelet's maxPods), when it reports a whole number. */
export function allocatablePods(node: V1Node | undefined): number | undefined {
  const text = node?.status?.allocatable?.pods;
  const pods = text === undefined ? Number.NaN : Number(text);
  return Number.isInteger(pods) && pods > 0 ? pods : undefined;
}

/**
 * Writes a new pool for the node from its instance (type limits cached, subnet CIDR described)
 * and its allocatable pods, with the instance's primary ENI as its first ENI (what EC2 shows on
 * it now is another owner's). Answers undefined when another writer created it first, or when
 * EC2 does not know the type or the subnet.
 */
export async function createPool(
  deps: EniDeps,
  node: string,
  instance: Ec2Instance,
  maxPods: number | undefined,
  subnetCidrs?: ReadonlyMap<string, string>,
): Promise<PoolRecord | undefined> {
  const limits = (await deps.catalog.limits([instance.instanceType])).get(instance.instanceType);
  let cidr = subnetCidrs?.get(instance.subnetId);
  if (cidr === undefined) {
    const [subnet] = await deps.ec2.describeSubnets([instance.subnetId]);
    cidr = subnet?.cidr;
  }
  if (!limits || cidr === undefined) return undefined;
  const pool: PoolRecord = {
    node,
    instanceId: instance.instanceId,
    instanceType: instance.instanceType,
    availabilityZone: instance.availabilityZone,
    subnetId: instance.subnetId,
    subnetCidr: cidr,
    securityGroupIds: instance.securityGroupIds,
    maxInterfaces: limits.maxNetworkInterfaces,
    ipv4PerInterface: limits.ipv4PerInterface,
    prefixDelegation: limits.prefixDelegation,
    ...(maxPods === undefined ? {} : { maxPods }),
    createdAt: deps.now(),
    draining: false,
    version: 1,
  };
  try {
    await deps.store.putPool(pool, 0);
  } catch (error) {
    if (error instanceof EniConflictError) return undefined;
    throw error;
  }
  const primary = primaryInterfaceOf(instance);
  if (primary) {
    try {
      await deps.store.commit(node, [
        { put: primaryEniRecord(primary, new Set(), pool.createdAt), expectedVersion: 0 },
      ]);
    } catch (error) {
      // Recorded meanwhile (the pass adopts a pool's primary ENI too): theirs stands.
      if (!(error instanceof EniConflictError)) throw error;
    }
  }
  return pool;
}

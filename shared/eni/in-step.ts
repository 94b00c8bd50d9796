/**
 * Whether a pool is in step: its records agree with EC2 and the node's live pods, nothing is in
 * flight, and its plan is empty. The pass looks at every pool without its lease and takes the
 * lease (two writes, each a pool and a minute) only for a pool that is out of step; on a steady
 * fleet that is almost none. The look is deliberately stricter than reconciliation: anything it
 * is unsure of (a difference still inside its grace, an address of a pod that may just have
 * left) sends the pool down the leased path, where the graces decide.
 */
import {
  type Ec2InstanceInterface,
  type Ec2NetworkInterface,
  podAddressesOf,
} from '../ec2/network.js';
import { type EniRecord, foreignAddresses, type NodeState, type PoolRecord } from './model.js';
import type { PoolPlan } from './policy.js';

/** What the pass saw of one pool, outside the store. */
export interface PoolLook {
  readonly pool: PoolRecord;
  readonly state: NodeState;
  /** berth ENIs of the pool's instance as EC2 described them; undefined when Describe failed. */
  readonly interfaces: readonly Ec2NetworkInterface[] | undefined;
  /** The instance's primary ENI as DescribeInstances showed it. */
  readonly primary?: Ec2InstanceInterface;
  /** Live pods (`namespace/name`) bound to the node. */
  readonly livePods: ReadonlySet<string>;
  readonly plan: PoolPlan;
}

/** True when a leased pass over the pool would change nothing. Pure. */
export function poolInStep(look: PoolLook): boolean {
  const { pool, state, interfaces, livePods, plan } = look;
  if (pool.draining || state.intents.length > 0) return false;
  if (
    plan.assign.length > 0 ||
    plan.create.length > 0 ||
    plan.unassign.length > 0 ||
    plan.deleteEnis.length > 0
  ) {
    return false;
  }
  for (const ip of state.ips) {
    if (ip.state === 'draining') return false;
    if (ip.state === 'assigned' && (ip.pod === undefined || !livePods.has(ip.pod))) return false;
  }
  // Without EC2's view the pass reconciles nothing; the plan alone decides.
  if (interfaces === undefined) return true;
  const { primary } = look;
  const attached = new Map(
    interfaces
      .filter((eni) => eni.attachment?.instanceId === pool.instanceId)
      .map((eni): [string, Pick<Ec2NetworkInterface, 'secondaryIps' | 'ipv4Prefixes'>] => [
        eni.eniId,
        eni,
      ]),
  );
  // The primary ENI is the pool's too, once recorded; until then the pass adopts it.
  if (primary) {
    if (!state.enis.some((eni) => eni.primary && eni.eniId === primary.eniId)) return false;
    attached.set(primary.eniId, primary);
  }
  if (attached.size !== state.enis.length) return false;
  for (const eni of state.enis) {
    const inEc2 = attached.get(eni.eniId);
    if (!inEc2 || eni.state !== 'attached' || eni.mutatingAt !== 0) return false;
    const inStore = state.ips.filter((ip) => ip.eniId === eni.eniId).map((ip) => ip.ip);
    const seen = berthsShown(eni, inEc2);
    if (seen === undefined || seen.size !== inStore.length || inStore.some((ip) => !seen.has(ip))) {
      return false;
    }
  }
  return true;
}

/**
 * The addresses EC2 shows on the ENI that are berth's to record: all of them on berth's own ENIs,
 * those beyond another owner's on the primary ENI. Undefined when another owner's are no longer
 * all shown (the record of them is out of step).
 */
function berthsShown(
  eni: EniRecord,
  inEc2: Pick<Ec2NetworkInterface, 'secondaryIps' | 'ipv4Prefixes'>,
): Set<string> | undefined {
  const shown = new Set(podAddressesOf(inEc2).keys());
  const foreign = foreignAddresses(eni);
  for (const ip of foreign) if (!shown.delete(ip)) return undefined;
  return shown;
}

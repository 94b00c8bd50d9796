/**
 * A subnet marked out of addresses, looked at again for a pod that waits. The mark spares EC2
 * calls that would fail (`ENI_TIMINGS.subnetExhaustedMs`, as the VPC CNI backs off), but a
 * subnet's addresses come back while it stands: other tenants leave, other nodes give theirs
 * back. Holding every waiting pod to the whole mark made pods wait up to two minutes beside a
 * subnet with thousands of free addresses. So a pod's on-demand refill, once the mark is
 * `exhaustedRecheckMs` old, reads the subnet's free count with one DescribeSubnets (a Describe:
 * no mutating call, from the Describe budget): free addresses let this plan grow; none renews
 * the mark, so a subnet that stays empty is read at most once per recheck interval. Background
 * refills and the pass keep the whole mark.
 */
import type { EniDeps } from './deps.js';
import type { PoolRecord } from './model.js';
import { ENI_TIMINGS } from './policy.js';

/**
 * Whether a waiting pod's refill should read the subnet again: the mark stands, and was set (or
 * last renewed) at least the recheck interval ago. Marks are set `subnetExhaustedMs` ahead, so
 * that is when it was set.
 */
export function recheckDue(exhaustedUntil: number, now: number): boolean {
  const markedAt = exhaustedUntil - ENI_TIMINGS.subnetExhaustedMs;
  return exhaustedUntil > now && now - markedAt >= ENI_TIMINGS.exhaustedRecheckMs;
}

/**
 * Whether the pool may grow although its subnet is marked exhausted until `exhaustedUntil`:
 * only for a waiting pod, only once the recheck is due, and only if EC2 counts free addresses
 * in the subnet now. A failed read keeps the mark's answer (no growth).
 */
export async function mayGrowDespiteMark(
  deps: EniDeps,
  pool: PoolRecord,
  exhaustedUntil: number,
  now: number,
  waiting: number,
): Promise<boolean> {
  if (waiting === 0 || !recheckDue(exhaustedUntil, now)) return false;
  let available: number;
  try {
    const [subnet] = await deps.ec2.describeSubnets([pool.subnetId]);
    available = subnet?.availableIpCount ?? 0;
  } catch {
    return false;
  }
  if (available > 0) return true;
  await deps.store.markSubnetShort(pool.subnetId, 'addresses', now + ENI_TIMINGS.subnetExhaustedMs);
  return false;
}

/**
 * Release as a handshake, for a pool whose node hands its addresses out itself. Pure.
 *
 * berth cannot see which free address a container on the node took since the node's last
 * report, so it never takes one back on its own: the pass marks what it wants back (`wanted`),
 * the node stops handing those out and returns the ones no container holds, and only returned
 * addresses go back to EC2 (a prefix only with all 16 of its addresses returned, an ENI only
 * with every address on it returned). What the node never returns stays assigned. Cilium's
 * operator and agent agree on a release the same way, through the `release-ips` status of the
 * CiliumNode (cilium/cilium pkg/ipam/node.go and pkg/ipam/crd.go at v1.16.0: marked-for-release,
 * ready-for-release, released).
 */
import type { IpRecord, PoolRecord } from '../model.js';
import type { PoolPlan } from '../policy.js';

/** A plan cut down to what the node returned, and the marks asking for the rest. */
export interface HandshakePlan {
  readonly plan: PoolPlan;
  /** Free records to mark wanted (each written at its version). */
  readonly marks: readonly IpRecord[];
}

/** `plan` as the pool may carry it out: unchanged unless its node hands its addresses out. */
export function gateRelease(
  pool: PoolRecord,
  plan: PoolPlan,
  ips: readonly IpRecord[],
  now: number,
): HandshakePlan {
  return pool.handout === 'node' ? handshake(plan, ips, now) : { plan, marks: [] };
}

/** `plan` for a pool its node hands out, with `ips` as stored, at `now`. */
export function handshake(plan: PoolPlan, ips: readonly IpRecord[], now: number): HandshakePlan {
  const byIp = new Map(ips.map((ip) => [ip.ip, ip]));
  const asked = new Set(plan.unassign.flatMap((u) => u.ips));
  for (const eniId of plan.deleteEnis) {
    for (const ip of ips) if (ip.eniId === eniId) asked.add(ip.ip);
  }
  const marks = [...asked].flatMap((address) => {
    const ip = byIp.get(address);
    return ip?.state === 'free' && ip.wantedSince === undefined && ip.returnedAt === undefined
      ? [{ ...ip, wantedSince: now, version: ip.version + 1 }]
      : [];
  });
  // Unassigned by ENI; a prefix only with all 16 of its addresses returned (`wholeUnits`).
  const returned = ips.filter((ip) => ip.state === 'free' && ip.returnedAt !== undefined);
  const byEni = new Map<string, string[]>();
  for (const ip of returned) byEni.set(ip.eniId, [...(byEni.get(ip.eniId) ?? []), ip.ip]);
  // An ENI goes whole once every address on it came back: one detach and delete.
  const deleteEnis = plan.deleteEnis.filter((eniId) =>
    ips.every((ip) => ip.eniId !== eniId || ip.returnedAt !== undefined),
  );
  const unassign = [...byEni]
    .filter(([eniId]) => !deleteEnis.includes(eniId))
    .map(([eniId, addresses]) => ({ eniId, ips: addresses }));
  return { plan: { ...plan, unassign, deleteEnis }, marks };
}

/**
 * Reconciles one pool's records with EC2 (one Describe per pass, shared by every pool) and with
 * the pods that live on the node. Everything that disagrees is acted on only after a named grace
 * (`ENI_TIMINGS`), because Describe lags mutations and a writer may sit between its EC2 call and
 * its store write. "Already gone" is success. Callers hold the pool's lease.
 *
 * On berth's own ENIs every address is berth's, so one the store does not know is a leak of
 * berth's, given back. The instance's primary ENI is shared: only what berth's records hold is
 * berth's. Another owner's address there (`foreign`, such as one the VPC CNI left) is never
 * given back, adopted or handed out, so an address is never held by two owners; only while an
 * assign of berth's there may have landed unseen (its mark still set) is an unknown address
 * berth's own.
 */
import {
  BERTH_TAGS,
  type Ec2InstanceInterface,
  type Ec2NetworkInterface,
  IPV4_PREFIX_SIZE,
  podAddressesOf,
  tagValue,
} from '../ec2/network.js';
import type { EniDeps } from './deps.js';
import { EniConflictError } from './errors.js';
import type { EniRecord, IpRecord, NodeState, PoolRecord } from './model.js';
import { ENI_TIMINGS } from './policy.js';
import {
  type ActionTally,
  attachedEniWrites,
  completeIntent,
  deviceIndexes,
  finishEniDelete,
  finishUnassign,
  giveBack,
  noteFailure,
  primaryEniRecord,
  unrecordedUnits,
  wholeUnits,
} from './pool-actions.js';
import { releaseRecord } from './service.js';
import type { NodeWrite } from './store.js';

/** What reconciliation repaired. */
export interface ReconcileTally {
  intentsRecovered: number;
  enisAdopted: number;
  /** Primary ENIs taken into pools recorded before berth used them. */
  primaryEnisAdopted: number;
  /** Records of ENIs or addresses EC2 no longer has, dropped. */
  recordsDropped: number;
  /** Of those, addresses a pod still held: each gets a Warning Event on its pod. */
  podIpsLost: number;
  /** Addresses (prefixes count 16) EC2 has on a berth ENI but the store does not know, unassigned. */
  unknownIpsUnassigned: number;
  /** Unassigns and ENI deletes a crash left half done, finished. */
  drainsFinished: number;
  /** Addresses held for pods no longer on the node, released. */
  podsReleased: number;
}

/** A zeroed tally. */
export function newReconcileTally(): ReconcileTally {
  return {
    intentsRecovered: 0,
    enisAdopted: 0,
    primaryEnisAdopted: 0,
    recordsDropped: 0,
    podIpsLost: 0,
    unknownIpsUnassigned: 0,
    drainsFinished: 0,
    podsReleased: 0,
  };
}

/** What the pass saw, for one pool. */
export interface PoolObservation {
  /** berth-tagged ENIs attached to the pool's instance or tagged with it. */
  readonly interfaces: readonly Ec2NetworkInterface[];
  /** The instance's primary ENI as DescribeInstances showed it; undefined when not shown. */
  readonly primary?: Ec2InstanceInterface;
  /** Live pods (`namespace/name`) bound to the node; undefined when unknown (skip pod checks). */
  readonly livePods?: ReadonlySet<string>;
}

/** The epoch ms in an ENI's created-at tag, if it has a valid one. */
export function taggedCreatedAt(eni: Ec2NetworkInterface): number | undefined {
  const text = tagValue(eni.tags, BERTH_TAGS.createdAt);
  const at = text === undefined ? Number.NaN : Date.parse(text);
  return Number.isNaN(at) ? undefined : at;
}

/** Brings one pool's records in line with EC2 and the live pods. */
export async function reconcilePool(
  deps: EniDeps,
  pool: PoolRecord,
  state: NodeState,
  seen: PoolObservation,
  actions: ActionTally,
  tally: ReconcileTally,
): Promise<void> {
  const now = deps.now();
  const grace = ENI_TIMINGS.reconcileGraceMs;
  const live = new Map(seen.interfaces.map((eni) => [eni.eniId, eni]));

  const indexes = deviceIndexes(deps, pool, state);
  for (const intent of state.intents) {
    if (now - intent.createdAt < ENI_TIMINGS.intentGraceMs || actions.budgetSpent) continue;
    try {
      await completeIntent(deps, pool, intent, actions, indexes);
      tally.intentsRecovered++;
    } catch (error) {
      await noteFailure(deps, pool, actions, 'RecoverEniCreation', error);
    }
  }

  for (const eni of state.enis) {
    const ips = state.ips.filter((ip) => ip.eniId === eni.eniId);
    const inEc2 = live.get(eni.eniId);
    const attachedHere = inEc2?.attachment?.instanceId === pool.instanceId;
    try {
      if (eni.primary) {
        // It never leaves its instance: a look that does not show it shows nothing to act on.
        if (seen.primary?.eniId === eni.eniId) {
          await reconcileAddresses(deps, pool, eni, ips, seen.primary, actions, tally);
        }
      } else if (eni.state === 'detaching') {
        await finishEniDelete(deps, pool, eni, ips, attachedHere, actions);
        tally.drainsFinished++;
      } else if (!inEc2 || !attachedHere) {
        if (now - Math.max(eni.createdAt, eni.mutatingAt) >= grace) {
          await dropRecords(deps, pool, ips, tally, eni);
          tally.recordsDropped += 1 + ips.length;
        }
      } else {
        await reconcileAddresses(deps, pool, eni, ips, inEc2, actions, tally);
      }
    } catch (error) {
      await noteFailure(deps, pool, actions, 'ReconcileEni', error, eni.eniId);
    }
  }

  // A pool recorded before berth used the primary ENI takes it in (a draining pool grows no more).
  if (seen.primary && !pool.draining && !state.enis.some((eni) => eni.primary)) {
    const recorded = new Set(state.ips.map((ip) => ip.ip));
    try {
      await deps.store.commit(pool.node, [
        { put: primaryEniRecord(seen.primary, recorded, now), expectedVersion: 0 },
      ]);
      tally.primaryEnisAdopted++;
    } catch (error) {
      if (!(error instanceof EniConflictError)) throw error;
    }
  }

  const known = new Set(state.enis.map((eni) => eni.eniId));
  for (const eni of seen.interfaces) {
    if (known.has(eni.eniId) || eni.attachment?.instanceId !== pool.instanceId) continue;
    const createdAt = taggedCreatedAt(eni) ?? 0;
    if (now - createdAt < ENI_TIMINGS.adoptAfterMs) continue;
    // Attached here by berth, unknown to the store: a crash between attach and the store write.
    try {
      await deps.store.commit(pool.node, attachedEniWrites(eni, eni.attachment, createdAt, now));
      if (!eni.attachment.deleteOnTermination) {
        await deps.ec2.setDeleteOnTermination({
          eniId: eni.eniId,
          attachmentId: eni.attachment.attachmentId,
        });
      }
      tally.enisAdopted++;
    } catch (error) {
      if (!(error instanceof EniConflictError)) {
        await noteFailure(deps, pool, actions, 'AdoptEni', error, eni.eniId);
      }
    }
  }

  if (seen.livePods) {
    for (const ip of state.ips) {
      if (ip.state !== 'assigned' || ip.pod === undefined || seen.livePods.has(ip.pod)) continue;
      if (now - (ip.assignedAt ?? 0) < grace) continue;
      try {
        await releaseRecord(deps, pool.node, ip, now);
        tally.podsReleased++;
      } catch (error) {
        if (!(error instanceof EniConflictError)) {
          await noteFailure(deps, pool, actions, 'ReleaseLeakedIp', error, ip.eniId);
        }
      }
    }
  }
}

/** One ENI's addresses: the store's view against EC2's. */
async function reconcileAddresses(
  deps: EniDeps,
  pool: PoolRecord,
  eni: EniRecord,
  ips: readonly IpRecord[],
  inEc2: Pick<Ec2NetworkInterface, 'secondaryIps' | 'ipv4Prefixes'>,
  actions: ActionTally,
  tally: ReconcileTally,
): Promise<void> {
  const now = deps.now();
  const grace = ENI_TIMINGS.reconcileGraceMs;
  const ec2Ips = podAddressesOf(inEc2);
  const gone = ips.filter((ip) => !ec2Ips.has(ip.ip) && now - ip.createdAt >= grace);
  if (gone.length > 0) {
    await dropRecords(deps, pool, gone, tally);
    tally.recordsDropped += gone.length;
  }
  const stuckIps = ips.filter(
    (ip) => ip.state === 'draining' && ec2Ips.has(ip.ip) && now - (ip.drainingSince ?? 0) >= grace,
  );
  // A prefix goes back only if every one of its records is draining.
  const stuck = wholeUnits(
    ips.filter((ip) => ec2Ips.has(ip.ip)),
    new Set(stuckIps.map((ip) => ip.ip)),
  );
  if (stuck.length > 0 && !actions.budgetSpent) {
    await finishUnassign(deps, pool, eni.eniId, stuck, actions);
    tally.drainsFinished++;
  }
  if (now - eni.mutatingAt < grace || actions.budgetSpent) return;
  // Unknown to the store: single addresses, and prefixes none of whose addresses it records
  // (a prefix with any recorded address is berth's, and is never given back from here).
  const unrecorded = unrecordedUnits(inEc2, new Set(ips.map((ip) => ip.ip)));
  if (eni.primary) {
    await reconcilePrimary(deps, pool, eni, inEc2, unrecorded, tally);
    return;
  }
  await giveBack(deps, eni.eniId, unrecorded);
  tally.unknownIpsUnassigned +=
    unrecorded.ips.length + unrecorded.prefixes.length * IPV4_PREFIX_SIZE;
}

/**
 * The primary ENI's unrecorded addresses. With no assign of berth's there in flight (its mark
 * clear) they are all another owner's: recorded as `foreign`, and what that owner gave back
 * since is dropped from it. With a mark past its grace, an assign of berth's landed unseen:
 * what it left beyond the foreign ones is given back, and the mark cleared.
 */
async function reconcilePrimary(
  deps: EniDeps,
  pool: PoolRecord,
  eni: EniRecord,
  inEc2: Pick<Ec2NetworkInterface, 'secondaryIps' | 'ipv4Prefixes'>,
  unrecorded: { readonly ips: readonly string[]; readonly prefixes: readonly string[] },
  tally: ReconcileTally,
): Promise<void> {
  const shown = new Set([...inEc2.secondaryIps, ...inEc2.ipv4Prefixes]);
  const before = eni.foreign ?? [];
  const kept = before.filter((unit) => shown.has(unit));
  const foreign = new Set(before);
  const landed = {
    ips: unrecorded.ips.filter((ip) => !foreign.has(ip)),
    prefixes: unrecorded.prefixes.filter((prefix) => !foreign.has(prefix)),
  };
  let next: EniRecord;
  if (eni.mutatingAt === 0) {
    const found = [...landed.ips, ...landed.prefixes];
    if (found.length === 0 && kept.length === before.length) return;
    next = { ...eni, foreign: [...kept, ...found], version: eni.version + 1 };
  } else {
    await giveBack(deps, eni.eniId, landed);
    tally.unknownIpsUnassigned += landed.ips.length + landed.prefixes.length * IPV4_PREFIX_SIZE;
    next = { ...eni, foreign: kept, mutatingAt: 0, version: eni.version + 1 };
  }
  try {
    await deps.store.commit(pool.node, [{ put: next, expectedVersion: eni.version }]);
  } catch (error) {
    // An assign marked it meanwhile: the next pass looks again.
    if (!(error instanceof EniConflictError)) throw error;
  }
}

/**
 * Drops records of addresses (and optionally their ENI) that EC2 no longer has. An address a pod still held is not dropped silently: the pod gets a Warning Event,
 * since it keeps using an address its node no longer has until it restarts.
 */
async function dropRecords(
  deps: EniDeps,
  pool: PoolRecord,
  ips: readonly IpRecord[],
  tally: ReconcileTally,
  eni?: EniRecord,
): Promise<void> {
  const writes: NodeWrite[] = [
    ...(eni ? [{ delete: { kind: 'eni' as const, id: eni.eniId } }] : []),
    ...ips.map((ip): NodeWrite => ({ delete: { kind: 'ip', id: ip.ip } })),
  ];
  await deps.store.commit(pool.node, writes);
  for (const ip of ips) {
    if (ip.state !== 'assigned' || !ip.pod) continue;
    tally.podIpsLost++;
    const [namespace = '', name = ''] = ip.pod.split('/');
    await deps.cluster
      .createEvent({
        involvedObject: { kind: 'Pod', namespace, name },
        type: 'Warning',
        reason: 'PodIPLost',
        message: `${ip.ip} was removed from ${ip.eniId} outside berth; the pod keeps an address its node no longer has: restart it`,
        component: 'berth-eni',
      })
      // The record is gone either way; an Event that could not be written is only a lost notice.
      .catch(() => undefined);
  }
}

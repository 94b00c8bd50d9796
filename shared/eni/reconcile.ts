/**
 * Reconciles one pool's records with EC2 (one Describe per pass, shared by every pool) and with
 * the pods that live on the node. Everything that disagrees is acted on only after a named grace
 * (`ENI_TIMINGS`), because Describe lags mutations and a writer may sit between its EC2 call and
 * its store write. "Already gone" is success. Callers hold the pool's lease.
 */
import {
  BERTH_TAGS,
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
  wholeUnits,
} from './pool-actions.js';
import { releaseRecord } from './service.js';
import type { NodeWrite } from './store.js';

/** What reconciliation repaired. */
export interface ReconcileTally {
  intentsRecovered: number;
  enisAdopted: number;
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
      if (eni.state === 'detaching') {
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
  inEc2: Ec2NetworkInterface,
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
  const known = new Set(ips.map((ip) => ip.ip));
  const recordedPrefixes = new Set(ips.flatMap((ip) => ec2Ips.get(ip.ip) ?? []));
  const unknown = inEc2.secondaryIps.filter((ip) => !known.has(ip));
  const unknownPrefixes = inEc2.ipv4Prefixes.filter((prefix) => !recordedPrefixes.has(prefix));
  await giveBack(deps, eni.eniId, { ips: unknown, prefixes: unknownPrefixes });
  tally.unknownIpsUnassigned += unknown.length + unknownPrefixes.length * IPV4_PREFIX_SIZE;
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

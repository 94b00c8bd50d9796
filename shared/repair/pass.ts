/**
 * One repair pass: under a lease, read the store's view first (every
 * block of every configured range, the owner records, the leak ledger), then list every Service
 * and Pod (paged), decide (pure: `exclusive-diff.ts`, `host-port-diff.ts`), then write, each
 * write conditional on what the snapshot read. Writes run in an order that a crash at any point
 * leaves repairable by the next pass: record intents, then values taken, then values freed, then
 * record cleanup, then the leak ledger. Only a pass that got that far advances a leak counter.
 * Events go to live objects last, and their failures never fail the pass.
 */

import { claimKey, ExclusiveAllocator, rangeKey } from '../allocation/allocator.js';
import { type Claim, type OwnerRecord, OwnerVersionConflictError } from '../allocation/store.js';
import { forEachBounded } from '../concurrency/bounded.js';
import { recordHostPorts, releaseHostPorts } from '../hostports/allocator.js';
import { AllocationIdTakenError } from '../hostports/errors.js';
import { releaseQuota } from '../hostports/quota.js';
import type { PodPortRecord } from '../hostports/store.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import {
  type ClusterIpAddress,
  type ClusterServiceCidr,
  clusterIpAddresses,
  clusterServiceCidrs,
} from '../k8s/service-cidrs.js';
import { type Lease, type LeasedRun, withLease } from '../lease/lease.js';
import { lastBlockOf, type Offset, offsetAt } from '../net/offset.js';
import type { ValueRange } from '../net/value-range.js';
import {
  ipAddressDrift,
  type ServiceCidrReport,
  type ServiceCidrState,
  serviceCidrReport,
} from '../services/cluster-cidrs.js';
import { settleTiming } from '../settle/policy.js';
import { settleStep } from '../settle/step.js';
import { RepairIncompleteError, type RepairStage } from './errors.js';
import {
  countFindings,
  diffExclusive,
  type ExclusivePlan,
  type ExclusiveSnapshot,
  mergeClaims,
  OWNER_LEAK_PREFIX,
  STALE_CLAIM_PREFIX,
  VALUE_LEAK_PREFIX,
} from './exclusive-diff.js';
import { type Finding, REPAIR_EVENT_COMPONENT, REPAIR_REASONS } from './findings.js';
import {
  diffHostPorts,
  type ForeignReading,
  HOST_PORT_LEAK_PREFIX,
  type HostPortPlan,
  type HostPortSnapshot,
  type PodReading,
  readForeignPod,
  readPod,
  toHostPortRange,
} from './host-port-diff.js';
import { type LeakCounter, type LeakLedger, ledgerChanges } from './ledger.js';
import { readService, type ServiceReading } from './live.js';
import type { HostPortRepairStore, RepairAllocationStore } from './store.js';

/** The lease that makes passes exclusive across Lambdas, CLI runs and local timers. */
export const REPAIR_LEASE_NAME = 'repair';
/** Items per Kubernetes list page. */
export const DEFAULT_REPAIR_PAGE_SIZE = 500;
/** Store writes and Events in flight at once. */
export const DEFAULT_REPAIR_CONCURRENCY = 16;
/** Long enough for a pass over a large cluster; short enough that a dead holder costs ~2 passes. */
export const DEFAULT_REPAIR_LEASE_TTL_MS = 5 * 60_000;
/** Findings listed one by one in the summary (the counts are always complete). */
const MAX_NOTES = 100;
/** A release still waiting this long after its admission lost its settle task. */
const LOST_SETTLE_AFTER_MS = 2 * 60_000;
/** `settle.delaySeconds` when the caller does not pass the config's. */
const DEFAULT_SETTLE_DELAY_SECONDS = 5;
/** Attempts at a versioned owner-record write that keeps losing to concurrent writers. */
const RECORD_ATTEMPTS = 4;

/** The configured ranges, as `ValueRange`s. */
export interface RepairRanges {
  /** One per configured family. */
  readonly clusterIps: readonly ValueRange[];
  readonly nodePorts: ValueRange;
  /** Named host port ranges (kind `hostPort`). */
  readonly hostPorts: readonly ValueRange[];
}

/** What one pass talks to. */
export interface RepairDeps {
  readonly cluster: ClusterApi;
  readonly allocations: RepairAllocationStore;
  /** Host port records and counts; host ports are not repaired when absent. */
  readonly hostPorts?: HostPortRepairStore;
  readonly ledger: LeakLedger;
  readonly lease: Lease;
  /** Epoch ms. */
  readonly now: () => number;
  /** Who runs the pass (a Lambda request id, `cli-<host>-<pid>`): the lease holder. */
  readonly holder: string;
}

/** How to run the pass. */
export interface RepairOptions {
  readonly ranges: RepairRanges;
  /** `repair.leakGracePasses`: a leak is freed on this many consecutive passes finding it. */
  readonly leakGracePasses: number;
  readonly pageSize?: number;
  readonly concurrency?: number;
  readonly leaseTtlMs?: number;
  /** `settle.delaySeconds`, for finishing releases whose settle task was lost. */
  readonly settleDelaySeconds?: number;
  /**
   * `hostPortQuotas`: a released record written before records carried their quota units
   * (0.2.0) gives its ports back to its namespace's count after its delete, as then.
   */
  readonly hostPortQuotas?: Readonly<Record<string, number>>;
  /**
   * Takes each reading of the cluster's ServiceCIDRs and answers the ranges berth keeps (the
   * runtime's gate, so admission follows what the pass read); without it, `ranges.clusterIps`.
   */
  readonly serviceCidrs?: {
    apply(
      cluster: readonly ClusterServiceCidr[] | undefined,
      addresses?: readonly ClusterIpAddress[],
    ): ServiceCidrState;
  };
}

/** What the pass found of the cluster's ServiceCIDRs and IPAddresses. */
export interface RepairServiceCidrs extends ServiceCidrReport {
  /** IPs held on one side only (the first ones; the counts are in `findings`). */
  readonly drift: readonly {
    readonly ip: string;
    readonly heldBy: string;
    readonly holder: string;
  }[];
}

/** What a pass did; `findings`, `released`, `recorded`, `durationMs` are what the CLI prints. */
export interface RepairSummary {
  /** Reason → count; leaks (`*Leaked`) count values actually freed. */
  readonly findings: Record<string, number>;
  readonly released: number;
  readonly recorded: number;
  readonly durationMs: number;
  /** Set when another holder had the lease, so this pass did nothing. */
  readonly skipped?: string;
  /** Writes not made because the store changed since the snapshot; the next pass looks again. */
  readonly conflicts: number;
  readonly events: { readonly created: number; readonly failed: number };
  /** The first findings one by one, for the caller's log. */
  readonly notes: readonly Finding[];
  /** The cluster's ServiceCIDRs and IPAddresses, when it has them (Kubernetes 1.33+). */
  readonly serviceCidrs?: RepairServiceCidrs;
  /** Suspected leaks still counting down: seen on `passes` consecutive passes of `grace`. */
  readonly countdowns: readonly {
    readonly key: string;
    readonly holder: string;
    readonly passes: number;
    readonly grace: number;
  }[];
}

/** Runs one repair pass. Throws `RepairIncompleteError` when the pass could not complete. */
export async function runRepairPass(
  deps: RepairDeps,
  options: RepairOptions,
): Promise<RepairSummary> {
  const started = deps.now();
  let acquired = false;
  let run: LeasedRun<RepairSummary>;
  try {
    run = await withLease(
      deps.lease,
      {
        name: REPAIR_LEASE_NAME,
        holder: deps.holder,
        ttlMs: options.leaseTtlMs ?? DEFAULT_REPAIR_LEASE_TTL_MS,
      },
      (renew) => {
        acquired = true;
        return repairUnderLease(deps, options, started, renew);
      },
    );
  } catch (error) {
    // Only a failed acquisition is a snapshot failure; the pass's own errors carry their stage.
    if (acquired || error instanceof RepairIncompleteError) throw error;
    throw new RepairIncompleteError('snapshot', { recorded: 0, released: 0 }, { cause: error });
  }
  if (run.ran) return run.value;
  return {
    findings: {},
    released: 0,
    recorded: 0,
    durationMs: deps.now() - started,
    skipped: `lease held by ${run.holder} until ${new Date(run.expiresAtMs).toISOString()}`,
    conflicts: 0,
    events: { created: 0, failed: 0 },
    notes: [],
    countdowns: [],
  };
}

/** Runs `step`, turning any failure into a `RepairIncompleteError` of `stage`. */
async function stage<T>(
  name: RepairStage,
  progress: Progress,
  step: () => Promise<T> | T,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof RepairIncompleteError) throw error;
    throw new RepairIncompleteError(name, progress, { cause: error });
  }
}

/** Running totals of the write stage. */
interface Progress {
  recorded: number;
  released: number;
  conflicts: number;
  /** Leaks actually freed, for the summary counts. */
  readonly freed: Finding[];
  /** Findings on live objects that only the writes could confirm. */
  readonly confirmed: Finding[];
}

async function repairUnderLease(
  deps: RepairDeps,
  options: RepairOptions,
  started: number,
  renew: () => Promise<unknown>,
): Promise<RepairSummary> {
  const progress: Progress = {
    recorded: 0,
    released: 0,
    conflicts: 0,
    freed: [],
    confirmed: [],
  };
  const pageSize = options.pageSize ?? DEFAULT_REPAIR_PAGE_SIZE;
  const concurrency = options.concurrency ?? DEFAULT_REPAIR_CONCURRENCY;
  const hostPorts = deps.hostPorts;

  // 0. The cluster's ServiceCIDRs decide which cluster IP ranges there are (followed ones too).
  const cidrs = await stage('list', progress, async () => {
    if (!options.serviceCidrs) return undefined;
    const cluster = await clusterServiceCidrs(deps.cluster);
    return { cluster, state: options.serviceCidrs.apply(cluster) };
  });
  const clusterIps = cidrs?.state.ranges ?? options.ranges.clusterIps;
  const exclusiveRanges = [...clusterIps, options.ranges.nodePorts];

  // 1. The store's view, before anything is listed: what is allocated later is not in it.
  const { exclusive, host, counters } = await stage('snapshot', progress, async () => {
    const [exclusiveView, hostView, ledger] = await Promise.all([
      readExclusiveSnapshot(deps.allocations, exclusiveRanges),
      hostPorts ? readHostPortSnapshot(hostPorts, options.ranges.hostPorts) : undefined,
      deps.ledger.list(),
    ]);
    return { exclusive: exclusiveView, host: hostView, counters: ledger };
  });

  // 2. Every Service and Pod, paged.
  const listedAt = deps.now();
  const { services, pods, foreign } = await stage('list', progress, async () => {
    const serviceRanges = { clusterIps, nodePorts: options.ranges.nodePorts };
    const listed: ServiceReading[] = [];
    for await (const service of deps.cluster.listServices({ pageSize })) {
      listed.push(readService(service, serviceRanges));
    }
    const readings: PodReading[] = [];
    const foreign: ForeignReading[] = [];
    if (host) {
      for await (const pod of deps.cluster.listPods({ pageSize })) {
        const reading = readPod(pod, options.ranges.hostPorts);
        if (reading) readings.push(reading);
        const outside = reading ? undefined : readForeignPod(pod, options.ranges.hostPorts);
        if (outside) foreign.push(outside);
      }
    }
    return { services: listed, pods: readings, foreign };
  });
  // The apiserver's own record of every cluster IP, listed after the store was read.
  const addresses = await stage('list', progress, async () =>
    cidrs?.cluster && deps.cluster.listIpAddresses
      ? clusterIpAddresses(deps.cluster, { pageSize })
      : undefined,
  );
  // A cluster without ServiceCIDRs (before 1.33) has nothing to report: its ranges are flags.
  const cidrReport = cidrs?.cluster
    ? serviceCidrsFound(
        options.serviceCidrs?.apply(cidrs.cluster, addresses ?? servedAddresses(services)) ??
          cidrs.state,
        exclusive,
        addresses,
        started,
      )
    : undefined;

  // 3. Decide.
  const now = deps.now();
  const grace = options.leakGracePasses;
  const { exclusivePlan, hostPlan } = await stage('decide', progress, () => {
    const exclusivePlan = diffExclusive({
      snapshot: exclusive,
      services,
      counters,
      grace,
      now,
      listedAt,
    });
    const hostPlan = host
      ? diffHostPorts({ snapshot: host, pods, counters, grace, now, listedAt, foreign })
      : undefined;
    return { exclusivePlan, hostPlan };
  });

  // 4. Write, on a lease that is still ours.
  await stage('write', progress, async () => {
    await renew();
    await writeExclusive(
      deps.allocations,
      exclusive,
      exclusivePlan,
      { concurrency, now },
      progress,
    );
    if (hostPorts && host && hostPlan) {
      await renew();
      await writeHostPorts(
        hostPorts,
        hostPlan,
        { concurrency, quotas: options.hostPortQuotas },
        progress,
      );
    }
    const kept: LeakCounter[] = [...exclusivePlan.counters, ...(hostPlan?.counters ?? [])];
    const prefixes = [
      VALUE_LEAK_PREFIX,
      OWNER_LEAK_PREFIX,
      STALE_CLAIM_PREFIX,
      ...(hostPlan ? [HOST_PORT_LEAK_PREFIX] : []),
    ];
    await renew();
    await deps.ledger.apply(ledgerChanges(counters, kept, prefixes));
  });

  // 5. Releases whose settle task was lost (a container died, the queue dropped it) are finished
  // here, by the settle step itself: freed only when the stored object no longer carries them.
  await stage('write', progress, async () => {
    const settle = {
      allocator: new ExclusiveAllocator({
        store: deps.allocations,
        random: Math.random,
        now: deps.now,
      }),
      cluster: deps.cluster,
      ranges: { clusterIps, nodePorts: options.ranges.nodePorts },
      timing: settleTiming(options.settleDelaySeconds ?? DEFAULT_SETTLE_DELAY_SECONDS),
      now: deps.now,
    };
    const stale = [...exclusive.owners.values()].filter((record) =>
      (record.releasing ?? []).some((claim) => claim.since <= now - LOST_SETTLE_AFTER_MS),
    );
    await forEachBounded(stale, concurrency, async (record) => {
      const since = Math.min(...(record.releasing ?? []).map((claim) => claim.since));
      const outcome = await settleStep(settle, {
        id: record.id,
        reason: 'release',
        admittedAt: since,
        attempt: 0,
      });
      progress.released += outcome.freed;
    });
  });

  // 6. Events on live objects; a failed Event is counted, never fatal.
  const findings = [
    ...exclusivePlan.findings,
    ...progress.confirmed,
    ...(hostPlan?.findings ?? []),
  ];
  const events = { created: 0, failed: 0 };
  const onObjects = findings.filter((f) => f.object !== undefined);
  await forEachBounded(onObjects, concurrency, async (finding) => {
    const object = finding.object;
    if (!object) return;
    try {
      await deps.cluster.createEvent({
        involvedObject: {
          kind: object.kind,
          namespace: object.namespace,
          name: object.name,
          ...(object.uid ? { uid: object.uid } : {}),
        },
        type: 'Warning',
        reason: finding.reason,
        message: finding.message,
        component: REPAIR_EVENT_COMPONENT,
      });
      events.created++;
    } catch {
      events.failed++;
    }
  });

  const all = [...findings, ...progress.freed, ...(cidrReport?.findings ?? [])];
  return {
    ...(cidrReport ? { serviceCidrs: cidrReport.report } : {}),
    findings: countFindings(all),
    released: progress.released,
    recorded: progress.recorded,
    durationMs: deps.now() - started,
    conflicts: progress.conflicts,
    events,
    notes: all.slice(0, MAX_NOTES),
    countdowns: [...exclusivePlan.counters, ...(hostPlan?.counters ?? [])]
      .slice(0, MAX_NOTES)
      .map(({ key, holder, passes }) => ({ key, holder, passes, grace })),
  };
}

/** The cluster IPs live Services carry, as IPAddresses would name them (a cluster without the list). */
function servedAddresses(services: readonly ServiceReading[]): ClusterIpAddress[] {
  return services.flatMap(({ owner }) =>
    owner.values
      .filter((value) => value.range.kind === 'clusterIP')
      .map((value) => ({
        ip: value.range.valueAt(value.offset),
        service: `${owner.object.namespace}/${owner.object.name}`,
      })),
  );
}

/**
 * The ServiceCIDR part of the summary: ranges refused, terminating ServiceCIDRs with their
 * holders, and the IPs berth and the apiserver disagree about (reports only: what repair frees
 * is decided from the Services, as before).
 */
function serviceCidrsFound(
  state: ServiceCidrState,
  snapshot: ExclusiveSnapshot,
  addresses: readonly ClusterIpAddress[] | undefined,
  started: number,
): { report: RepairServiceCidrs; findings: Finding[] } {
  const findings: Finding[] = [...state.refused.values()].map((refusal) => ({
    reason: REPAIR_REASONS.serviceCidrRefused,
    message: refusal.message,
  }));
  for (const entry of state.terminating) {
    for (const holder of entry.holders) {
      findings.push({
        reason: REPAIR_REASONS.serviceCidrTerminating,
        message: `ServiceCIDR ${entry.serviceCidr} (${entry.cidr}) is being deleted and ${holder} still holds an address in it`,
      });
    }
  }
  const drift = addresses
    ? ipAddressDrift(state.ranges, addresses, heldClusterIps(snapshot), started)
    : [];
  for (const { ip, heldBy, holder } of drift) {
    findings.push(
      heldBy === 'apiserver'
        ? {
            reason: REPAIR_REASONS.ipAddressNotInBerth,
            message: `the apiserver holds ${ip} for ${holder} (IPAddress ${ip}) and berth does not`,
          }
        : {
            reason: REPAIR_REASONS.ipAddressMissing,
            message: `berth holds ${ip} for ${holder} and the apiserver has no IPAddress ${ip}`,
          },
    );
  }
  return {
    report: { ...serviceCidrReport(state), drift: drift.slice(0, MAX_NOTES) },
    findings,
  };
}

/** Every cluster IP the snapshot shows held, with who holds it as messages name it. */
function heldClusterIps(snapshot: ExclusiveSnapshot): Map<string, string> {
  const held = new Map<string, string>();
  for (const range of snapshot.ranges) {
    if (range.kind !== 'clusterIP') continue;
    for (const [offset, id] of snapshot.held.get(rangeKey(range)) ?? []) {
      const owner = snapshot.owners.get(id)?.owner;
      held.set(
        range.valueAt(offset),
        owner ? `${owner.kind} ${owner.namespace}/${owner.name}` : `allocation ${id}`,
      );
    }
  }
  return held;
}

/** Every block of every range, and every owner record. */
async function readExclusiveSnapshot(
  store: RepairAllocationStore,
  ranges: readonly ValueRange[],
): Promise<ExclusiveSnapshot> {
  const held = new Map<string, Map<Offset, string>>();
  const claimedAt = new Map<string, Map<Offset, number>>();
  await Promise.all(
    ranges.map(async (range) => {
      const values = new Map<Offset, string>();
      const times = new Map<Offset, number>();
      // Only blocks that held a value are stored: this reads what the range holds, not its width.
      const last = lastBlockOf(range.exactSize);
      for await (const block of store.scanBlocks(rangeKey(range), 0, last)) {
        for (const [slot, holder] of block.holders) {
          const offset = offsetAt(block.index, slot);
          if (offset >= range.exactSize) continue;
          values.set(offset, holder);
          const at = block.claimedAt?.get(slot);
          if (at !== undefined) times.set(offset, at);
        }
      }
      held.set(rangeKey(range), values);
      claimedAt.set(rangeKey(range), times);
    }),
  );
  const owners = new Map<string, OwnerRecord>();
  for await (const record of store.listOwners()) owners.set(record.id, record);
  return { ranges, held, claimedAt, owners };
}

/** Host port records and counts; counts are read before and after the records (see the diff). */
async function readHostPortSnapshot(
  store: HostPortRepairStore,
  ranges: readonly ValueRange[],
): Promise<HostPortSnapshot> {
  const hostRanges = ranges.map(toHostPortRange);
  const countsBefore = await Promise.all(hostRanges.map((r) => store.readCounts(r)));
  const records = [];
  for await (const record of store.listRecords()) records.push(record);
  const countsAfter = await Promise.all(hostRanges.map((r) => store.readCounts(r)));
  return { ranges, records, countsBefore, countsAfter };
}

async function writeExclusive(
  store: RepairAllocationStore,
  snapshot: ExclusiveSnapshot,
  plan: ExclusivePlan,
  { concurrency, now }: { readonly concurrency: number; readonly now: number },
  progress: Progress,
): Promise<void> {
  // Intents first: a value is never held for an owner whose record does not list it.
  await forEachBounded(plan.intents, concurrency, async (intent) => {
    const done = await amendRecord(
      store,
      now,
      snapshot.owners.get(intent.id),
      intent.id,
      (record) => ({
        claims: mergeClaims(record?.claims ?? [], intent.claims, []),
        owner: record?.owner ?? intent.owner,
      }),
    );
    if (!done) progress.conflicts++;
  });

  const moved = new Map<string, { range: string; offset: Offset }[]>();
  const markMoved = (id: string, range: ValueRange, offset: Offset) => {
    const list = moved.get(id) ?? [];
    list.push({ range: rangeKey(range), offset });
    moved.set(id, list);
  };
  // Findings in plan order, whatever order the concurrent claims finish in.
  const confirmed: (Finding | undefined)[] = plan.claims.map(() => undefined);
  await forEachBounded([...plan.claims.entries()], concurrency, async ([index, claim]) => {
    const outcome = await store.claim(rangeKey(claim.range), claim.offset, claim.owner);
    if (outcome.taken) {
      progress.recorded++;
      confirmed[index] = claim.finding;
    } else if (outcome.holder !== claim.owner) {
      // Someone else took it meanwhile: the object carries a value it does not hold.
      progress.conflicts++;
      confirmed[index] = claim.finding;
    }
  });
  progress.confirmed.push(...confirmed.filter((f): f is Finding => f !== undefined));
  await forEachBounded(plan.transfers, concurrency, async (transfer) => {
    const done = await store.transfer(
      rangeKey(transfer.range),
      transfer.offset,
      transfer.from,
      transfer.to,
    );
    if (!done) {
      progress.conflicts++;
      return;
    }
    progress.recorded++;
    markMoved(transfer.from, transfer.range, transfer.offset);
    if (transfer.leak) {
      progress.released++;
      progress.freed.push(transfer.leak);
    }
  });
  await forEachBounded(plan.frees, concurrency, async (free) => {
    if (await store.release(rangeKey(free.range), free.offset, free.holder)) {
      progress.released++;
      progress.freed.push(free.leak);
      markMoved(free.holder, free.range, free.offset);
    } else {
      progress.conflicts++;
    }
  });

  // Then the records of holders that lost values: drop those claims, or the whole record.
  await forEachBounded(plan.cleanups, concurrency, async (cleanup) => {
    const gone = moved.get(cleanup.id) ?? [];
    if (gone.length === 0) return;
    const stillHeld = (claim: Claim) =>
      snapshot.held.get(claim.range)?.get(claim.offset) === cleanup.id &&
      !gone.some((g) => g.range === claim.range && g.offset === claim.offset);
    const done = await amendRecord(
      store,
      now,
      snapshot.owners.get(cleanup.id),
      cleanup.id,
      (record) => {
        if (!record) return 'keep';
        const claims = mergeClaims(record.claims, [], gone);
        const goneKeys = new Set(gone.map(claimKey));
        const releasing = (record.releasing ?? []).filter((c) => !goneKeys.has(claimKey(c)));
        if (cleanup.ownerGone && !claims.some(stillHeld) && !releasing.some(stillHeld))
          return 'delete';
        return { claims, owner: record.owner, releasing };
      },
    );
    if (!done) progress.conflicts++;
  });
  await forEachBounded(plan.trims, concurrency, async (trim) => {
    const stale = new Set(trim.claims.map(claimKey));
    const done = await amendRecord(store, now, snapshot.owners.get(trim.id), trim.id, (record) =>
      record
        ? { claims: record.claims.filter((c) => !stale.has(claimKey(c))), owner: record.owner }
        : 'keep',
    );
    if (!done) progress.conflicts++;
  });
  await forEachBounded(plan.deletions, concurrency, async (deletion) => {
    // Only the version that counted down goes; a record written since is someone's intent.
    if (!(await store.deleteOwner(deletion.id, deletion.version))) {
      progress.conflicts++;
      return;
    }
    // The deleted version is the snapshot's, so the snapshot names its owner.
    const owner = snapshot.owners.get(deletion.id)?.owner;
    const whose = owner ? ` (${owner.kind} ${owner.namespace}/${owner.name})` : '';
    progress.freed.push({
      reason: REPAIR_REASONS.ownerRecordLeaked,
      message: `the owner record ${deletion.id}${whose} holds nothing and has no live object: cleaning up`,
    });
  });
}

/**
 * Rewrites one owner record with `change`, versioned: on a concurrent write it reads the record
 * again and applies `change` to that. False when it kept losing.
 */
async function amendRecord(
  store: RepairAllocationStore,
  now: number,
  snapshot: OwnerRecord | undefined,
  id: string,
  change: (
    record: OwnerRecord | undefined,
  ) =>
    | { claims: Claim[]; owner: OwnerRecord['owner']; releasing?: OwnerRecord['releasing'] }
    | 'keep'
    | 'delete',
): Promise<boolean> {
  let current = snapshot;
  for (let attempt = 1; attempt <= RECORD_ATTEMPTS; attempt++) {
    if (attempt > 1) current = await store.getOwner(id);
    const next = change(current);
    if (next === 'keep') return true;
    if (next === 'delete') {
      // Versioned: a record rewritten since it was read is someone's intent, so read it again.
      if (!current || (await store.deleteOwner(id, current.version))) return true;
      continue;
    }
    try {
      const releasing = next.releasing ?? current?.releasing ?? [];
      await store.putOwner(
        {
          id,
          owner: next.owner,
          claims: next.claims,
          ...(releasing.length > 0 ? { releasing } : {}),
          version: (current?.version ?? 0) + 1,
          createdAt: current?.createdAt ?? now,
        },
        current?.version ?? 0,
      );
      return true;
    } catch (error) {
      if (!(error instanceof OwnerVersionConflictError)) throw error;
    }
  }
  return false;
}

async function writeHostPorts(
  store: HostPortRepairStore,
  plan: HostPortPlan,
  options: {
    readonly concurrency: number;
    readonly quotas: Readonly<Record<string, number>> | undefined;
  },
  progress: Progress,
): Promise<void> {
  const { concurrency, quotas } = options;
  await forEachBounded(plan.records, concurrency, async (record) => {
    if (await commitRepaired(store, record)) progress.recorded += record.ports.length;
    else progress.conflicts++;
  });
  await forEachBounded(plan.releases, concurrency, async (release) => {
    // The delete gives the record's quota units back with it (once, whoever deletes it).
    const released = await releaseHostPorts({ store }, release.id, release.pod);
    if (released) {
      await releaseQuota(store, quotas?.[release.pod.namespace], released);
      progress.released += release.leaks.length;
      progress.freed.push(...release.leaks);
    } else {
      progress.conflicts++;
    }
  });
  await forEachBounded(plan.foreignMarks, concurrency, (m) =>
    store.markForeign(m.range, m.port, m.held),
  );
  await forEachBounded(plan.corrections, concurrency, async (c) => {
    if (await store.correctCount(c.range.name, c.port, c.from, c.to))
      progress.freed.push(c.finding);
    else progress.conflicts++;
  });
}

/**
 * Records a live pod's ports as the allocator records them (the record, then its uses). Repair
 * chooses no ports, so the uses are a plain ADD with no count condition and no reads: parallel
 * records on one port never knock each other out. False when a record appeared under the id
 * meanwhile (the next pass looks again).
 */
async function commitRepaired(store: HostPortRepairStore, record: PodPortRecord): Promise<boolean> {
  try {
    await recordHostPorts(store, record);
    return true;
  } catch (error) {
    if (error instanceof AllocationIdTakenError) return false;
    throw error;
  }
}

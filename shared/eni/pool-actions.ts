/**
 * The EC2 side of a pool plan: assign, create + attach, unassign, detach + delete, each with its
 * store writes in the order that survives a crash at any point:
 * - an intent (or a `draining`/`detaching` mark) is written before the EC2 call;
 * - the result is written after it;
 * - the pass finishes whatever a crash left between the two (see `reconcile.ts`).
 * Callers hold the pool's lease.
 */
import {
  awsErrorCode,
  isLimitExceeded,
  isNotFound,
  isPrefixShortage,
  isSubnetExhausted,
  isThrottled,
} from '../aws/error-codes.js';
import { Ec2BudgetExhaustedError } from '../ec2/errors.js';
import {
  BERTH_TAGS,
  type Ec2InstanceInterface,
  type Ec2NetworkInterface,
  type Ec2Tag,
  podAddressesOf,
  prefixAddresses,
  VPC_CNI_NO_MANAGE_TAG,
} from '../ec2/network.js';
import type { EniDeps } from './deps.js';
import { EniConflictError } from './errors.js';
import {
  type CreateIntent,
  type EniRecord,
  foreignAddresses,
  type IpRecord,
  type NodeState,
  type PoolRecord,
  prefixesOf,
} from './model.js';
import { ENI_TIMINGS, enisOnInstance, type PlannedGrowth, type PoolPlan } from './policy.js';
import type { NodeWrite } from './store.js';

/** One thing that went wrong, collected instead of stopping the pass. */
export interface EniFailure {
  readonly node?: string;
  readonly eniId?: string;
  readonly action: string;
  readonly code: string;
  readonly message: string;
}

/** Running counts of what a pass (or an on-demand refill) did. */
export interface ActionTally {
  ipsAssigned: number;
  /** Addresses an earlier assign put on an ENI unseen, recorded instead of assigned again. */
  ipsAdopted: number;
  ipsUnassigned: number;
  enisCreated: number;
  enisDeleted: number;
  /** The EC2 budget refused; later mutations in this pass are skipped. */
  budgetSpent: boolean;
  readonly exhaustedSubnets: Set<string>;
  readonly failures: EniFailure[];
}

/** An empty tally. */
export function newTally(): ActionTally {
  return {
    ipsAssigned: 0,
    ipsAdopted: 0,
    ipsUnassigned: 0,
    enisCreated: 0,
    enisDeleted: 0,
    budgetSpent: false,
    exhaustedSubnets: new Set(),
    failures: [],
  };
}

/** The tags of every ENI berth creates: owner cluster, node, instance and creation time. */
export function eniTags(
  clusterName: string,
  pool: PoolRecord,
  createdAt: number,
): readonly Ec2Tag[] {
  return [
    { key: BERTH_TAGS.cluster, value: clusterName },
    { key: BERTH_TAGS.node, value: pool.node },
    { key: BERTH_TAGS.instance, value: pool.instanceId },
    { key: BERTH_TAGS.createdAt, value: new Date(createdAt).toISOString() },
    VPC_CNI_NO_MANAGE_TAG,
  ];
}

/** A fresh IP record for an address EC2 just put on an ENI (on its own, or in `prefix`). */
export function newIpRecord(ip: string, eniId: string, now: number, prefix?: string): IpRecord {
  return {
    kind: 'ip',
    ip,
    eniId,
    ...(prefix ? { prefix } : {}),
    state: 'free',
    sticky: false,
    releasedAt: 0,
    createdAt: now,
    version: 1,
  };
}

/**
 * The writes that record an ENI attached to the pool's instance and the addresses it carries,
 * each created only if absent: after a create and attach, or when the pass adopts an ENI a
 * crash left unrecorded.
 */
export function attachedEniWrites(
  eni: Ec2NetworkInterface,
  attachment: { readonly deviceIndex: number; readonly attachmentId: string },
  createdAt: number,
  now: number,
): NodeWrite[] {
  const record: EniRecord = {
    kind: 'eni',
    eniId: eni.eniId,
    subnetId: eni.subnetId,
    deviceIndex: attachment.deviceIndex,
    attachmentId: attachment.attachmentId,
    state: 'attached',
    ...(eni.primaryIp ? { primaryIp: eni.primaryIp } : {}),
    ...(eni.macAddress ? { macAddress: eni.macAddress } : {}),
    createdAt,
    // Its addresses are recorded by these very writes: no assign is left unseen.
    mutatingAt: 0,
    version: 1,
  };
  return [
    { put: record, expectedVersion: 0 },
    ...[...podAddressesOf(eni)].map(
      ([ip, prefix]): NodeWrite => ({
        put: newIpRecord(ip, eni.eniId, now, prefix),
        expectedVersion: 0,
      }),
    ),
  ];
}

/**
 * What EC2 shows on an ENI that the records do not hold, by unit: single addresses, and prefixes
 * none of whose addresses is recorded (a prefix with any recorded address is berth's).
 */
export function unrecordedUnits(
  eni: Pick<Ec2NetworkInterface, 'secondaryIps' | 'ipv4Prefixes'>,
  recorded: ReadonlySet<string>,
): { readonly ips: string[]; readonly prefixes: string[] } {
  return {
    ips: eni.secondaryIps.filter((ip) => !recorded.has(ip)),
    prefixes: eni.ipv4Prefixes.filter(
      (prefix) => !prefixAddresses(prefix).some((ip) => recorded.has(ip)),
    ),
  };
}

/**
 * The record of the instance's primary ENI as berth takes it into the pool: every address and
 * prefix EC2 shows on it that `recorded` does not hold is another owner's (`foreign`), such as
 * what the VPC CNI left there. Nothing on it is berth's until berth assigns it.
 */
export function primaryEniRecord(
  eni: Ec2InstanceInterface,
  recorded: ReadonlySet<string>,
  now: number,
): EniRecord {
  const { ips, prefixes } = unrecordedUnits(eni, recorded);
  return {
    kind: 'eni',
    eniId: eni.eniId,
    subnetId: eni.subnetId,
    deviceIndex: eni.deviceIndex,
    attachmentId: eni.attachmentId,
    state: 'attached',
    primary: true,
    foreign: [...ips, ...prefixes],
    primaryIp: eni.primaryIp,
    macAddress: eni.macAddress,
    createdAt: now,
    mutatingAt: 0,
    version: 1,
  };
}

/**
 * Whether the error is a spent budget for EC2 changes: the pass then stops changing things (a
 * spent Describe budget only costs the item that hit it).
 */
export function spendsMutations(error: unknown): boolean {
  return error instanceof Ec2BudgetExhaustedError && error.family !== 'describe';
}

/** Records a failure, marking the subnet exhausted or the budget spent when that is what failed. */
export async function noteFailure(
  deps: EniDeps,
  pool: PoolRecord,
  tally: ActionTally,
  action: string,
  error: unknown,
  eniId?: string,
): Promise<void> {
  if (spendsMutations(error)) tally.budgetSpent = true;
  if (isPrefixShortage(error)) {
    await deps.store.markSubnetShort(
      pool.subnetId,
      'prefixes',
      deps.now() + ENI_TIMINGS.prefixFallbackMs,
    );
  }
  if (isSubnetExhausted(error)) {
    tally.exhaustedSubnets.add(pool.subnetId);
    await deps.store.markSubnetShort(
      pool.subnetId,
      'addresses',
      deps.now() + ENI_TIMINGS.subnetExhaustedMs,
    );
  }
  tally.failures.push({
    node: pool.node,
    ...(eniId ? { eniId } : {}),
    action,
    code: error instanceof Ec2BudgetExhaustedError ? 'BudgetExhausted' : awsErrorCode(error),
    message: error instanceof Error ? error.message : String(error),
  });
}

/** Whether growth should stop after this error (nothing more will succeed this round). */
function stopsGrowth(error: unknown): boolean {
  return (
    error instanceof Ec2BudgetExhaustedError ||
    isSubnetExhausted(error) ||
    isPrefixShortage(error) ||
    isThrottled(error)
  );
}

/**
 * Carries out a plan: growth first (pods may be waiting), then trims. Per-item failures are
 * collected in the tally; growth stops at the first failure that would repeat. A subnet with no
 * free /28 for the plan's first prefix gets the plan's single-address fallback at once.
 */
export async function applyPlan(
  deps: EniDeps,
  pool: PoolRecord,
  state: NodeState,
  plan: PoolPlan,
  tally: ActionTally,
): Promise<void> {
  const outcome = await applyGrowth(deps, pool, state, plan, tally);
  if (outcome === 'prefixes-short' && plan.fallback) {
    // On the records as the refused attempt left them: it marked the ENI it tried, and EC2's
    // refusal may follow an earlier attempt of the call that landed, so the mark stays and the
    // fallback reads the ENI back before it assigns.
    const after = await deps.store.loadNode(pool.node);
    await applyGrowth(deps, pool, after, plan.fallback, tally);
  }
  for (const { eniId, ips } of plan.unassign) {
    if (tally.budgetSpent) break;
    try {
      await unassignFromEni(deps, pool, state, eniId, ips, tally);
    } catch (error) {
      await noteFailure(deps, pool, tally, 'UnassignPrivateIpAddresses', error, eniId);
    }
  }
  for (const eniId of plan.deleteEnis) {
    if (tally.budgetSpent) break;
    try {
      await deleteEni(deps, pool, state, eniId, tally);
    } catch (error) {
      await noteFailure(deps, pool, tally, 'DeleteNetworkInterface', error, eniId);
    }
  }
}

/**
 * How the growth half of a plan ended: `prefixes-short` when the subnet had no free /28 before
 * any prefix landed (the single-address fallback may run instead).
 */
type GrowthOutcome = 'done' | 'prefixes-short';

/** The assigns, then the creates, of a plan (or of its fallback). */
async function applyGrowth(
  deps: EniDeps,
  pool: PoolRecord,
  state: NodeState,
  growth: Pick<PoolPlan, 'assign' | 'create'>,
  tally: ActionTally,
): Promise<GrowthOutcome> {
  const grownBefore = tally.ipsAssigned + tally.ipsAdopted;
  const shortOfPrefixes = (error: unknown): GrowthOutcome =>
    isPrefixShortage(error) && tally.ipsAssigned + tally.ipsAdopted === grownBefore
      ? 'prefixes-short'
      : 'done';
  for (const { eniId, ...unit } of growth.assign) {
    if (tally.budgetSpent) break;
    const eni = state.enis.find((e) => e.eniId === eniId);
    if (!eni) continue;
    try {
      const recorded = state.ips.filter((ip) => ip.eniId === eniId).map((ip) => ip.ip);
      await assignOnEni(deps, pool, eni, unit, new Set(recorded), tally);
    } catch (error) {
      await noteFailure(deps, pool, tally, 'AssignPrivateIpAddresses', error, eniId);
      if (stopsGrowth(error)) return shortOfPrefixes(error);
    }
  }
  const indexes = deviceIndexes(deps, pool, state);
  for (const unit of growth.create) {
    if (tally.budgetSpent) break;
    try {
      await createEni(deps, pool, state, unit, tally, indexes);
    } catch (error) {
      await noteFailure(deps, pool, tally, 'CreateNetworkInterface', error);
      if (refusedOutright(error)) return shortOfPrefixes(error);
    }
  }
  return 'done';
}

/**
 * `count` more addresses or prefixes on one ENI, in one AssignPrivateIpAddresses bracketed by
 * the ENI's intent mark: set before the call, cleared in the same write that records what EC2
 * answered. EC2's assign has no ClientToken, so a mark still set means an earlier assign may have
 * landed unseen (a crash, a timeout after EC2 acted): the ENI is read back first and what it
 * already carries is adopted, so a retried assign converges instead of over-assigning.
 */
async function assignOnEni(
  deps: EniDeps,
  pool: PoolRecord,
  eni: EniRecord,
  growth: PlannedGrowth,
  recorded: ReadonlySet<string>,
  tally: ActionTally,
): Promise<void> {
  const adopted = eni.mutatingAt === 0 ? [] : await unrecordedAddresses(deps, eni, recorded);
  const adoptedUnits =
    growth.unit === 'prefix'
      ? prefixesOf(adopted).size
      : adopted.filter((a) => a.prefix === undefined).length;
  const wanted = growth.count - adoptedUnits;
  const marked: EniRecord = { ...eni, mutatingAt: deps.now(), version: eni.version + 1 };
  if (wanted > 0) {
    await deps.store.commit(pool.node, [{ put: marked, expectedVersion: eni.version }]);
  }
  let assigned: { ip: string; prefix?: string }[] = [];
  try {
    if (wanted > 0 && growth.unit === 'prefix') {
      const prefixes = await deps.ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: wanted });
      assigned = prefixes.flatMap((prefix) =>
        prefixAddresses(prefix).map((ip) => ({ ip, prefix })),
      );
    } else if (wanted > 0) {
      // EC2 answers the new secondaries; an EC2-compatible API that also lists the primary must
      // not make the interface's own address a pod's.
      const ips = await deps.ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: wanted });
      assigned = ips.filter((ip) => ip !== eni.primaryIp).map((ip) => ({ ip }));
    }
  } catch (error) {
    // The budget refused the call before any attempt was sent: nothing can have landed, so the
    // ENI gets its mark back, sparing the next assign on it a Describe from that same budget.
    // After any attempt was sent (a retry refused), the mark stays: that attempt may have landed.
    if (wanted > 0 && error instanceof Ec2BudgetExhaustedError && error.attemptsSent === 0) {
      await deps.store.commit(pool.node, [
        {
          put: { ...marked, mutatingAt: eni.mutatingAt, version: marked.version + 1 },
          expectedVersion: marked.version,
        },
      ]);
    }
    throw error;
  }
  const now = deps.now();
  const last = wanted > 0 ? marked : eni;
  // EC2 handed these to berth, so no other owner holds them now, whatever an earlier look saw.
  const gained = new Set(assigned.map((a) => a.prefix ?? a.ip));
  const foreign = last.foreign?.filter((unit) => !gained.has(unit));
  await putNewIps(
    deps,
    pool.node,
    [...adopted, ...assigned].map((a) => newIpRecord(a.ip, eni.eniId, now, a.prefix)),
    {
      put: { ...last, mutatingAt: 0, ...(foreign ? { foreign } : {}), version: last.version + 1 },
      expectedVersion: last.version,
    },
  );
  tally.ipsAssigned += assigned.length;
  tally.ipsAdopted += adopted.length;
}

/**
 * Pod addresses EC2 shows on the ENI (its own or its prefixes') that the store has no record of,
 * and that no other owner held on the primary ENI before berth's assign.
 */
async function unrecordedAddresses(
  deps: EniDeps,
  eni: EniRecord,
  recorded: ReadonlySet<string>,
): Promise<{ ip: string; prefix?: string }[]> {
  const page = await deps.ec2.describeNetworkInterfaces({
    filters: { 'network-interface-id': [eni.eniId] },
  });
  const inEc2 = page.interfaces.find((i) => i.eniId === eni.eniId);
  if (!inEc2) return [];
  const foreign = foreignAddresses(eni);
  return [...podAddressesOf(inEc2)]
    .filter(([ip]) => ip !== eni.primaryIp && !recorded.has(ip) && !foreign.has(ip))
    .map(([ip, prefix]) => (prefix ? { ip, prefix } : { ip }));
}

/**
 * Writes new IP records, with the ENI's cleared mark, in one transaction. When one of them
 * somebody else wrote meanwhile (an adoption), each is written on its own, kept as it is where it
 * exists, and the mark stays: the next assign reads the ENI back first.
 */
async function putNewIps(
  deps: EniDeps,
  node: string,
  records: readonly IpRecord[],
  settled: NodeWrite,
): Promise<void> {
  try {
    await deps.store.commit(node, [
      ...records.map((put) => ({ put, expectedVersion: 0 })),
      settled,
    ]);
  } catch (error) {
    if (!(error instanceof EniConflictError)) throw error;
    for (const put of records) {
      try {
        await deps.store.commit(node, [{ put, expectedVersion: 0 }]);
      } catch (inner) {
        if (!(inner instanceof EniConflictError)) throw inner;
      }
    }
  }
}

/** A CreateNetworkInterface client token: random, at most 64 ASCII characters. */
function clientToken(random: () => number): string {
  let token = 'berth-';
  for (let i = 0; i < 32; i++) token += Math.floor(random() * 16).toString(16);
  return token;
}

/** Creates, attaches and records one ENI with `count` secondary addresses or prefixes. */
export async function createEni(
  deps: EniDeps,
  pool: PoolRecord,
  state: NodeState,
  growth: PlannedGrowth,
  tally: ActionTally,
  indexes: DeviceIndexes,
): Promise<void> {
  if (enisOnInstance(state.enis, state.intents.length) >= pool.maxInterfaces) return;
  const intent: CreateIntent = {
    kind: 'intent',
    clientToken: clientToken(deps.random),
    subnetId: pool.subnetId,
    securityGroupIds: pool.securityGroupIds,
    ...(growth.unit === 'prefix'
      ? { secondaryIpCount: 0, ipv4PrefixCount: growth.count }
      : { secondaryIpCount: growth.count }),
    createdAt: deps.now(),
    version: 1,
  };
  // The token is stored before the call: a crash after it, and the pass's retry reuses it.
  await deps.store.commit(pool.node, [{ put: intent, expectedVersion: 0 }]);
  await completeIntent(deps, pool, intent, tally, indexes);
}

/**
 * Makes an intent real: CreateNetworkInterface with the intent's token (idempotent: a retry gets
 * the same ENI), attach unless already attached here, DeleteOnTermination, then one commit of
 * the ENI, its addresses and the intent's removal.
 */
export async function completeIntent(
  deps: EniDeps,
  pool: PoolRecord,
  intent: CreateIntent,
  tally: ActionTally,
  indexes: DeviceIndexes,
): Promise<void> {
  let eni: Ec2NetworkInterface;
  try {
    eni = await deps.ec2.createNetworkInterface({
      subnetId: intent.subnetId,
      securityGroupIds: intent.securityGroupIds,
      secondaryIpCount: intent.secondaryIpCount,
      ...(intent.ipv4PrefixCount ? { ipv4PrefixCount: intent.ipv4PrefixCount } : {}),
      description: `berth ${deps.clusterName} ${pool.node}`,
      tags: eniTags(deps.clusterName, pool, intent.createdAt),
      clientToken: intent.clientToken,
    });
  } catch (error) {
    // EC2 refused the request outright, so no ENI exists for this token: drop the intent and
    // let the next plan decide afresh. Any other failure may have created it: keep the token.
    if (refusedOutright(error)) {
      await deps.store.commit(pool.node, [{ delete: { kind: 'intent', id: intent.clientToken } }]);
    }
    throw error;
  }
  let attachment = eni.attachment;
  if (attachment && attachment.instanceId !== pool.instanceId) {
    throw new Error(
      `ENI ${eni.eniId} is attached to ${attachment.instanceId}, not ${pool.instanceId}`,
    );
  }
  let deleteOnTermination = attachment?.deleteOnTermination ?? false;
  if (!attachment) {
    const deviceIndex = await indexes.take();
    try {
      const { attachmentId } = await deps.ec2.attachNetworkInterface({
        eniId: eni.eniId,
        instanceId: pool.instanceId,
        deviceIndex,
      });
      attachment = {
        attachmentId,
        instanceId: pool.instanceId,
        deviceIndex,
        status: 'attaching',
        deleteOnTermination: false,
      };
    } catch (error) {
      if (isLimitExceeded(error) || isNotFound(error)) {
        // The instance takes no more ENIs (or is gone): this ENI can never serve it.
        await discardEni(deps, pool, eni, intent);
      }
      throw error;
    }
    deleteOnTermination = false;
  }
  if (!deleteOnTermination) {
    await deps.ec2.setDeleteOnTermination({
      eniId: eni.eniId,
      attachmentId: attachment.attachmentId,
    });
  }
  try {
    await deps.store.commit(pool.node, [
      ...attachedEniWrites(eni, attachment, intent.createdAt, deps.now()),
      { delete: { kind: 'intent', id: intent.clientToken } },
    ]);
  } catch (error) {
    if (!(error instanceof EniConflictError)) throw error;
    // Adopted meanwhile by a pass: the records exist; only the intent is left to drop.
    await deps.store.commit(pool.node, [{ delete: { kind: 'intent', id: intent.clientToken } }]);
  }
  tally.enisCreated++;
  tally.ipsAssigned += podAddressesOf(eni).size;
}

/** Whether EC2 (or berth's budget) rejected a request before acting on it. */
function refusedOutright(error: unknown): boolean {
  return stopsGrowth(error) || isLimitExceeded(error);
}

/** Deletes an ENI that can never be attached, and its intent. */
async function discardEni(
  deps: EniDeps,
  pool: PoolRecord,
  eni: Ec2NetworkInterface,
  intent: CreateIntent,
): Promise<void> {
  try {
    await deps.ec2.deleteNetworkInterface({ eniId: eni.eniId });
  } catch (error) {
    // Left `available`, it is swept as a leak after its grace; nothing else to do here.
    if (!isNotFound(error)) return;
  }
  await deps.store.commit(pool.node, [{ delete: { kind: 'intent', id: intent.clientToken } }]);
}

/**
 * The device indexes one plan hands out on an instance. Every create of the plan starts from the
 * same state, so each chosen index is remembered here: the next create cannot pick it again.
 */
export interface DeviceIndexes {
  /** The lowest index no ENI of the instance uses (EC2's view, berth's records, earlier picks). */
  take(): Promise<number>;
}

/** Device indexes for one plan: one DescribeInstances, on the first create that needs it. */
export function deviceIndexes(deps: EniDeps, pool: PoolRecord, state: NodeState): DeviceIndexes {
  let used: Promise<Set<number>> | undefined;
  const describe = async (): Promise<Set<number>> => {
    const [instance] = await deps.ec2.describeInstances([pool.instanceId]);
    const taken = new Set<number>([0, ...state.enis.map((eni) => eni.deviceIndex)]);
    for (const eni of instance?.networkInterfaces ?? []) taken.add(eni.deviceIndex);
    return taken;
  };
  return {
    async take() {
      used ??= describe();
      let taken: Set<number>;
      try {
        taken = await used;
      } catch (error) {
        // A failed Describe is retried by the next create, not remembered.
        used = undefined;
        throw error;
      }
      let index = 1;
      while (taken.has(index)) index++;
      taken.add(index);
      return index;
    },
  };
}

/**
 * Of the records asked to go, those EC2 can take back without touching anything else: every
 * single address, and a prefix only with all of its recorded addresses (unassigning a prefix
 * takes all 16, so one address still claimed keeps the whole prefix).
 */
export function wholeUnits(records: readonly IpRecord[], wanted: ReadonlySet<string>): IpRecord[] {
  const blocked = new Set(
    records.flatMap((ip) => (ip.prefix !== undefined && !wanted.has(ip.ip) ? [ip.prefix] : [])),
  );
  return records.filter(
    (ip) => wanted.has(ip.ip) && (ip.prefix === undefined || !blocked.has(ip.prefix)),
  );
}

/**
 * Unassigns idle addresses from one ENI: mark them `draining` (so no pod can claim them), one
 * UnassignPrivateIpAddresses (of addresses, and of whole prefixes), then drop the records.
 */
export async function unassignFromEni(
  deps: EniDeps,
  pool: PoolRecord,
  state: NodeState,
  eniId: string,
  ips: readonly string[],
  tally: ActionTally,
): Promise<void> {
  const records = wholeUnits(
    state.ips.filter((ip) => ip.eniId === eniId),
    new Set(ips),
  );
  if (records.length === 0) return;
  const now = deps.now();
  const draining = records.map(
    (ip): IpRecord => ({ ...ip, state: 'draining', drainingSince: now, version: ip.version + 1 }),
  );
  try {
    await deps.store.commit(
      pool.node,
      draining.map((put, i) => ({ put, expectedVersion: records[i]?.version ?? 0 })),
    );
  } catch (error) {
    // A pod claimed one of them meanwhile: leave this ENI for the next pass.
    if (error instanceof EniConflictError) return;
    throw error;
  }
  await finishUnassign(deps, pool, eniId, draining, tally);
}

/**
 * Gives single addresses and whole prefixes of one ENI back to EC2: one UnassignPrivateIpAddresses
 * for each kind it has. What EC2 no longer has is already given back.
 */
export async function giveBack(
  deps: EniDeps,
  eniId: string,
  what: { readonly ips: readonly string[]; readonly prefixes: readonly string[] },
): Promise<void> {
  const alreadyGone = (error: unknown) => {
    if (!isNotFound(error)) throw error;
  };
  if (what.ips.length > 0) {
    await deps.ec2.unassignPrivateIpAddresses({ eniId, ips: what.ips }).catch(alreadyGone);
  }
  if (what.prefixes.length > 0) {
    await deps.ec2.unassignIpv4Prefixes({ eniId, prefixes: what.prefixes }).catch(alreadyGone);
  }
}

/**
 * The EC2 calls and record removal of an unassign whose records are already `draining`, every
 * address of a listed prefix among them (`wholeUnits`).
 */
export async function finishUnassign(
  deps: EniDeps,
  pool: PoolRecord,
  eniId: string,
  draining: readonly IpRecord[],
  tally: ActionTally,
): Promise<void> {
  await giveBack(deps, eniId, {
    ips: draining.filter((ip) => ip.prefix === undefined).map((ip) => ip.ip),
    prefixes: [...prefixesOf(draining)],
  });
  await deps.store.commit(
    pool.node,
    draining.map((ip) => ({ delete: { kind: 'ip', id: ip.ip }, expectedVersion: ip.version })),
  );
  tally.ipsUnassigned += draining.length;
}

/** Detaches and deletes a whole ENI of berth's whose addresses are all idle (never the primary). */
export async function deleteEni(
  deps: EniDeps,
  pool: PoolRecord,
  state: NodeState,
  eniId: string,
  tally: ActionTally,
): Promise<void> {
  const eni = state.enis.find((e) => e.eniId === eniId);
  if (!eni || eni.primary) return;
  const ips = state.ips.filter((ip) => ip.eniId === eniId);
  if (ips.some((ip) => ip.state !== 'free')) return;
  const now = deps.now();
  const detaching: EniRecord = { ...eni, state: 'detaching', version: eni.version + 1 };
  const draining = ips.map(
    (ip): IpRecord => ({ ...ip, state: 'draining', drainingSince: now, version: ip.version + 1 }),
  );
  try {
    await deps.store.commit(pool.node, [
      { put: detaching, expectedVersion: eni.version },
      ...draining.map((put, i): NodeWrite => ({ put, expectedVersion: ips[i]?.version ?? 0 })),
    ]);
  } catch (error) {
    if (error instanceof EniConflictError) return;
    throw error;
  }
  await finishEniDelete(deps, pool, detaching, draining, true, tally);
}

/**
 * Detach (when still attached), wait for the detach to settle, delete, then drop the records. A
 * delete refused as "in use" leaves the `detaching` record for the next pass.
 */
export async function finishEniDelete(
  deps: EniDeps,
  pool: PoolRecord,
  eni: EniRecord,
  ips: readonly IpRecord[],
  attached: boolean,
  tally: ActionTally,
): Promise<void> {
  if (attached) {
    try {
      await deps.ec2.detachNetworkInterface({ attachmentId: eni.attachmentId });
      await deps.sleep(ENI_TIMINGS.detachSettleMs);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  try {
    await deps.ec2.deleteNetworkInterface({ eniId: eni.eniId });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  await deps.store.commit(pool.node, [
    { delete: { kind: 'eni', id: eni.eniId } },
    ...ips.map((ip): NodeWrite => ({ delete: { kind: 'ip', id: ip.ip } })),
  ]);
  tally.enisDeleted++;
  tally.ipsUnassigned += ips.length;
}

/**
 * Assign and release of pod IPs. Both are idempotent, a release frees an address only for the
 * holder it names, and an address goes to one pod at a time whatever the concurrency: a claim is
 * one conditional write of the IP record, at the version read, naming its holder.
 *
 * The IP record is the only record of who holds an address: a repeated request finds its pod in
 * it, and a request that lost a race to a repeat of itself (the CNI plugin retrying a timed-out
 * ADD) finds the winner's record at the address it tried and answers that address. Both reads
 * of a repeat see the same pool and so try the same address first; only when other pods' claims
 * land between them can a repeat claim a second address, which the pass frees once the pod is
 * gone. An address is never given to two pods.
 */
import { z } from 'zod';
import type { Ec2Instance } from '../ec2/network.js';
import { parseIp } from '../net/ip.js';
import { autoModeReason } from '../node-pool/auto-mode.js';
import { instanceIdOf } from '../node-pool/provider-id.js';
import { isLiveVpcCniPod, VPC_CNI_POD_SELECTOR } from '../node-pool/vpc-cni.js';
import type { EniDeps } from './deps.js';
import {
  AutoModeNodeError,
  EniBadRequestError,
  EniConflictError,
  HolderContendedError,
  IpHeldByAnotherError,
  NodeHandsOutError,
  NotAssignedError,
  PoolBusyError,
  PoolExhaustedError,
  UnknownNodeError,
  VpcCniNodeError,
} from './errors.js';
import {
  type IpAssignment,
  type IpRecord,
  type NodeState,
  type PoolRecord,
  podKey,
  subnetGateway,
} from './model.js';
import {
  claimCandidates,
  isStickyPod,
  poolCapacity,
  poolStats,
  refillAheadDue,
  surgeOf,
} from './policy.js';
import { allocatablePods, createPool } from './pools.js';
import { type RefillRequests, refillPool } from './refill.js';

/** What assigns run on: the pools' deps, and where a low pool asks for a background refill. */
export interface AssignDeps extends EniDeps {
  readonly refills: RefillRequests;
}

/** An assign request, as `POST /v1/nodes/{node}/ips` carries it. */
export interface AssignRequest {
  readonly namespace: string;
  readonly pod: string;
  /** The container runtime's sandbox id (CNI_CONTAINERID): a release must name it to free the IP. */
  readonly containerId?: string;
  /** Whether the pod keeps its IP across restarts; looked up in the cluster when absent. */
  readonly sticky?: boolean;
}

/** Reads of a contended pool before giving up (each read tries several candidates). */
const CLAIM_ATTEMPTS = 8;
/** Candidates tried per read. */
const CANDIDATES_PER_READ = 16;
/** On-demand refills per request: one, plus one more if it only waited for another writer's. */
const MAX_REFILLS = 2;
/** Waits for another writer's refill of the same pool before answering 503. */
const LEASE_WAITS = 5;
const LEASE_WAIT_MS = 400;

const dnsSubdomain = z
  .string({ error: 'required: a string' })
  .min(1, { message: 'required' })
  .max(253, { message: 'at most 253 characters' })
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, {
    message:
      'must be a lower-case DNS subdomain (labels of letters, digits and "-", joined by ".")',
  });

/** A namespace name: a DNS label (Kubernetes refuses a dot in it, and more than 63 characters). */
const dnsLabel = z
  .string({ error: 'required: a string' })
  .min(1, { message: 'required' })
  .max(63, { message: 'at most 63 characters' })
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
    message: 'must be a lower-case DNS label (letters, digits and "-")',
  });

const containerId = z
  .string({ error: 'must be a string' })
  .min(1, { message: 'must not be empty' })
  .max(256, { message: 'at most 256 characters' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, {
    message: 'must be a container id (letters, digits, "_", "." and "-")',
  });

const assignBody = z.strictObject({
  namespace: dnsLabel,
  pod: dnsSubdomain,
  containerId: containerId.optional(),
  sticky: z.boolean().optional(),
});

/** Who a release is for, as `DELETE /v1/nodes/{node}/ips/{ip}` names it in its query. */
export interface ReleaseHolder {
  readonly namespace: string;
  readonly pod: string;
  /** When given, the IP is released only while this container of the pod holds it. */
  readonly containerId?: string;
}

const releaseQuery = z.object({
  namespace: dnsLabel,
  pod: dnsSubdomain,
  containerId: containerId.optional(),
});

/** Parses a request body; every problem is named by its field in one `EniBadRequestError`. */
export function parseAssignRequest(body: unknown): AssignRequest {
  return parsed(assignBody, body, 'body');
}

/** Parses a release's query; a missing `namespace` or `pod` is named. */
export function parseReleaseHolder(query: Readonly<Record<string, string>>): ReleaseHolder {
  return parsed(releaseQuery, query, 'query');
}

function parsed<T>(schema: z.ZodType<T>, input: unknown, what: string): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return `${issue.keys.join(', ')}: unknown field`;
    const path = issue.path.join('.') || what;
    return `${path}: ${issue.message}`;
  });
  throw new EniBadRequestError(problems.join('; '));
}

export function checkNode(node: string): void {
  if (!dnsSubdomain.safeParse(node).success) {
    throw new EniBadRequestError(`node: "${node}" is not a node name (a lower-case DNS subdomain)`);
  }
}

/**
 * `POST /v1/nodes/{node}/ips`: validates the body and assigns. Throws `EniBadRequestError`
 * (400), `UnknownNodeError` (404), `PoolExhaustedError`, `AutoModeNodeError` or
 * `VpcCniNodeError` (409),
 * `HolderContendedError` (429: the pod's own requests raced), or `PoolBusyError` (503). A look-up or release refuses an Auto Mode node only where berth holds
 * nothing there, so an address it still holds is always released.
 */
export async function handleAssignIp(
  deps: AssignDeps,
  node: string,
  body: unknown,
): Promise<IpAssignment> {
  checkNode(node);
  return assignIp(deps, node, parseAssignRequest(body));
}

/** `DELETE /v1/nodes/{node}/ips/{ip}?namespace=N&pod=P[&containerId=C]`: validates and releases. */
export async function handleReleaseIp(
  deps: EniDeps,
  node: string,
  ip: string,
  query: Readonly<Record<string, string>>,
): Promise<{ readonly released: boolean }> {
  checkNode(node);
  const address = parseIp(ip);
  if (address === undefined || address.family !== 'IPv4') {
    throw new EniBadRequestError(`ip: "${ip}" is not an IPv4 address`);
  }
  return releaseIp(deps, node, ip, parseReleaseHolder(query));
}

function answer(
  pool: PoolRecord,
  state: NodeState,
  { ip, eniId }: Pick<IpRecord, 'ip' | 'eniId'>,
): IpAssignment {
  const eni = state.enis.find((e) => e.eniId === eniId);
  return {
    ip,
    eniId,
    subnetCidr: pool.subnetCidr,
    gateway: subnetGateway(pool.subnetCidr),
    ...(eni ? { deviceIndex: eni.deviceIndex } : {}),
    ...(eni?.macAddress ? { macAddress: eni.macAddress } : {}),
  };
}

/**
 * `GET /v1/nodes/{node}/ips?namespace=N&pod=P[&containerId=C]`: the address the holder has, read
 * only. The CNI's CHECK verifies with it, and a DEL whose cached result was lost finds its IP.
 * Throws `NotAssignedError` (404) when the holder has none, or `AutoModeNodeError` (409) for an EKS
 * Auto Mode node berth keeps no pool for.
 */
export async function handleLookUpIp(
  deps: EniDeps,
  node: string,
  query: Readonly<Record<string, string>>,
): Promise<IpAssignment> {
  checkNode(node);
  const holder = parseReleaseHolder(query);
  const key = podKey(holder.namespace, holder.pod);
  const pool = await deps.store.getPool(node, 'eventual');
  // Eventually consistent, half the read units: the answer hands out nothing. A DEL that then
  // releases the address is checked against the record as stored, and one whose look missed an
  // address assigned in the last second leaves it to the pass, which frees an address held by a
  // pod no longer on the node (a leak for a minute, never an address held twice).
  const state = pool ? await deps.store.loadNode(node, 'eventual') : undefined;
  const held = state?.ips.find(
    (ip) =>
      ip.state === 'assigned' &&
      ip.pod === key &&
      (holder.containerId === undefined || ip.containerId === holder.containerId),
  );
  if (!pool || !state || !held) {
    if (!pool) await refuseAutoModeNode(deps, node);
    const who = holder.containerId ? `${key} (container ${holder.containerId})` : key;
    throw new NotAssignedError(node, who);
  }
  return answer(pool, state, held);
}

/**
 * Throws `AutoModeNodeError` when `node` is an EKS Auto Mode node. Asked only where berth holds
 * nothing for the node (no pool, no address record), so requests for berth's own nodes never pay
 * the Node read, and an address berth still holds on a node is always released. A Node berth
 * cannot read now (the cluster's API unreachable) refuses nothing: the answer stays the one it
 * was before Auto Mode was told apart, so a CNI DEL of an address berth never held still
 * succeeds.
 */
async function refuseAutoModeNode(deps: EniDeps, node: string): Promise<void> {
  const nodeObject = await deps.cluster.getNode(node).catch(() => undefined);
  const reason = autoModeReason(nodeObject?.metadata?.labels, deps.autoMode);
  if (reason !== undefined) throw new AutoModeNodeError(node, reason);
}

/**
 * The node's pool, created on first use when the node is in the cluster (404 otherwise), not an
 * EKS Auto Mode node (409: Auto Mode's own CNI gives its pods their IPs), and no aws-node runs
 * there (409: the VPC CNI's ipamd would take the primary ENI's addresses for its own).
 */
export async function poolFor(deps: EniDeps, node: string): Promise<PoolRecord> {
  // Eventually consistent (half the read units): the pool record only says where and how much;
  // every claim is conditional on the address record, and draining marks those records first.
  // A pool a second old that the look misses is created again, refused, and read strongly.
  const pool = await deps.store.getPool(node, 'eventual');
  if (pool && !pool.draining) return pool;
  const nodeObject = await deps.cluster.getNode(node);
  const autoMode = autoModeReason(nodeObject?.metadata?.labels, deps.autoMode);
  if (nodeObject && autoMode !== undefined) throw new AutoModeNodeError(node, autoMode);
  if (nodeObject && (await vpcCniRunsOn(deps, node))) throw new VpcCniNodeError(node);
  if (pool) throw new UnknownNodeError(node, 'the node is leaving the cluster');
  const instanceId = instanceIdOf(nodeObject?.spec?.providerID);
  if (!nodeObject) throw new UnknownNodeError(node, 'no such node in the cluster');
  if (!instanceId) throw new UnknownNodeError(node, 'the node has no EC2 provider ID');
  const [instance]: readonly Ec2Instance[] = await deps.ec2.describeInstances([instanceId]);
  if (!instance || (instance.state !== 'running' && instance.state !== 'pending')) {
    throw new UnknownNodeError(node, `instance ${instanceId} is not running`);
  }
  // Undefined: another caller created it first; read theirs.
  const created = await createPool(deps, node, instance, allocatablePods(nodeObject));
  const current = created ?? (await deps.store.getPool(node));
  if (!current) throw new UnknownNodeError(node);
  return current;
}

/** Whether an aws-node pod runs on the node: one listing of the node's aws-node pods. */
async function vpcCniRunsOn(deps: EniDeps, node: string): Promise<boolean> {
  for await (const pod of deps.cluster.listPods({
    fieldSelector: `spec.nodeName=${node}`,
    labelSelector: VPC_CNI_POD_SELECTOR,
  })) {
    if (isLiveVpcCniPod(pod)) return true;
  }
  return false;
}

/**
 * Gives the pod an IP on the node's pool: the one it already holds (a repeated request), its
 * sticky reservation, or the most recently rested ready IP; refills the pool on the spot when none is
 * ready and the instance has room, and asks for a background refill when the claim leaves the
 * pool below its low watermark.
 */
export async function assignIp(
  deps: AssignDeps,
  node: string,
  request: AssignRequest,
): Promise<IpAssignment> {
  const pool = await poolFor(deps, node);
  if (pool.handout === 'node') throw new NodeHandsOutError(node);
  const key = podKey(request.namespace, request.pod);
  // Looked up only when a claim is due: a repeated request answers from the first read.
  let sticky = request.sticky;

  let refills = 0;
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const now = deps.now();
    const state = await deps.store.loadNode(node);
    const held = state.ips.find((ip) => ip.state === 'assigned' && ip.pod === key);
    if (held) return answer(pool, state, await keepFor(deps, node, held, request.containerId));
    const candidates = claimCandidates(state.ips, key, now, deps.policy.cooldownMs);
    if (candidates.length === 0) {
      // Every slot of the instance holds an address and none is ready: a refill cannot help.
      const stats = poolStats(pool, state.ips, now, deps.policy.cooldownMs, deps.policy.mode);
      if (refills >= MAX_REFILLS || stats.total >= stats.capacity) break;
      await refillNow(deps, pool);
      refills++;
      continue;
    }
    // Walk down the list on a lost race: concurrent callers spread over the ready IPs in order
    // instead of all retrying the head.
    sticky ??= await lookUpSticky(deps, request);
    for (const candidate of candidates.slice(0, CANDIDATES_PER_READ)) {
      try {
        await claim(deps, node, { key, containerId: request.containerId }, sticky, candidate, now);
        await unlessHandedOver(deps, node, candidate);
        await refillAheadIfDue(deps, pool, state.ips, candidate, now);
        return answer(pool, state, candidate);
      } catch (error) {
        if (!(error instanceof EniConflictError)) throw error;
        // A repeat of this request may have won the address: then it is this pod's answer.
        const winner = await deps.store.getIp(node, candidate.ip);
        if (winner?.state === 'assigned' && winner.pod === key) {
          return answer(pool, state, await keepFor(deps, node, winner, request.containerId));
        }
      }
    }
  }
  throw await exhaustion(deps, pool);
}

/**
 * Gives a claim back, and refuses the pod, when the node's berth-cni began handing the pool out
 * itself while the claim was on its way: the node may have read the address as free before the
 * claim landed. A claim that landed before the node's set was read shows in it as held.
 */
async function unlessHandedOver(deps: EniDeps, node: string, claimed: IpRecord): Promise<void> {
  const pool = await deps.store.getPool(node);
  if (pool?.handout !== 'node') return;
  const record = await deps.store.getIp(node, claimed.ip);
  if (record?.state === 'assigned') await releaseRecord(deps, node, record, deps.now());
  throw new NodeHandsOutError(node);
}

/**
 * The address the pod already holds, now held for `containerId`: a new sandbox of the same pod
 * takes the IP over, so a late DEL of the old sandbox cannot free it.
 */
async function keepFor(
  deps: EniDeps,
  node: string,
  held: IpRecord,
  containerId: string | undefined,
): Promise<IpRecord> {
  if (containerId === undefined || held.containerId === containerId) return held;
  const taken: IpRecord = { ...held, containerId, version: held.version + 1 };
  try {
    await deps.store.commit(node, [{ put: taken, expectedVersion: held.version }]);
    return taken;
  } catch (error) {
    if (!(error instanceof EniConflictError)) throw error;
    // Released, or handed to yet another sandbox, meanwhile: the plugin asks again.
    throw new HolderContendedError(
      `node ${node}: ${held.ip} changed while it was handed over to container ${containerId} (another request of the same pod wrote it first); retry`,
      100,
    );
  }
}

async function lookUpSticky(deps: EniDeps, request: AssignRequest): Promise<boolean> {
  const pod = await deps.cluster.getPod(request.namespace, request.pod);
  return pod ? isStickyPod(pod) : false;
}

async function claim(
  deps: EniDeps,
  node: string,
  holder: { readonly key: string; readonly containerId: string | undefined },
  sticky: boolean,
  ip: IpRecord,
  now: number,
): Promise<void> {
  const claimed: IpRecord = {
    kind: 'ip',
    ip: ip.ip,
    eniId: ip.eniId,
    ...(ip.prefix === undefined ? {} : { prefix: ip.prefix }),
    state: 'assigned',
    pod: holder.key,
    ...(holder.containerId === undefined ? {} : { containerId: holder.containerId }),
    sticky,
    assignedAt: now,
    releasedAt: ip.releasedAt,
    ...(ip.releaseId === undefined ? {} : { releaseId: ip.releaseId }),
    createdAt: ip.createdAt,
    version: ip.version + 1,
  };
  await deps.store.commit(node, [{ put: claimed, expectedVersion: ip.version }]);
}

/** Grows the pool now, for a pod that found no ready IP; waits a little if another writer holds it. */
export async function refillNow(deps: EniDeps, pool: PoolRecord): Promise<void> {
  for (let wait = 0; wait <= LEASE_WAITS; wait++) {
    if ((await refillPool(deps, pool, 1)).outcome !== 'busy') return;
    // Another writer (the pass, or a concurrent refill) is growing this pool: give it a moment.
    await deps.sleep(LEASE_WAIT_MS);
    const state = await deps.store.loadNode(pool.node);
    if (claimCandidates(state.ips, '', deps.now(), deps.policy.cooldownMs).length > 0) return;
  }
}

/**
 * After a claim: asks for a background top-up when the pool fell below its low watermark. The
 * counts are the read the claim was made from, with the claimed address taken.
 */
async function refillAheadIfDue(
  deps: AssignDeps,
  pool: PoolRecord,
  ips: readonly IpRecord[],
  claimed: IpRecord,
  now: number,
): Promise<void> {
  const after = ips.map(
    (ip): IpRecord => (ip.ip === claimed.ip ? { ...ip, state: 'assigned', assignedAt: now } : ip),
  );
  const stats = poolStats(pool, after, now, deps.policy.cooldownMs, deps.policy.mode);
  if (refillAheadDue(stats, surgeOf(after, now), deps.policy)) {
    await deps.refills.request(pool.node);
  }
}

/** The error for a pool that could not serve: full, subnet exhausted, or busy. */
async function exhaustion(deps: EniDeps, pool: PoolRecord): Promise<Error> {
  const now = deps.now();
  const state = await deps.store.loadNode(pool.node);
  const capacity = poolCapacity(pool, deps.policy.mode);
  const busy = state.ips.filter((ip) => ip.state !== 'free').length;
  if (busy >= capacity) {
    return new PoolExhaustedError(
      pool.node,
      `all ${capacity} addresses of ${pool.instanceType} are in use`,
    );
  }
  const exhaustedUntil = await deps.store.subnetShortUntil(pool.subnetId, 'addresses');
  if (exhaustedUntil > now) {
    return new PoolExhaustedError(
      pool.node,
      `subnet ${pool.subnetId} (${pool.subnetCidr}) has no free addresses`,
    );
  }
  const cooling = state.ips.filter((ip) => ip.state === 'free').length;
  if (cooling > 0 && state.ips.length >= capacity) {
    return new PoolExhaustedError(
      pool.node,
      `the free addresses are cooling down or reserved for sticky pods`,
    );
  }
  return new PoolBusyError(`node ${pool.node}: no address ready yet; retry shortly`, 1000);
}

/**
 * Releases an IP for its holder: the pod record goes (or, for a sticky pod, stays as a reservation
 * until stickySeconds pass) and the address starts its cooldown. Releasing an IP that is not
 * assigned succeeds and answers `released: false`, on a node berth keeps no pool for too (never
 * pooled, or its pool already removed): a CNI DEL for it must succeed. One another pod (or
 * another container of the pod, when the release names one) now holds raises
 * `IpHeldByAnotherError` and changes nothing: the write is conditional on the record version
 * whose holder was checked.
 */
export async function releaseIp(
  deps: EniDeps,
  node: string,
  ip: string,
  holder: ReleaseHolder,
): Promise<{ readonly released: boolean }> {
  const key = podKey(holder.namespace, holder.pod);
  const asked = holder.containerId === undefined ? key : `${key} (container ${holder.containerId})`;
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const record = await deps.store.getIp(node, ip);
    // An address berth never had on a node without a pool: the node may be Auto Mode's.
    if (record === undefined && attempt === 0 && !(await deps.store.getPool(node, 'eventual'))) {
      await refuseAutoModeNode(deps, node);
    }
    if (record?.state !== 'assigned') return { released: false };
    const containerDiffers =
      holder.containerId !== undefined &&
      record.containerId !== undefined &&
      record.containerId !== holder.containerId;
    if (record.pod !== key || containerDiffers) {
      const held = record.containerId
        ? `${record.pod} (container ${record.containerId})`
        : record.pod;
      throw new IpHeldByAnotherError(ip, asked, held ?? 'another holder');
    }
    const releaseId = deps.newId();
    try {
      await releaseRecord(deps, node, record, deps.now(), releaseId);
      return { released: true };
    } catch (error) {
      if (!(error instanceof EniConflictError)) throw error;
      // A write that landed and was sent again (the SDK retrying after a lost answer) fails its
      // own condition. The release id it wrote survives every later claim of the address, so
      // the record says whether this release is the one that landed.
      const after = await deps.store.getIp(node, ip);
      if (after?.releaseId === releaseId) return { released: true };
    }
  }
  // Every read found the record changed again, by the holder's own requests (its sandboxes' ADD
  // and DEL) or the pass: nothing is wrong, this release only has to come again.
  throw new HolderContendedError(
    `node ${node}: ${ip} changed under each of ${CLAIM_ATTEMPTS} tries to release it for ${asked}; retry`,
    100,
  );
}

/**
 * Frees an assigned IP record at `now`, conditional on the version whose holder the caller
 * checked. A sticky holder keeps a reservation on the free record until stickySeconds pass.
 */
export async function releaseRecord(
  deps: EniDeps,
  node: string,
  record: IpRecord,
  now: number,
  releaseId: string = deps.newId(),
): Promise<void> {
  const key = record.pod;
  const sticky = record.sticky && deps.policy.stickyMs > 0 && key !== undefined;
  const freed: IpRecord = {
    kind: 'ip',
    ip: record.ip,
    eniId: record.eniId,
    ...(record.prefix === undefined ? {} : { prefix: record.prefix }),
    state: 'free',
    sticky: false,
    releasedAt: now,
    releaseId,
    createdAt: record.createdAt,
    version: record.version + 1,
    ...(sticky ? { pod: key, reservedUntil: now + deps.policy.stickyMs } : {}),
  };
  await deps.store.commit(node, [{ put: freed, expectedVersion: record.version }]);
}

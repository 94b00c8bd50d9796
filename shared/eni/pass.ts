/**
 * One ENI pool pass (`berth eni --once`, the scheduled Lambda, and the EC2 instance state-change
 * rule): list the actual state (pools, berth ENIs in one paginated tag-filtered Describe,
 * instances, nodes, pods), then the desired one; reconcile each pool, refill or trim it, remove
 * pools of terminated instances, sweep leaked ENIs; collect per-item failures; return a summary.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../aws/error-codes.js';
import { forEachBounded } from '../concurrency/bounded.js';
import {
  allNetworkInterfaces,
  BERTH_TAGS,
  type Ec2Instance,
  type Ec2NetworkInterface,
  type InstanceState,
  isInstanceState,
  primaryInterfaceOf,
  tagValue,
} from '../ec2/network.js';
import { isAutoModeNode } from '../node-pool/auto-mode.js';
import { instanceIdOf } from '../node-pool/provider-id.js';
import { isLiveVpcCniPod } from '../node-pool/vpc-cni.js';
import { type EniDeps, leaseHolder } from './deps.js';
import { floorFor, groupPeak, hourPeak, openingFor, withUse } from './group-use.js';
import { gateRelease } from './handout/handshake.js';
import { markWanted } from './handout/node-api.js';
import { poolInStep } from './in-step.js';
import { NO_GROUP_USE, type NodeState, type PoolRecord, podKey } from './model.js';
import { withPassMarks } from './pass-marks.js';
import { ENI_TIMINGS } from './policy.js';
import {
  type ActionTally,
  applyPlan,
  type EniFailure,
  newTally,
  spendsMutations,
} from './pool-actions.js';
import { allocatablePods, createPool } from './pools.js';
import {
  newReconcileTally,
  type ReconcileTally,
  reconcilePool,
  taggedCreatedAt,
} from './reconcile.js';
import { planStoredPool } from './refill.js';
import { watchedStore } from './watched-store.js';

/** Options of one pass. */
export interface EniPassOptions {
  /** Limit the pass to these instances (an EC2 state-change event); default: every pool. */
  readonly instanceIds?: readonly string[];
  /** Pools worked on at once. */
  readonly concurrency?: number;
}

/** The JSON summary of a pass. */
export interface EniPassSummary {
  readonly pools: number;
  readonly poolsCreated: number;
  readonly poolsRemoved: number;
  readonly poolsDraining: number;
  /** Pools left for the next pass: another writer held the lease, or the instance is stopped. */
  readonly poolsSkipped: number;
  /** Pools that needed nothing: looked at without their lease, no write made. */
  readonly poolsInStep: number;
  /**
   * EKS Auto Mode nodes left without a pool: Auto Mode's own CNI gives their pods IPs
   * (node-pool/auto-mode.ts). A pool made for one before is drained like a departed node's.
   */
  readonly autoModeNodes: number;
  /**
   * Nodes where the VPC CNI's aws-node runs, left without a pool: its ipamd takes the primary
   * ENI's addresses for its own (node-pool/vpc-cni.ts). A pool made for one before drains.
   */
  readonly vpcCniNodes: number;
  readonly ipsAssigned: number;
  /** Addresses an unseen earlier assign left on an ENI, recorded instead of assigned again. */
  readonly ipsAdopted: number;
  readonly ipsUnassigned: number;
  readonly enisCreated: number;
  readonly enisDeleted: number;
  readonly leakedEnisDeleted: number;
  readonly enisTagged: number;
  readonly reconcile: ReconcileTally;
  /** Addresses held by pods / idle, over all pools after the pass's plans. */
  readonly assignedIps: number;
  readonly idleIps: number;
  readonly budgetSpent: boolean;
  readonly exhaustedSubnets: readonly string[];
  readonly failures: readonly EniFailure[];
  readonly durationMs: number;
}

const DEFAULT_CONCURRENCY = 4;
const GONE_STATES: ReadonlySet<InstanceState> = new Set(['shutting-down', 'terminated']);
const PAUSED_STATES: ReadonlySet<InstanceState> = new Set(['stopping', 'stopped']);

/** An EC2 instance state-change notification (EventBridge `detail`). */
export interface InstanceStateChange {
  readonly instanceId: string;
  readonly state: InstanceState;
}

/** Reads the `detail` of an "EC2 Instance State-change Notification"; undefined when it is not one. */
export function parseInstanceStateChange(detail: unknown): InstanceStateChange | undefined {
  if (typeof detail !== 'object' || detail === null) return undefined;
  const fields = detail as Record<string, unknown>;
  const instanceId = fields['instance-id'];
  const state = fields.state;
  if (typeof instanceId !== 'string' || !/^i-[0-9a-f]+$/.test(instanceId)) return undefined;
  if (!isInstanceState(state)) return undefined;
  return { instanceId, state };
}

/**
 * Whether a pass had no pool at all to look at and met no failure: for an instance event, the
 * instance is none of this cluster's (or its node has not registered yet), and there is nothing
 * to record. A pass that could not create the pool of its own new node failed instead, and is
 * recorded (its budget metric, its alarm) like any other.
 */
export function passedNoPool(summary: EniPassSummary): boolean {
  return summary.pools + summary.poolsRemoved === 0 && summary.failures.length === 0;
}

/** Runs the pass for the one instance an EC2 state-change event names. */
export function handleInstanceStateChange(
  deps: EniDeps,
  change: InstanceStateChange,
): Promise<EniPassSummary> {
  return runEniPass(deps, { instanceIds: [change.instanceId] });
}

interface PassCounters {
  poolsCreated: number;
  poolsRemoved: number;
  poolsDraining: number;
  poolsSkipped: number;
  poolsInStep: number;
  leakedEnisDeleted: number;
  enisTagged: number;
  assignedIps: number;
  idleIps: number;
  autoModeNodes: number;
  vpcCniNodes: number;
}

/** One pass over every pool (or the pools of `options.instanceIds`). */
export async function runEniPass(
  given: EniDeps,
  options: EniPassOptions = {},
): Promise<EniPassSummary> {
  const deps: EniDeps = { ...given, store: withPassMarks(given.store) };
  const started = deps.now();
  const scope = options.instanceIds ? new Set(options.instanceIds) : undefined;
  const actions = newTally();
  const reconcile = newReconcileTally();
  const counters: PassCounters = {
    poolsCreated: 0,
    poolsRemoved: 0,
    poolsDraining: 0,
    poolsSkipped: 0,
    poolsInStep: 0,
    leakedEnisDeleted: 0,
    enisTagged: 0,
    assignedIps: 0,
    idleIps: 0,
    autoModeNodes: 0,
    vpcCniNodes: 0,
  };

  // What the node groups needed so far: each pool's floor (`group-use.ts`).
  const groups = (await attempt(actions, 'GroupUse', () => deps.store.groupUse())) ?? NO_GROUP_USE;
  const floorOf = (pool: PoolRecord) =>
    floorFor(groupPeak(groups, pool.instanceType, started), deps.policy.minIdle);
  const openingOf = (pool: PoolRecord) =>
    openingFor(hourPeak(groups, pool.instanceType, started), floorOf(pool), deps.policy.minIdle);
  /** The most addresses in use on one node of each type, as this pass saw them. */
  const inUse = new Map<string, number>();
  // Actual state first.
  const pools: PoolRecord[] = [];
  for await (const pool of deps.store.listPools()) {
    if (!scope || scope.has(pool.instanceId)) pools.push(pool);
  }
  // Desired: the nodes (and their instances); the pods on them after EC2's view.
  const nodes = new Map<string, { readonly instanceId: string; readonly maxPods?: number }>();
  for await (const node of deps.cluster.listNodes()) {
    const instanceId = instanceIdOf(node.spec?.providerID);
    const name = node.metadata?.name;
    if (!name || !instanceId || (scope && !scope.has(instanceId))) continue;
    // Not a node of berth's: an existing pool of one drains as a departed node's would.
    if (isAutoModeNode(node, deps.autoMode)) counters.autoModeNodes++;
    else nodes.set(name, { instanceId, maxPods: allocatablePods(node) });
  }
  const { livePods, vpcCniNodes } = await listLivePods(deps, scope ? [...nodes.keys()] : undefined);
  // Nor a node the VPC CNI serves: an existing pool of one drains too.
  for (const node of vpcCniNodes) if (nodes.delete(node)) counters.vpcCniNodes++;
  // Without EC2's view nothing is reconciled or swept this pass (an empty view would look like
  // every ENI vanished), but pools are still refilled.
  // An instance event for an instance that is none of this cluster's (no pool, no node: another
  // cluster's, in a stack of several) needs no EC2 call at all; a leaked ENI of this cluster on
  // it, with neither, is the scheduled pass's sweep to find.
  const nothingInScope = scope !== undefined && pools.length === 0 && nodes.size === 0;
  const interfaces = nothingInScope
    ? []
    : await attempt(actions, 'DescribeNetworkInterfaces', async () => {
        const found: Ec2NetworkInterface[] = [];
        for await (const eni of allNetworkInterfaces(deps.ec2, {
          filters: {
            [`tag:${BERTH_TAGS.cluster}`]: [deps.clusterName],
            ...(scope ? { [`tag:${BERTH_TAGS.instance}`]: [...scope] } : {}),
          },
        })) {
          found.push(eni);
        }
        return found;
      });

  const pooled = new Set(pools.map((pool) => pool.node));
  const instanceIds = new Set([
    ...pools.map((pool) => pool.instanceId),
    ...[...nodes].filter(([node]) => !pooled.has(node)).map(([, seen]) => seen.instanceId),
  ]);
  const instances = await attempt(actions, 'DescribeInstances', async () => {
    const found = new Map<string, Ec2Instance>();
    if (instanceIds.size === 0) return found;
    for (const instance of await deps.ec2.describeInstances([...instanceIds])) {
      found.set(instance.instanceId, instance);
    }
    return found;
  });

  // Pools for nodes that have none yet (one DescribeSubnets for all of them).
  const newcomers = [...nodes].flatMap(([node, seen]) => {
    const instance = instances?.get(seen.instanceId);
    return !pooled.has(node) && instance && !GONE_STATES.has(instance.state)
      ? [{ node, instance, maxPods: seen.maxPods }]
      : [];
  });
  if (newcomers.length > 0) {
    const subnets = new Map<string, string>();
    try {
      const ids = [...new Set(newcomers.map((n) => n.instance.subnetId))];
      for (const subnet of await deps.ec2.describeSubnets(ids)) {
        subnets.set(subnet.subnetId, subnet.cidr);
      }
      for (const { node, instance, maxPods } of newcomers) {
        const pool = await createPool(deps, node, instance, maxPods, subnets);
        if (pool) {
          pools.push(pool);
          counters.poolsCreated++;
        }
      }
    } catch (error) {
      actions.failures.push(failureOf('CreatePool', error));
    }
  }

  const byInstance = new Map<string, Ec2NetworkInterface[]>();
  for (const eni of interfaces ?? []) {
    const owner = eni.attachment?.instanceId ?? tagValue(eni.tags, BERTH_TAGS.instance);
    if (!owner) continue;
    const list = byInstance.get(owner) ?? [];
    list.push(eni);
    byInstance.set(owner, list);
  }

  await forEachBounded(pools, options.concurrency ?? DEFAULT_CONCURRENCY, async (pool) => {
    try {
      if (!instances) {
        counters.poolsSkipped++;
        return;
      }
      await passPool(deps, pool, {
        instance: instances.get(pool.instanceId),
        inCluster: nodes.get(pool.node)?.instanceId === pool.instanceId,
        interfaces: interfaces ? (byInstance.get(pool.instanceId) ?? []) : undefined,
        livePods: livePods.get(pool.node) ?? new Set(),
        floor: floorOf(pool),
        opening: openingOf(pool),
        seen: (assigned) =>
          inUse.set(pool.instanceType, Math.max(assigned, inUse.get(pool.instanceType) ?? 0)),
        actions,
        reconcile,
        counters,
      });
    } catch (error) {
      actions.failures.push({ ...failureOf('PoolPass', error), node: pool.node });
    }
  });

  if (interfaces) await sweepLeakedEnis(deps, interfaces, actions, counters);
  // A pass that lost the race to another's write leaves its figures to the next pass.
  const learned = withUse(groups, inUse, started);
  if (learned !== groups) {
    await attempt(actions, 'GroupUse', () => deps.store.putGroupUse(learned, groups.version));
  }

  return {
    pools: pools.length - counters.poolsRemoved,
    poolsCreated: counters.poolsCreated,
    poolsRemoved: counters.poolsRemoved,
    poolsDraining: counters.poolsDraining,
    poolsSkipped: counters.poolsSkipped,
    poolsInStep: counters.poolsInStep,
    autoModeNodes: counters.autoModeNodes,
    vpcCniNodes: counters.vpcCniNodes,
    ipsAssigned: actions.ipsAssigned,
    ipsAdopted: actions.ipsAdopted,
    ipsUnassigned: actions.ipsUnassigned,
    enisCreated: actions.enisCreated,
    enisDeleted: actions.enisDeleted,
    leakedEnisDeleted: counters.leakedEnisDeleted,
    enisTagged: counters.enisTagged,
    reconcile,
    assignedIps: counters.assignedIps,
    idleIps: counters.idleIps,
    budgetSpent: actions.budgetSpent,
    exhaustedSubnets: [...actions.exhaustedSubnets].sort(),
    failures: actions.failures,
    durationMs: deps.now() - started,
  };
}

interface PoolContext {
  readonly instance: Ec2Instance | undefined;
  readonly inCluster: boolean;
  /** Undefined when Describe failed: skip reconciliation. */
  readonly interfaces: readonly Ec2NetworkInterface[] | undefined;
  readonly livePods: ReadonlySet<string>;
  /** The pool's floor from its node group's use. */
  readonly floor: number;
  /** How far its first growth goes: its node group's use in this hour. */
  readonly opening: number;
  /** Hears how many addresses the pool's pods hold. */
  readonly seen: (assigned: number) => void;
  readonly actions: ActionTally;
  readonly reconcile: ReconcileTally;
  readonly counters: PassCounters;
}

async function passPool(deps: EniDeps, found: PoolRecord, ctx: PoolContext): Promise<void> {
  const now = deps.now();
  const { instance, counters } = ctx;
  if (
    (instance && GONE_STATES.has(instance.state)) ||
    (!instance && now - found.createdAt >= ENI_TIMINGS.missingInstanceGraceMs)
  ) {
    // EC2 deletes the attached berth ENIs with the instance (DeleteOnTermination); any left
    // `available` are swept as leaks.
    await deps.store.deletePool(found.node);
    counters.poolsRemoved++;
    return;
  }
  if (!instance || PAUSED_STATES.has(instance.state)) {
    counters.poolsSkipped++;
    return;
  }
  let pool = found;
  const floor = ctx.inCluster ? ctx.floor : 0;
  // The opening counts only until the pool's first growth: the pass writes it while the pool
  // is new (the hour's value at its first plan), so the hours do not rewrite every pool.
  const opening = ctx.inCluster && pool.opening === undefined ? ctx.opening : pool.opening;
  if (pool.draining === ctx.inCluster || (pool.floor ?? 0) !== floor || pool.opening !== opening) {
    const next = {
      ...pool,
      draining: !ctx.inCluster,
      floor,
      ...(opening === undefined ? {} : { opening }),
      version: pool.version + 1,
    };
    await deps.store.putPool(next, pool.version);
    pool = next;
  }
  if (pool.draining) counters.poolsDraining++;
  const primary = primaryInterfaceOf(instance);
  // A look without the lease first: a pool in step needs no writes at all (`in-step.ts`).
  const look = await deps.store.loadNode(pool.node, 'eventual');
  const lookPlan = gateRelease(pool, await planStoredPool(deps, pool, look, now), look.ips, now);
  ctx.seen(lookPlan.plan.stats.assigned);
  if (
    lookPlan.marks.length === 0 &&
    poolInStep({
      pool,
      state: look,
      interfaces: ctx.interfaces,
      ...(primary ? { primary } : {}),
      livePods: ctx.livePods,
      plan: lookPlan.plan,
    })
  ) {
    counters.poolsInStep++;
    countAddresses(counters, look);
    return;
  }
  const holder = leaseHolder(deps);
  if (!(await deps.store.tryLease(pool.node, holder, now, now + deps.leaseMs))) {
    counters.poolsSkipped++;
    return;
  }
  try {
    // The node is read again only after this pool's own writes (`watched-store.ts`).
    const watched = watchedStore(deps.store);
    const poolDeps = { ...deps, store: watched.store };
    const reread = async (read: number, state: NodeState) =>
      watched.writes() === read ? state : deps.store.loadNode(pool.node);
    let state = await deps.store.loadNode(pool.node);
    if (ctx.interfaces) {
      const read = watched.writes();
      await reconcilePool(
        poolDeps,
        pool,
        state,
        { interfaces: ctx.interfaces, ...(primary ? { primary } : {}), livePods: ctx.livePods },
        ctx.actions,
        ctx.reconcile,
      );
      state = await reread(read, state);
    }
    const planAt = deps.now();
    const { plan, marks } = gateRelease(
      pool,
      await planStoredPool(poolDeps, pool, state, planAt),
      state.ips,
      planAt,
    );
    await markWanted(poolDeps, pool.node, marks);
    const planned = watched.writes();
    if (!ctx.actions.budgetSpent) await applyPlan(poolDeps, pool, state, plan, ctx.actions);
    const after = await reread(planned, state);
    countAddresses(counters, after);
    // Drained: nothing of berth's left on the instance (its primary ENI stays with it).
    if (
      pool.draining &&
      after.enis.every((eni) => eni.primary) &&
      after.ips.length === 0 &&
      after.intents.length === 0
    ) {
      await deps.store.deletePool(pool.node);
      counters.poolsRemoved++;
    }
  } finally {
    await deps.store.endLease(pool.node, holder);
  }
}

function countAddresses(counters: PassCounters, state: NodeState): void {
  counters.assignedIps += state.ips.filter((ip) => ip.state === 'assigned').length;
  counters.idleIps += state.ips.filter((ip) => ip.state === 'free').length;
}

/**
 * Live pods by node (bound, and not Succeeded or Failed), and the nodes an aws-node pod runs on,
 * from one listing.
 */
async function listLivePods(
  deps: EniDeps,
  nodes: readonly string[] | undefined,
): Promise<{ livePods: Map<string, Set<string>>; vpcCniNodes: Set<string> }> {
  const byNode = new Map<string, Set<string>>();
  const vpcCniNodes = new Set<string>();
  const add = (pod: V1Pod) => {
    const node = pod.spec?.nodeName;
    const phase = pod.status?.phase;
    if (!node || phase === 'Succeeded' || phase === 'Failed') return;
    if (isLiveVpcCniPod(pod)) vpcCniNodes.add(node);
    const key = podKey(pod.metadata?.namespace ?? 'default', pod.metadata?.name ?? '');
    const set = byNode.get(node) ?? new Set<string>();
    set.add(key);
    byNode.set(node, set);
  };
  if (nodes === undefined) {
    for await (const pod of deps.cluster.listPods({ pageSize: 500 })) add(pod);
  } else {
    for (const node of nodes) {
      for await (const pod of deps.cluster.listPods({ fieldSelector: `spec.nodeName=${node}` })) {
        add(pod);
      }
    }
  }
  return { livePods: byNode, vpcCniNodes };
}

/**
 * Deletes berth ENIs left `available` (a crash between create and attach, a detach without its
 * delete, a terminated instance without DeleteOnTermination) once older than the leak grace. One
 * without a created-at tag gets one now and waits a full grace.
 */
async function sweepLeakedEnis(
  deps: EniDeps,
  interfaces: readonly Ec2NetworkInterface[],
  actions: ActionTally,
  counters: PassCounters,
): Promise<void> {
  const now = deps.now();
  for (const eni of interfaces) {
    if (eni.status !== 'available' || eni.attachment || actions.budgetSpent) continue;
    const createdAt = taggedCreatedAt(eni);
    try {
      if (createdAt === undefined) {
        await deps.ec2.createTags({
          resourceIds: [eni.eniId],
          tags: [{ key: BERTH_TAGS.createdAt, value: new Date(now).toISOString() }],
        });
        counters.enisTagged++;
      } else if (now - createdAt >= ENI_TIMINGS.leakedEniGraceMs) {
        await deps.ec2.deleteNetworkInterface({ eniId: eni.eniId });
        counters.leakedEnisDeleted++;
      }
    } catch (error) {
      if (isNotFound(error)) continue;
      if (spendsMutations(error)) actions.budgetSpent = true;
      actions.failures.push({ ...failureOf('SweepLeakedEni', error), eniId: eni.eniId });
    }
  }
}

/** Runs a listing the pass can do without; a failure is recorded and answers undefined. */
async function attempt<T>(
  actions: ActionTally,
  action: string,
  run: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await run();
  } catch (error) {
    if (spendsMutations(error)) actions.budgetSpent = true;
    actions.failures.push(failureOf(action, error));
    return undefined;
  }
}

function failureOf(action: string, error: unknown): EniFailure {
  return {
    action,
    code: (error as { name?: string }).name ?? 'Error',
    message: error instanceof Error ? error.message : String(error),
  };
}

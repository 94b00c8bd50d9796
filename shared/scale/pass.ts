/**
 * One node scale pass: under a lease, list the managed nodes and every pod,
 * plan, then act. Each node change is a compare-and-swap JSON patch, so a node someone changed
 * since the listing is left for the next pass instead of overwritten. Failures are collected per
 * action; the rest of the plan still runs.
 *
 * A drained node is removed in one pass once its cordon is a commit window old (removal.ts):
 * marked `berth.dev/removal-started-at`, its pods looked at, its instance released through the
 * pool, then the Node deleted. The Node carries the instance id until the very last step, so a
 * pass that dies anywhere leaves a marked Node that the next pass finishes. Deleting the Node
 * first (the contract's wording) would lose the instance id with it.
 *
 * The pass remembers what it needs across runs (memory.ts: surplus age, arrivals, provisioning
 * times, removals) in the store it is given, loaded and saved under the lease.
 */

import { forEachBounded } from '../concurrency/bounded.js';
import type { ScaleConfig } from '../config/schema.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { KubernetesConflictError } from '../k8s/errors.js';
import type { Lease } from '../lease/lease.js';
import { withLease } from '../lease/lease.js';
import { autoModePoolProblem } from '../node-pool/auto-mode.js';
import { deletesNodes, karpenterNodePoolOf, type NodePool } from '../node-pool/node-pool.js';
import { CORDONED_AT, REMOVAL_STARTED_AT, SESSION_LABEL_VALUES } from '../vocabulary/labels.js';
import {
  annotationPath,
  type JsonPatchOperation,
  setMetadataEntries,
} from '../vocabulary/patch.js';
import { nodePoolLifetimeMs } from './drain.js';
import { planEvictions } from './eviction.js';
import { agonesOwnerOf, indexAgones } from './game-state.js';
import { passOutcome, rememberPass, withArrivals } from './memory.js';
import { PLACEHOLDER_DEPLOYMENT, PLACEHOLDER_NAMESPACE } from './placeholders.js';
import {
  demandLevel,
  type PlannedAction,
  planScale,
  type ScaleAction,
  type ScaleNote,
  type ScalePlan,
  type SessionServer,
  type SlotTally,
  toScaleAction,
} from './plan.js';
import { type ScalePolicy, scalePolicy } from './policy.js';
import { type ProtectionPatch, planProtection } from './protection.js';
import {
  finishRemoval,
  removeNode,
  stillBerthCordoned,
  withdrawalPatch,
  wouldRemove,
} from './removal.js';
import { formatRfc3339 } from './rfc3339.js';
import { EMPTY_SESSIONS, sessionStartMs, withSessions } from './sessions.js';
import { buildSnapshot, type ClusterSnapshot, type NodeView } from './snapshot.js';
import type { ScaleMemory, ScaleMemoryStore } from './store.js';
import { scaleUpOnly, triggeredOutcome, triggeredView } from './trigger.js';

/** The lease that makes the pass exclusive across Lambdas and local timers. */
export const SCALE_LEASE_NAME = 'scale';
/** `component` of the Events the pass records. */
export const SCALE_EVENT_COMPONENT = 'berth-scale';
/** Event reasons, one per kind of decision. */
export const SCALE_EVENT_REASONS = {
  cordon: 'BerthCordoned',
  uncordon: 'BerthUncordoned',
  delete: 'BerthNodeRemoved',
  withdraw: 'BerthRemovalWithdrawn',
  evict: 'BerthGameServerMoved',
  failed: 'BerthScaleFailed',
} as const;

/** What one pass talks to. */
export interface ScalePassDeps {
  readonly cluster: ClusterApi;
  readonly pool: NodePool;
  readonly lease: Lease;
  /** Epoch ms. */
  readonly now: () => number;
  /** Who runs the pass (e.g. the Lambda request id): the lease holder. */
  readonly holder: string;
  /** What the pass remembers between runs. */
  readonly memory: ScaleMemoryStore;
  /** NLB slots mode: each game node's slots whose chain serves, by node name. */
  readonly servingFrontSeats?: () => Promise<ReadonlyMap<string, number>>;
}

/** How to run the pass. */
export interface ScalePassOptions {
  /** Plan only: no lease, no patch, no pool call, no Event. */
  readonly dryRun: boolean;
  /** Replaces the policy derived from the config (tests, benchmark). */
  readonly policy?: ScalePolicy;
  /**
   * A pass admissions triggered between scheduled ones (trigger.ts): it only scales up, reads
   * the arrivals since the last scheduled pass as a pass's worth, and keeps the memory's per-pass
   * counts as they were.
   */
  readonly triggered?: boolean;
  /**
   * Hears the slots the plan counted and the cluster it planned on, at the pass's time: the
   * trigger's slack and the capacity figures come from them.
   */
  readonly onPlanned?: (tally: SlotTally, nowMs: number, snapshot: ClusterSnapshot) => void;
}

/** An action that failed, with why. */
export interface ScaleFailure {
  readonly action: ScaleAction;
  readonly error: string;
}

/** The outcome of a pass; `{ dryRun, actions }` is what the CLI must print. */
export interface ScaleReport {
  readonly dryRun: boolean;
  /** Planned actions (dry run), or the actions carried out, each reason ending with what the pool did. */
  readonly actions: readonly ScaleAction[];
  readonly failures: readonly ScaleFailure[];
  readonly notes: readonly ScaleNote[];
  /** Set when another holder had the lease, so this pass did nothing. */
  readonly leaseHeldBy?: { readonly holder: string; readonly expiresAtMs: number };
}

/**
 * Lists what the plan needs: managed nodes, every non-terminal pod, the Agones GameServers (only
 * when a pod is owned by one), the pool's size, and the lifetime a Karpenter NodePool (named by
 * `karpenterNodePool`) forces on its nodes; with `autoMode`, whether that NodePool is one of EKS
 * Auto Mode's; `counter`, the Counter or List multi-session servers count sessions in.
 */
export async function readClusterSnapshot(
  cluster: ClusterApi,
  pool: Pick<NodePool, 'describe'>,
  nodeSelector: string,
  karpenterNodePool?: string,
  autoMode = false,
  servingFrontSeats?: () => Promise<ReadonlyMap<string, number>>,
  counter?: string,
): Promise<ClusterSnapshot> {
  const nodes = [];
  for await (const node of cluster.listNodes({ labelSelector: nodeSelector, pageSize: 500 })) {
    nodes.push(node);
  }
  const pods = [];
  // All pods, not only game servers: DaemonSets and strays take CPU on game-server nodes too.
  for await (const pod of cluster.listPods({
    fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed',
    pageSize: 500,
  })) {
    pods.push(pod);
  }
  const gameServers = [];
  if (pods.some((pod) => agonesOwnerOf(pod) !== undefined)) {
    for await (const gs of cluster.listGameServers({ pageSize: 500 })) gameServers.push(gs);
  }
  const built = buildSnapshot(
    nodes,
    pods,
    await pool.describe(),
    indexAgones(gameServers),
    counter,
  );
  const seats = await servingFrontSeats?.();
  const snapshot = seats
    ? {
        ...built,
        nodes: built.nodes.map((node) => ({
          ...node,
          servingFrontSeats: seats.get(node.name) ?? 0,
        })),
      }
    : built;
  if (karpenterNodePool === undefined) return snapshot;
  const nodePool = await cluster.getKarpenterNodePool(karpenterNodePool);
  const lifetime = nodePoolLifetimeMs(nodePool);
  const problem = autoMode ? autoModePoolProblem(karpenterNodePool, nodePool) : undefined;
  return {
    ...snapshot,
    ...(lifetime === undefined ? {} : { nodeLifetimeMs: lifetime }),
    ...(problem === undefined ? {} : { poolProblem: problem }),
  };
}

/**
 * The memory with this pass's allocated game servers followed for their session lengths, each
 * from its allocation where the fleet records it (sessions.ts `sessionStartMs`).
 */
export function withSessionsSeen(memory: ScaleMemory, snapshot: ClusterSnapshot, now: number) {
  const allocated = snapshot.gameServers.flatMap((gs) => {
    const startedAtMs = sessionStartMs(gs);
    return gs.state === 'allocated' && startedAtMs !== undefined
      ? [{ id: gs.uid ?? `${gs.namespace}/${gs.name}`, createdAtMs: startedAtMs }]
      : [];
  });
  return { ...memory, sessions: withSessions(memory.sessions ?? EMPTY_SESSIONS, allocated, now) };
}

/** The whole plan of a pass, and the protection patches applied after its actions. */
export interface PassPlan {
  readonly plan: ScalePlan;
  readonly protection: readonly ProtectionPatch[];
}

/**
 * The whole plan of a pass: the node plan with the ready game servers to move off berth's
 * cordoned nodes, and the protection patches that follow game state.
 */
export function planPass(
  snapshot: ClusterSnapshot,
  policy: ScalePolicy,
  now: number,
  memory: ScaleMemory,
): PassPlan {
  const plan = planScale(snapshot, policy, now, memory);
  const evictions = planEvictions(snapshot, plan.actions, plan.tally.buffer.slots, policy);
  const protection = planProtection(snapshot, policy.drain);
  return {
    plan: {
      ...plan,
      actions: [...plan.actions, ...evictions.actions],
      notes: [
        ...(snapshot.poolProblem === undefined ? [] : [{ reason: snapshot.poolProblem }]),
        ...plan.notes,
        ...evictions.notes,
        ...protection.notes,
      ],
    },
    protection: protection.patches,
  };
}

/**
 * A pass's plan phase over what it listed and remembered: a scheduled pass counts this pass's
 * arrivals and sessions and plans the whole pass; a triggered one (trigger.ts) reads the arrivals
 * since the last scheduled pass as a pass's worth and only scales up. Answers the memory the
 * pass continues from.
 */
export function planOnSnapshot(
  snapshot: ClusterSnapshot,
  remembered: ScaleMemory,
  policy: ScalePolicy,
  now: number,
  triggered = false,
): PassPlan & { readonly memory: ScaleMemory } {
  if (triggered) {
    const view = triggeredView(
      remembered,
      snapshot.gameServerCreatedAtMs,
      now,
      policy.passIntervalMs,
    );
    const plan = planScale(snapshot, policy, now, view);
    return {
      memory: remembered,
      plan: { ...plan, actions: scaleUpOnly(plan.actions) },
      protection: [],
    };
  }
  const level =
    demandLevel(snapshot.gameServers, policy.slotMillis) ?? snapshot.gameServerCreatedAtMs.length;
  const memory = withSessionsSeen(
    withArrivals(remembered, snapshot.gameServerCreatedAtMs, now, policy, level),
    snapshot,
    now,
  );
  return { memory, ...planPass(snapshot, policy, now, memory) };
}

/** What a pass remembers once its actions (`done`) were carried out. */
export function memoryAfterPass(
  memory: ScaleMemory,
  snapshot: ClusterSnapshot,
  plan: ScalePlan,
  now: number,
  done: readonly ScaleAction[],
  triggered = false,
): ScaleMemory {
  const outcome = passOutcome(snapshot, plan, now, done);
  return rememberPass(memory, triggered ? triggeredOutcome(outcome, memory, done) : outcome);
}

/** Runs one scale pass over the nodes matching `config.nodeSelector`. */
export async function runScalePass(
  deps: ScalePassDeps,
  config: ScaleConfig,
  options: ScalePassOptions,
): Promise<ScaleReport> {
  const policy = options.policy ?? scalePolicy(config);
  /** Reads the cluster and the memory, with this pass's arrivals counted, and plans. */
  const planNow = async () => {
    const [snapshot, remembered] = await Promise.all([
      readClusterSnapshot(
        deps.cluster,
        deps.pool,
        config.nodeSelector,
        karpenterNodePoolOf(config.nodePool),
        config.nodePool.type === 'auto-mode',
        deps.servingFrontSeats,
        config.gameState.counter,
      ),
      deps.memory.load(),
    ]);
    const now = deps.now();
    return {
      snapshot,
      now,
      ...planOnSnapshot(snapshot, remembered, policy, now, options.triggered),
    };
  };
  if (options.dryRun) {
    const { plan, protection } = await planNow();
    return {
      dryRun: true,
      actions: plan.actions.map(toScaleAction),
      failures: [],
      notes: [...plan.notes, ...protection.map((p) => protectionNote(p, 'would set'))],
    };
  }
  const run = await withLease(
    deps.lease,
    { name: SCALE_LEASE_NAME, holder: deps.holder, ttlMs: policy.leaseTtlMs },
    async (renew) => {
      const { snapshot, memory, now, plan, protection } = await planNow();
      options.onPlanned?.(plan.tally, now, snapshot);
      const carried = await actOnPlan(deps, policy, plan, renew);
      const report = { ...carried, notes: [...carried.notes] };
      if (protection.length > 0) {
        await renew();
        await applyProtection(deps.cluster, policy, protection, report.notes);
      }
      await deps.memory.save(
        memoryAfterPass(memory, snapshot, plan, now, report.actions, options.triggered),
      );
      return report;
    },
  );
  if (!run.ran) {
    return {
      dryRun: false,
      actions: [],
      failures: [],
      notes: [{ reason: `another pass (${run.holder}) holds the scale lease` }],
      leaseHeldBy: { holder: run.holder, expiresAtMs: run.expiresAtMs },
    };
  }
  return run.value;
}

/** The groups of a plan, in the order they run; each group runs with bounded concurrency. */
const PHASES: ReadonlyArray<(a: PlannedAction) => boolean> = [
  (a) => (a.type === 'delete' && a.resume) || a.type === 'withdraw',
  (a) => a.type === 'uncordon',
  (a) => a.type === 'grow' || a.type === 'placeholders',
  (a) => a.type === 'cordon',
  (a) => a.type === 'evict',
  (a) => a.type === 'delete' && !a.resume,
];

/**
 * What the act phase changes: the cluster calls its actions make, the pool, and the clock its
 * cordons and marks are stamped with. The scale benchmark hands it its simulated cluster
 * (sim/stepped-cluster-api.ts), so what it measures is what the pass does.
 */
export interface ScaleActDeps {
  readonly cluster: Pick<
    ClusterApi,
    | 'patchNode'
    | 'listPods'
    | 'deleteNode'
    | 'createEvent'
    | 'scaleDeployment'
    | 'evictPod'
    | 'deleteGameServer'
    | 'patchGameServer'
  >;
  readonly pool: Pick<NodePool, 'type' | 'growTo' | 'releaseInstance'>;
  readonly now: () => number;
}

/**
 * The pass's act phase: carries out a plan's actions group by group (`PHASES`), each failure
 * collected, each action recorded as an Event. `renew` keeps the lease before each group (a
 * pass without one, the benchmark's, renews nothing).
 */
export async function actOnPlan(
  deps: ScaleActDeps,
  policy: ScalePolicy,
  plan: ScalePlan,
  renew: () => Promise<unknown> = async () => undefined,
): Promise<ScaleReport> {
  const done: ScaleAction[] = [];
  const failures: ScaleFailure[] = [];
  const notes: ScaleNote[] = [...plan.notes];
  for (const inPhase of PHASES) {
    const group = plan.actions.filter(inPhase);
    if (group.length === 0) continue;
    // Never change the cluster on a lease that may have passed to another pass.
    await renew();
    await forEachBounded(group, policy.concurrency, async (action) => {
      try {
        const outcome = await perform(deps, action, policy.sessionLabel);
        // A change the pool only reported (node pool none) says so first: its type stays the one
        // the CLI's JSON promises, and its reason never reads as a change made.
        const reason =
          'did' in outcome
            ? `${action.reason}${outcome.did}`
            : `${outcome.wouldHave}; ${action.reason}`;
        done.push({ ...toScaleAction(action), reason });
        await recordEvent(deps, action, 'Normal', reason, notes);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        failures.push({ action: toScaleAction(action), error: message });
        await recordEvent(deps, action, 'Warning', `${action.type} failed: ${message}`, notes);
      }
    });
  }
  return { dryRun: false, actions: done, failures, notes };
}

/**
 * Sets `label` to its `value` (`SESSION_LABEL_VALUES`) on each of `servers`, so the matchmaker's
 * "Allocated with room" selector skips the servers of a node being drained and takes those of a
 * node back in service. Each GameServer is patched on its own; a failure is reported in the
 * action's reason, not thrown: the node is cordoned (or uncordoned) either way.
 */
async function setSessionLabels(
  deps: ScaleActDeps,
  servers: readonly SessionServer[] | undefined,
  label: string | undefined,
  value: keyof typeof SESSION_LABEL_VALUES,
): Promise<string> {
  if (label === undefined || servers === undefined || servers.length === 0) return '';
  const wanted = SESSION_LABEL_VALUES[value];
  const failed: string[] = [];
  for (const gs of servers) {
    if (gs.labels?.[label] === wanted) continue;
    const patch = setMetadataEntries({ labels: gs.labels }, 'labels', { [label]: wanted });
    try {
      await deps.cluster.patchGameServer(gs.namespace, gs.name, patch);
    } catch (error) {
      failed.push(
        `${gs.namespace}/${gs.name} (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }
  const set = `; ${label}="${wanted}" on its ${servers.length} multi-session GameServer(s)`;
  return failed.length === 0 ? set : `${set}, not set on ${failed.join(', ')}`;
}

/**
 * What carrying out an action did: a suffix for its reason saying what the pool did, or, for a
 * change the pool only reports (node pool `none` grows and removes nothing), what it would have
 * done.
 */
type Outcome = { readonly did: string } | { readonly wouldHave: string };

/**
 * Carries out one action; with `sessionLabel` (multi-session servers), a cordon closes and an
 * uncordon opens the label on the node's counted GameServers once the node is patched.
 */
async function perform(
  deps: ScaleActDeps,
  action: PlannedAction,
  sessionLabel: string | undefined,
): Promise<Outcome> {
  const at = formatRfc3339(deps.now());
  switch (action.type) {
    case 'cordon':
      await deps.cluster.patchNode(action.target.name, cordonPatch(action.target, at));
      return { did: await setSessionLabels(deps, action.sessionServers, sessionLabel, 'closed') };
    case 'uncordon':
      await deps.cluster.patchNode(action.target.name, uncordonPatch(action.target));
      return { did: await setSessionLabels(deps, action.sessionServers, sessionLabel, 'open') };
    case 'grow': {
      const change = await deps.pool.growTo(action.to);
      return change.applied
        ? { did: `; ${change.description}` }
        : { wouldHave: `not grown: ${change.description}` };
    }
    case 'placeholders':
      await deps.cluster.scaleDeployment(PLACEHOLDER_NAMESPACE, PLACEHOLDER_DEPLOYMENT, action.to);
      return {
        did: `; Deployment ${PLACEHOLDER_NAMESPACE}/${PLACEHOLDER_DEPLOYMENT} at ${action.to} replica(s)`,
      };
    case 'withdraw':
      await deps.cluster.patchNode(
        action.target.name,
        withdrawalPatch(action.target.annotations[REMOVAL_STARTED_AT] ?? ''),
      );
      return { did: '' };
    case 'delete':
      if (!deletesNodes(deps.pool))
        return { wouldHave: await wouldRemove(deps.pool, action.target) };
      return {
        did: await (action.resume
          ? finishRemoval(deps.cluster, deps.pool, action.target)
          : removeNode(deps.cluster, deps.pool, action.target, at)),
      };
    case 'evict':
      return { did: await moveGameServer(deps.cluster, action.route) };
  }
}

function protectionNote(p: ProtectionPatch, verb: string): ScaleNote {
  return {
    node: p.target.node,
    reason: `${p.target.namespace}/${p.target.name}: ${verb} ${p.reason}`,
  };
}

/**
 * Applies the protection patches; like Events, a patch that fails is noted, not a failure of
 * the pass: the next pass tries again. A pod changed since the listing is decided again then.
 */
async function applyProtection(
  cluster: ClusterApi,
  policy: ScalePolicy,
  patches: readonly ProtectionPatch[],
  notes: ScaleNote[],
): Promise<void> {
  await forEachBounded(patches, policy.concurrency, async (p) => {
    try {
      await cluster.patchPod(p.target.namespace, p.target.name, p.patch);
      notes.push(protectionNote(p, 'set'));
    } catch (error) {
      const text =
        error instanceof KubernetesConflictError
          ? 'the pod changed since it was listed: left for the next pass'
          : error instanceof Error
            ? error.message
            : String(error);
      notes.push({
        node: p.target.node,
        reason: `${p.target.namespace}/${p.target.name}: protection not set: ${text}`,
      });
    }
  });
}

/** What became of a move, for its reason. */
const MOVE_OUTCOMES = {
  evicted: '',
  deleted: '',
  refused: '; refused by a PodDisruptionBudget: not now',
  changed: '; changed since it was listed (allocated, maybe): left alone',
  gone: '; already gone',
} as const;

/** Moves a ready game server: deletes its Agones GameServer, or evicts its pod. */
async function moveGameServer(
  cluster: ScaleActDeps['cluster'],
  route: Extract<PlannedAction, { type: 'evict' }>['route'],
): Promise<string> {
  const { namespace, name, uid, resourceVersion } = route;
  // The listed version as a precondition: a server allocated since is refused, not deleted.
  const preconditions = {
    ...(uid !== undefined ? { uid } : {}),
    ...(resourceVersion !== undefined ? { resourceVersion } : {}),
  };
  const outcome =
    route.kind === 'gameserver'
      ? await cluster.deleteGameServer(namespace, name, preconditions)
      : await cluster.evictPod(namespace, name, preconditions);
  return MOVE_OUTCOMES[outcome];
}

/** Cordon only the node as listed: any change since (resourceVersion) makes the patch fail. */
export function cordonPatch(node: NodeView, at: string): JsonPatchOperation[] {
  return [
    ...(node.resourceVersion !== undefined
      ? [{ op: 'test' as const, path: '/metadata/resourceVersion', value: node.resourceVersion }]
      : []),
    ...(node.hasAnnotationMap
      ? []
      : [{ op: 'add' as const, path: '/metadata/annotations', value: {} }]),
    { op: 'add', path: '/spec/unschedulable', value: true },
    { op: 'add', path: annotationPath(CORDONED_AT), value: at },
  ];
}

/** Uncordon only a node still under berth's same cordon. */
export function uncordonPatch(node: NodeView): JsonPatchOperation[] {
  return [
    ...stillBerthCordoned(node),
    { op: 'remove', path: '/spec/unschedulable' },
    { op: 'remove', path: annotationPath(CORDONED_AT) },
  ];
}

async function recordEvent(
  deps: ScaleActDeps,
  action: PlannedAction,
  type: 'Normal' | 'Warning',
  message: string,
  notes: ScaleNote[],
): Promise<void> {
  // Events are about a node or a moved game server; growth, the placeholders and the removals
  // a pool that deletes no Node only reports are the report's.
  if (
    action.type === 'grow' ||
    action.type === 'placeholders' ||
    (action.type === 'delete' && !deletesNodes(deps.pool))
  ) {
    return;
  }
  const involvedObject =
    action.type === 'evict'
      ? {
          kind: 'Pod' as const,
          namespace: action.gameServer.split('/')[0] ?? 'default',
          name: action.gameServer.split('/')[1] ?? '',
        }
      : {
          kind: 'Node' as const,
          name: action.target.name,
          ...(action.target.uid ? { uid: action.target.uid } : {}),
        };
  try {
    await deps.cluster.createEvent({
      involvedObject,
      type,
      reason: type === 'Warning' ? SCALE_EVENT_REASONS.failed : SCALE_EVENT_REASONS[action.type],
      message,
      component: SCALE_EVENT_COMPONENT,
    });
  } catch (error) {
    // An Event is a report, not a decision: losing one must not fail the action it describes.
    const text = error instanceof Error ? error.message : String(error);
    notes.push({ node: action.node ?? involvedObject.name, reason: `Event not recorded: ${text}` });
  }
}

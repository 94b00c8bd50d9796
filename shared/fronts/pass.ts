/**
 * The fronts pass (`berth fronts --once`, scheduled in AWS): repair for public fronts, with the
 * repair pass's rules. It reads the live game servers from the cluster and brings the fronts in
 * line:
 * - a listener slot or wanted destination whose owner is no live pod is taken down and freed,
 *   unless it was claimed within `CREATE_GRACE_MS` (a CREATE the apiserver may still store) or
 *   after the pass started (never freed by that pass);
 * - a bound game server whose fronts are not all in place gets its bind queued again;
 * - a listener or target group on a pool load balancer that carries this cluster's tags but no
 *   slot of a live owner is removed (a crash between steps, a slot freed by hand);
 * - every endpoint subnet is reconciled, so denials a crashed worker left are made.
 * Every change it makes is one of the worker's own steps, each safe to repeat.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { chooseNodeAddress } from '../admission/binding.js';
import { isNotFound, isResourceInUse } from '../aws/error-codes.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { carriedAllocationId } from '../vocabulary/allocation-id.js';
import type { AcceleratorFront } from './accelerator-front.js';
import type { Elbv2Api } from './elbv2.js';
import { FRONT_TAGS, ignoreGone, taggedFor, tagsOf, targetGroupName } from './nlb-front.js';
import { frontedPortsOf } from './pod-fronts.js';
import { type SlotFront, tellReady } from './readiness.js';
import { runSlotChains, type SlotChainsDeps, type SlotChainsSummary } from './slots/pass.js';
import { chainGroupName, type SlotChain, slotKey } from './slots/store.js';
import type { FrontStore, SubnetDestinations } from './store.js';
import type { FrontQueue } from './work.js';
import { releaseOwner } from './worker.js';

/**
 * A slot or destination claimed this recently may belong to a pod whose CREATE has not landed.
 * The apiserver gives a request a minute (its default `--request-timeout`), so a CREATE admitted
 * longer ago is stored or refused; with the pass every minute, a refused CREATE's values are
 * free within 2 minutes, as docs/architecture.md (how values are freed) promises.
 */
export const CREATE_GRACE_MS = 60_000;

/**
 * A listener claimed this long ago and still not in place has its bind queued again, as resumed:
 * a burst's last binds may still wait their turn at the budget, and a copy that runs beside
 * them reads what is there before it makes anything (the worker makes one bind of a pod a batch).
 */
export const REQUEUE_GRACE_MS = 120_000;

/**
 * How long a pass starts slot chain steps: the fronts function has 90 s (infra/berth-stack.ts),
 * and the chains share it with the pass's other work. What a pass leaves is the next pass's.
 */
export const SLOT_STEPS_MS = 45_000;

/** Slots mode (`fronts.nlb.mode: slots`): the chains' store and steps, and the game nodes. */
export interface SlotsPassDeps extends SlotChainsDeps {
  /** `scale.nodeSelector`: the nodes that get slots. */
  readonly nodeSelector: string;
}

/** What the pass needs. */
export interface FrontsPassDeps {
  readonly cluster: string;
  readonly store: FrontStore;
  readonly kube: Pick<ClusterApi, 'listPods' | 'listNodes' | 'getNode' | 'patchPod'>;
  readonly nlb?: {
    readonly api: Elbv2Api;
    readonly loadBalancers: () => Promise<readonly string[]>;
    /** Listener ports of each load balancer (`fronts.nlb.listenerPorts`). */
    readonly listenerPorts: number;
  };
  readonly slots?: SlotsPassDeps;
  readonly accelerator?: AcceleratorFront;
  readonly queue: FrontQueue;
  readonly now: () => number;
}

/** What one pass found and did. */
export interface FrontsPassSummary {
  readonly findings: Readonly<Record<string, number>>;
  /** Owners whose fronts were taken down and freed. */
  readonly released: number;
  /**
   * Gone owners left held because a bind of theirs is still making a listener: the next pass
   * takes it down and frees them.
   */
  readonly making: number;
  /** Binds queued again. */
  readonly requeued: number;
  /** Game servers told this pass that every front of theirs routes (`berth.dev/fronts-ready`). */
  readonly ready: number;
  /** Owners whose release or re-queue failed this pass (the next pass tries again). */
  readonly failed: number;
  /** What the slot chains' steps did, in slots mode. */
  readonly slots?: SlotChainsSummary;
  /**
   * The NLB fronts a new game server could take: in slots mode the seats whose chain serves and
   * no pod's host port takes, else the pool's listener ports no game server has claimed.
   */
  readonly offered?: {
    readonly kind: 'listeners' | 'seats';
    readonly total: number;
    readonly free: number;
  };
  readonly durationMs: number;
}

interface LiveOwner {
  /** The live pods that carry the id: one, unless someone copied it. */
  readonly pods: readonly V1Pod[];
}

function isLive(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

/**
 * Live pods by the allocation id they carry. Every pod is listed, not only those labelled game
 * servers: a label anyone can remove must not make a running game server's fronts look leaked
 * (the host port repair, which lists every pod, keeps its host port meanwhile).
 */
async function livePods(
  kube: FrontsPassDeps['kube'],
): Promise<{ owners: Map<string, LiveOwner>; pods: V1Pod[] }> {
  const owners = new Map<string, V1Pod[]>();
  const pods: V1Pod[] = [];
  for await (const pod of kube.listPods()) {
    if (!isLive(pod)) continue;
    pods.push(pod);
    const id = carriedAllocationId(pod as Readonly<Record<string, unknown>>);
    if (id === undefined) continue;
    owners.set(id, [...(owners.get(id) ?? []), pod]);
  }
  return { owners: new Map([...owners].map(([id, held]) => [id, { pods: held }])), pods };
}

/** One pass. */
export async function runFrontsPass(deps: FrontsPassDeps): Promise<FrontsPassSummary> {
  const startedAt = deps.now();
  const findings: Record<string, number> = {};
  const find = (reason: string) => {
    findings[reason] = (findings[reason] ?? 0) + 1;
  };
  // The port mappings kept before any game server binds: the first pass after a deploy lists them.
  await deps.accelerator?.warm();
  const { owners, pods } = await livePods(deps.kube);
  const settled = (claimedAt: number) => claimedAt < startedAt - CREATE_GRACE_MS;

  // Owners that hold something and are gone.
  const gone = new Set<string>();
  const slots = await deps.store.listSlots();
  for (const record of slots) {
    if (!owners.has(record.owner.allocationId) && settled(record.claimedAt)) {
      gone.add(record.owner.allocationId);
    }
  }
  const subnets = await deps.store.listDestinationSubnets();
  const destinations = new Map<string, SubnetDestinations>();
  for (const subnetId of subnets) {
    destinations.set(subnetId, await deps.store.listDestinations(subnetId));
  }
  const wanted = [...destinations.values()].flatMap((subnet) => subnet.wanted);
  const wantedBy = new Map<string, number>();
  for (const cell of wanted) {
    wantedBy.set(cell.owner.allocationId, (wantedBy.get(cell.owner.allocationId) ?? 0) + 1);
    if (!owners.has(cell.owner.allocationId) && settled(cell.wantedAt)) {
      gone.add(cell.owner.allocationId);
    }
  }
  const holdings = { slots, wanted };
  const touched = new Set<string>(subnets);
  // One owner's failure (the budget spent, a target group someone else's listener uses) is
  // counted and left to the next pass: it must not stop the repair of every other.
  let failed = 0;
  let released = 0;
  let stillMaking = 0;
  const each = async (work: () => Promise<void>) => {
    try {
      await work();
    } catch {
      failed++;
    }
  };
  for (const allocationId of gone) {
    await each(async () => {
      const { making } = await releaseOwner(
        { cluster: deps.cluster, store: deps.store, elbv2: deps.nlb?.api, now: deps.now },
        allocationId,
        holdings,
        touched,
      );
      // A bind still making a listener: the next pass takes it down and frees the slot.
      if (making > 0) {
        stillMaking++;
        return;
      }
      released++;
      find('FrontLeaked');
    });
  }

  // Bound game servers whose fronts are not all in place.
  let requeued = 0;
  const boundSlots = new Set(
    slots.filter((s) => s.state === 'bound').map((s) => `${s.owner.allocationId}/${s.portName}`),
  );
  const claimedAt = new Map<string, number>(
    slots.map((s) => [`${s.owner.allocationId}/${s.portName}`, s.claimedAt]),
  );
  // A listener claimed within the grace may still wait its turn at the budget (a burst's last
  // ones, for minutes). One older is queued again as resumed: it reads what is there before it
  // makes anything, so a bind made twice costs Describes, never a second mutating call. An
  // accelerator destination's bind costs no call when it is in place: queued again at once.
  const overdue = (key: string) => (claimedAt.get(key) ?? 0) < startedAt - REQUEUE_GRACE_MS;
  for (const [allocationId, owner] of owners) {
    // Two live pods carry the id: one is a copy, and berth cannot tell which, so it binds
    // neither again (what the real one's binding made stays in place).
    const [pod, ...others] = owner.pods;
    if (pod === undefined || others.length > 0 || (pod.spec?.nodeName ?? '') === '') continue;
    const ports = frontedPortsOf(pod as Readonly<Record<string, unknown>>);
    const missing = ports.some((port) => {
      const key = `${allocationId}/${port.name}`;
      // A port behind a slot chain has no bind of its own: the chains' steps below make it.
      if (port.front === 'nlb')
        return deps.slots === undefined && !boundSlots.has(key) && overdue(key);
      return (wantedBy.get(allocationId) ?? 0) === 0;
    });
    if (!missing) continue;
    await each(async () => {
      const nodeName = pod.spec?.nodeName ?? '';
      const node = await deps.kube.getNode(nodeName);
      const nodeAddress = chooseNodeAddress(node?.status?.addresses ?? [], ['InternalIP']);
      if (nodeAddress === undefined) return;
      find('FrontNotInPlace');
      requeued++;
      await deps.queue.submit(
        {
          kind: 'bind',
          cluster: deps.cluster,
          namespace: pod.metadata?.namespace ?? 'default',
          pod: pod.metadata?.name ?? '',
          allocationId,
          node: nodeName,
          nodeAddress,
          ports,
          boundAt: deps.now(),
          resumed: 1,
        },
        0,
      );
    });
  }

  let slotSummary: SlotChainsSummary | undefined;
  let slotFront: SlotFront | undefined;
  let offered: FrontsPassSummary['offered'];
  if (deps.slots !== undefined) {
    const nodes = [];
    for await (const node of deps.kube.listNodes({ labelSelector: deps.slots.nodeSelector })) {
      nodes.push(node);
    }
    const chains = await runSlotChains(
      deps.slots,
      { nodes, pods, otherSlots: slots.map((s) => s.slot) },
      startedAt + SLOT_STEPS_MS,
    );
    slotSummary = chains.summary;
    slotFront = chains.front;
    offered = { kind: 'seats', total: chains.seats.serving, free: chains.seats.free };
    failed += chains.summary.failed;
    if (chains.summary.unseated > 0) find('FrontPoolFull');
  }

  // Told only once their fronts route: a bound listener serves minutes after its registration.
  let ready = 0;
  await each(async () => {
    const told = await tellReady(
      {
        cluster: deps.cluster,
        store: deps.store,
        kube: deps.kube,
        ...(deps.nlb ? { elbv2: deps.nlb.api } : {}),
        now: deps.now,
      },
      { owners, slots, destinations, ...(slotFront ? { slotFront } : {}) },
    );
    ready = told.told;
    failed += told.failed;
  });

  if (deps.nlb !== undefined) {
    const chains = deps.slots?.chains;
    const held = () => heldSlots(deps.store, deps.cluster, chains && (() => chains.listChains()));
    const loadBalancers = await deps.nlb.loadBalancers();
    if (deps.slots === undefined) {
      const total = loadBalancers.length * deps.nlb.listenerPorts;
      offered = { kind: 'listeners', total, free: Math.max(0, total - slots.length) };
    }
    const orphans = [
      ...(await removeOrphanListeners(deps.nlb.api, loadBalancers, deps.cluster, held)),
      ...(await removeOrphanGroups(deps.nlb.api, deps.cluster, held)),
    ];
    for (const reason of orphans) find(reason);
  }
  if (deps.accelerator !== undefined && touched.size > 0) {
    // A subnet a worker is reconciling is its: the worker's plan is read under the lease.
    await deps.accelerator.reconcile([...touched], 'skip');
  }
  return {
    findings,
    released,
    making: stillMaking,
    requeued,
    ready,
    failed,
    ...(slotSummary ? { slots: slotSummary } : {}),
    ...(offered ? { offered } : {}),
    durationMs: deps.now() - startedAt,
  };
}

/**
 * Removes this cluster's listeners on the pool's load balancers that are no held slot's, or
 * forward to a target group no slot names, with their target groups. A finding per removal.
 */
/** The listener slots held now, and the target groups they name. */
interface HeldSlots {
  /** `<load balancer ARN>#<port>` of every held slot. */
  readonly slots: ReadonlySet<string>;
  readonly groups: ReadonlySet<string>;
}

async function heldSlots(
  store: FrontStore,
  cluster: string,
  listChains?: () => Promise<readonly SlotChain[]>,
): Promise<HeldSlots> {
  const held = await store.listSlots();
  const chains = listChains ? await listChains() : [];
  return {
    slots: new Set([...held, ...chains].map((s) => slotKey(s.slot))),
    groups: new Set([
      ...held.map((s) => targetGroupName(cluster, s.owner.allocationId, s.portName)),
      ...chains.map((c) => chainGroupName(cluster, c.slot)),
    ]),
  };
}

/**
 * Removes this cluster's listeners on the pool's load balancers that are no held slot's, or
 * forward to a target group no slot names. What the listing found is checked against the slots
 * read after it: a slot claimed and bound while the listing ran (a burst's) is kept, since a
 * listener is made only once its slot is claimed.
 */
async function removeOrphanListeners(
  api: Elbv2Api,
  loadBalancers: readonly string[],
  cluster: string,
  held: () => Promise<HeldSlots>,
): Promise<string[]> {
  const candidates: { readonly arn: string; readonly slot: string; readonly group: string }[] = [];
  for (const loadBalancerArn of loadBalancers) {
    const listeners = [];
    let marker: string | undefined;
    do {
      const page = await api.describeListeners(loadBalancerArn, marker);
      listeners.push(...page.items);
      marker = page.nextMarker;
    } while (marker !== undefined);
    const tags = await tagsOf(
      api,
      listeners.map((l) => l.arn),
    );
    for (const listener of listeners) {
      const own = tags.get(listener.arn);
      if (!taggedFor(own, cluster)) continue;
      const allocationId = own?.find((t) => t.key === FRONT_TAGS.allocation)?.value ?? '';
      const portName = own?.find((t) => t.key === FRONT_TAGS.port)?.value ?? '';
      const slot = { loadBalancerArn, port: listener.port };
      const chain = own?.some((t) => t.key === FRONT_TAGS.chain) === true;
      candidates.push({
        arn: listener.arn,
        slot: slotKey(slot),
        group: chain
          ? chainGroupName(cluster, slot)
          : targetGroupName(cluster, allocationId, portName),
      });
    }
  }
  if (candidates.length === 0) return [];
  const now = await held();
  const removed: string[] = [];
  for (const candidate of candidates) {
    if (now.slots.has(candidate.slot) && now.groups.has(candidate.group)) continue;
    await api.deleteListener(candidate.arn).catch(ignoreGone);
    removed.push('ListenerOrphaned');
  }
  return removed;
}

/**
 * Removes this cluster's target groups no held slot names, checked against the slots read after
 * the listing (a bind makes its group before its listener). One a listener still forwards to is
 * the next pass's.
 */
async function removeOrphanGroups(
  api: Elbv2Api,
  cluster: string,
  held: () => Promise<HeldSlots>,
): Promise<string[]> {
  // Held ones are left out before their tags are read: those reads are the pass's cost.
  const before = await held();
  const candidates = [];
  let marker: string | undefined;
  do {
    const page = await api.describeTargetGroups({}, marker);
    candidates.push(
      ...page.items.filter((g) => g.name.startsWith('berth-') && !before.groups.has(g.name)),
    );
    marker = page.nextMarker;
  } while (marker !== undefined);
  const tags = await tagsOf(
    api,
    candidates.map((g) => g.arn),
  );
  const ours = candidates.filter((group) => taggedFor(tags.get(group.arn), cluster));
  if (ours.length === 0) return [];
  const now = await held();
  const removed: string[] = [];
  for (const group of ours) {
    if (now.groups.has(group.name)) continue;
    try {
      await api.deleteTargetGroup(group.arn);
      removed.push('TargetGroupOrphaned');
    } catch (error) {
      if (!isResourceInUse(error) && !isNotFound(error)) throw error;
    }
  }
  return removed;
}

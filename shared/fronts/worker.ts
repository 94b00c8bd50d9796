/**
 * The fronts worker: takes a batch of front work (a queue delivers bindings of a burst together)
 * and makes each game server reachable, or takes a deleted one's fronts down.
 *
 * - bind, NLB port: the slot claimed at CREATE gets its target group, target and listener
 *   (nlb-front.ts), then is marked bound; a slot freed meanwhile (the pod went first) has its
 *   listener taken down again at once;
 * - bind, accelerator port: the destination (node address, host port) is recorded as wanted, and
 *   once every bind of the batch is recorded each endpoint subnet touched is reconciled in one
 *   plan: one AllowCustomRoutingTraffic covers the whole burst (accelerator-front.ts);
 * - release: only once the pod is gone from the API (or finished, or no longer the owner of the
 *   id): a pod still there is looked at again with backoff, so a refused or delayed DELETE never
 *   frees a public port a live game server still answers on.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { isDuplicateListener, isThrottled, isTransient } from '../aws/error-codes.js';
import { forEachBounded } from '../concurrency/bounded.js';
import { RateBudgetExhaustedError } from '../ec2/errors.js';
import { type BackoffPolicy, DEFAULT_BACKOFF } from '../ec2/rate-budget.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { carriedAllocationId } from '../vocabulary/allocation-id.js';
import type { AcceleratorFront } from './accelerator-front.js';
import type { Elbv2Api, HealthCheck } from './elbv2.js';
import { SubnetReconcileBusyError } from './errors.js';
import {
  type ListenerWork,
  listen,
  type MadeTarget,
  makeTarget,
  takeDownListener,
} from './nlb-front.js';
import {
  type FrontStore,
  type ListenerSlotRecord,
  MAKING_LEASE_MS,
  type WantedDestination,
} from './store.js';
import type { BindWork, FrontQueue, FrontWork, FrontWorkOutcome, ReleaseWork } from './work.js';

/** What the worker needs; the fronts the config has none of are absent. */
export interface FrontsWorkerDeps {
  readonly cluster: string;
  readonly store: FrontStore;
  readonly kube: Pick<ClusterApi, 'getPod'>;
  readonly nlb?: {
    readonly api: Elbv2Api;
    /** The VPC of a pool member (its target groups are made there). */
    readonly vpcIdOf: (loadBalancerArn: string) => Promise<string>;
    /** What each target group checks (`fronts.nlb.healthCheck`). */
    readonly healthCheck: HealthCheck;
  };
  readonly accelerator?: AcceleratorFront;
  /** Where a release that must wait is put back. */
  readonly queue: FrontQueue;
  /** The first re-check of a release, in seconds (`settle.delaySeconds`); it doubles to a minute. */
  readonly recheckSeconds: number;
  readonly now: () => number;
}

/**
 * How long a call of the worker and the pass waits for a budget token: off every request path,
 * so longer than a webhook's calls may; work the budget cannot serve in that time is queued
 * again (`deferred`) rather than failed.
 */
export const FRONT_WORK_BACKOFF: BackoffPolicy = { ...DEFAULT_BACKOFF, maxBudgetWaitMs: 20_000 };

/** Binds made at once to ELBv2: each is three calls in order, and the budget paces the rest. */
const NLB_CONCURRENCY = 8;
/** The longest wait between two looks at a pod whose deletion has not landed. */
const MAX_RECHECK_SECONDS = 60;

/**
 * Work queued again by the worker itself at most this often: past it, a failure is left to the
 * queue (its redelivery, then its dead-letter queue) and to the fronts pass.
 */
const MAX_DEFERRALS = 20;

/** Handles a batch; one item's failure is its own (the queue redelivers just that one). */
export async function handleFrontWork(
  deps: FrontsWorkerDeps,
  batch: readonly FrontWork[],
): Promise<FrontWorkOutcome[]> {
  const outcomes = new Map<FrontWork, FrontWorkOutcome>();
  // One bind of a game server a batch: a copy queued again meanwhile (by the pass, or a
  // redelivery) made at the same time would make its steps twice.
  const binds = [
    ...new Map(
      batch
        .filter((work): work is BindWork => work.kind === 'bind')
        .map((work) => [work.allocationId, work] as const),
    ).values(),
  ];
  const releases = batch.filter((work): work is ReleaseWork => work.kind === 'release');

  // The slots and destinations are read once for the batch, not once a game server: a bind's
  // slot was claimed before its binding was queued, and every write after is conditioned on it.
  const listens = binds.some((work) => work.ports.some((port) => port.front === 'nlb'));
  let holdings: FrontHoldings;
  try {
    holdings = await readHoldings(deps.store, {
      slots: listens || releases.length > 0,
      wanted: releases.length > 0,
    });
  } catch (error) {
    return batch.map(() => ({ kind: 'failed', error }));
  }

  const touched = new Set<string>();
  // Every bind's targets are registered before any listener is made: a target serves only
  // minutes after its registration (nlb-front.ts), and the listeners wait their turn at the
  // budget meanwhile, so a burst's last game server serves that much sooner.
  const registered: {
    work: BindWork;
    jobs: readonly ListenerJob[];
    made: Map<ListenerJob, MadeTarget>;
  }[] = [];
  await forEachBounded(binds, NLB_CONCURRENCY, async (work) => {
    try {
      const planned = await listenerJobs(deps, work, holdings);
      if ('skipped' in planned) {
        outcomes.set(work, { kind: 'skipped', reason: planned.skipped });
        return;
      }
      registered.push({
        work,
        jobs: planned.jobs,
        made: await registerTargets(deps, work, planned.jobs),
      });
    } catch (error) {
      outcomes.set(work, { kind: 'failed', error });
    }
  });
  await forEachBounded(registered, NLB_CONCURRENCY, async ({ work, jobs, made }) => {
    outcomes.set(work, await attempt(() => bind(deps, work, jobs, made, touched)));
  });
  await forEachBounded(releases, NLB_CONCURRENCY, async (work) => {
    outcomes.set(work, await attempt(() => release(deps, work, holdings, touched)));
  });
  if (deps.accelerator !== undefined && touched.size > 0) {
    // One plan per subnet for the whole batch: a bind behind the accelerator is reachable once
    // it lands, and fails (to be made again) with it.
    const reconciled = await attempt(async () => {
      await deps.accelerator?.reconcile([...touched]);
      return { kind: 'reachable', at: deps.now() } as const;
    });
    for (const work of binds) {
      const behindAccelerator = work.ports.some((port) => port.front === 'accelerator');
      if (behindAccelerator && outcomes.get(work)?.kind === 'reachable') {
        outcomes.set(work, reconciled);
      }
    }
  }
  const answers: FrontWorkOutcome[] = [];
  for (const work of batch) {
    const outcome = outcomes.get(work) ?? { kind: 'skipped', reason: 'not handled' };
    answers.push(outcome.kind === 'failed' ? await deferred(deps, work, outcome) : outcome);
  }
  return answers;
}

/**
 * A failure the budget or the service's throttling caused, queued again for when a token is
 * likely (the budget says when; throttling backs off by the count of deferrals) instead of
 * waiting out the queue's visibility timeout. Any other failure stays a failure.
 */
async function deferred(
  deps: Pick<FrontsWorkerDeps, 'queue'>,
  work: FrontWork,
  failure: Extract<FrontWorkOutcome, { kind: 'failed' }>,
): Promise<FrontWorkOutcome> {
  const { error } = failure;
  const count = work.kind === 'bind' ? (work.resumed ?? 0) : work.attempt;
  const budget = error instanceof RateBudgetExhaustedError;
  // Another process held an endpoint subnet's reconcile past the wait: its own is due shortly.
  const busySubnet = error instanceof SubnetReconcileBusyError;
  // A listener on the slot that forwards elsewhere: the slot's previous owner's, on its way down.
  const previousListener = isDuplicateListener(error);
  if (
    !(budget || busySubnet || previousListener || isThrottled(error) || isTransient(error)) ||
    count >= MAX_DEFERRALS
  ) {
    return failure;
  }
  const retryAfter = budget
    ? Math.max(1, Math.ceil(error.retryAfterMs / 1000))
    : Math.min(2 ** count, MAX_RECHECK_SECONDS);
  const again: FrontWork =
    work.kind === 'bind' ? { ...work, resumed: count + 1 } : { ...work, attempt: count + 1 };
  return attempt(async () => {
    await deps.queue.submit(again, retryAfter);
    return { kind: 'deferred', retryAfter };
  });
}

async function attempt(run: () => Promise<FrontWorkOutcome>): Promise<FrontWorkOutcome> {
  try {
    return await run();
  } catch (error) {
    return { kind: 'failed', error };
  }
}

/** One NLB port of a bind that still needs its listener. */
interface ListenerJob {
  readonly record: ListenerSlotRecord;
  readonly work: ListenerWork;
}

/** A bind's NLB ports still to make, or why it makes none. */
async function listenerJobs(
  deps: FrontsWorkerDeps,
  work: BindWork,
  holdings: FrontHoldings,
): Promise<{ readonly jobs: readonly ListenerJob[] } | { readonly skipped: string }> {
  const nlbPorts = work.ports.filter((port) => port.front === 'nlb');
  if (nlbPorts.length === 0) return { jobs: [] };
  if (deps.nlb === undefined) return { skipped: 'no NLB is configured' };
  const slots = holdings.slots.filter((record) => record.owner.allocationId === work.allocationId);
  const jobs: ListenerJob[] = [];
  for (const port of nlbPorts) {
    const record = slots.find((slot) => slot.portName === port.name);
    // No slot: the pod was released (or its CREATE refused) before its binding landed.
    if (record === undefined) return { skipped: `no listener slot for ${port.name}` };
    const target = { ip: work.nodeAddress, port: port.hostPort };
    // In place already (a redelivered or re-queued bind): nothing to call.
    const inPlace =
      record.state === 'bound' &&
      record.target?.ip === target.ip &&
      record.target.port === target.port;
    if (inPlace) continue;
    jobs.push({
      record,
      work: {
        cluster: work.cluster,
        allocationId: work.allocationId,
        portName: port.name,
        slot: record.slot,
        namespace: work.namespace,
        pod: work.pod,
        protocol: port.protocol,
        vpcId: await deps.nlb.vpcIdOf(record.slot.loadBalancerArn),
        target,
        healthCheck: deps.nlb.healthCheck,
      },
    });
  }
  return { jobs };
}

/** The first steps of a bind's listeners: its target groups made and targets registered. */
async function registerTargets(
  deps: FrontsWorkerDeps,
  work: BindWork,
  jobs: readonly ListenerJob[],
): Promise<Map<ListenerJob, MadeTarget>> {
  const made = new Map<ListenerJob, MadeTarget>();
  const api = deps.nlb?.api;
  if (api === undefined) return made;
  for (const job of jobs)
    made.set(job, await makeTarget(api, job.work, work.resumed !== undefined));
  return made;
}

async function bind(
  deps: FrontsWorkerDeps,
  work: BindWork,
  jobs: readonly ListenerJob[],
  made: ReadonlyMap<ListenerJob, MadeTarget>,
  touched: Set<string>,
): Promise<FrontWorkOutcome> {
  const acceleratorPorts = work.ports.filter((port) => port.front === 'accelerator');
  const api = deps.nlb?.api;
  for (const job of jobs) {
    const target = made.get(job);
    if (api === undefined || target === undefined) continue;
    const { record } = job;
    const listener = await listen(api, job.work, target, () =>
      deps.store.beginMaking(record.slot, work.allocationId, deps.now() + MAKING_LEASE_MS),
    );
    if (listener === undefined) {
      // Released before its listener was made (its target group goes with the pass's orphans).
      return {
        kind: 'skipped',
        reason: `listener slot for ${job.work.portName} was freed meanwhile`,
      };
    }
    const kept = await deps.store.markBound(record.slot, work.allocationId, {
      target: job.work.target,
      boundAt: deps.now(),
      pod: work.pod,
    });
    if (!kept) {
      // Freed after its making lease ran out (a bind slower than any invocation may last):
      // the game server is gone; so must the listener be.
      await takeDownListener(api, job.work, record.slot);
      return {
        kind: 'skipped',
        reason: `listener slot for ${job.work.portName} was freed meanwhile`,
      };
    }
  }
  if (acceleratorPorts.length > 0) {
    if (deps.accelerator === undefined) {
      return { kind: 'skipped', reason: 'no Global Accelerator is configured' };
    }
    const wanted: WantedDestination[] = [];
    for (const port of acceleratorPorts) {
      const located = await deps.accelerator.locate(work.nodeAddress, port.hostPort);
      if (located === undefined) {
        return {
          kind: 'skipped',
          reason: `${work.nodeAddress}:${port.hostPort} is no destination of the accelerator's endpoint subnets`,
        };
      }
      wanted.push({
        subnetId: located.subnetId,
        address: work.nodeAddress,
        port: port.hostPort,
        owner: { allocationId: work.allocationId, namespace: work.namespace, pod: work.pod },
        wantedAt: deps.now(),
      });
    }
    await deps.store.want(wanted);
    for (const cell of wanted) touched.add(cell.subnetId);
  }
  return { kind: 'reachable', at: deps.now() };
}

/** Whether the pod read is still the live owner of the id. */
function stillOwns(pod: V1Pod | undefined, allocationId: string): boolean {
  if (pod === undefined) return false;
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  return carriedAllocationId(pod as Readonly<Record<string, unknown>>) === allocationId;
}

async function release(
  deps: FrontsWorkerDeps,
  work: ReleaseWork,
  holdings: FrontHoldings,
  touched: Set<string>,
): Promise<FrontWorkOutcome> {
  if (stillOwns(await deps.kube.getPod(work.namespace, work.pod), work.allocationId)) {
    return lookAgain(deps, work);
  }
  const { making } = await releaseOwner(
    { cluster: deps.cluster, store: deps.store, elbv2: deps.nlb?.api, now: deps.now },
    work.allocationId,
    holdings,
    touched,
  );
  // A bind of the owner is making a listener: taken down and freed once that is done.
  return making > 0 ? lookAgain(deps, work) : { kind: 'released' };
}

/** Puts the release back for another look, backing off from `recheckSeconds` to a minute. */
async function lookAgain(
  deps: Pick<FrontsWorkerDeps, 'queue' | 'recheckSeconds'>,
  work: ReleaseWork,
): Promise<FrontWorkOutcome> {
  const recheckAfter = Math.min(deps.recheckSeconds * 2 ** work.attempt, MAX_RECHECK_SECONDS);
  await deps.queue.submit({ ...work, attempt: work.attempt + 1 }, recheckAfter);
  return { kind: 'waiting', recheckAfter };
}

/** What the cluster holds of the fronts, read once for a batch or a pass. */
export interface FrontHoldings {
  readonly slots: readonly ListenerSlotRecord[];
  readonly wanted: readonly WantedDestination[];
}

/** Reads the listener slots and the wanted destinations, each only when asked for. */
export async function readHoldings(
  store: FrontStore,
  read: { readonly slots: boolean; readonly wanted: boolean },
): Promise<FrontHoldings> {
  const wanted: WantedDestination[] = [];
  if (read.wanted) {
    for (const subnetId of await store.listDestinationSubnets()) {
      wanted.push(...(await store.listDestinations(subnetId)).wanted);
    }
  }
  return { slots: read.slots ? await store.listSlots() : [], wanted };
}

/**
 * Takes down and frees everything the owner holds in `holdings`: its listeners and slots, and
 * its wanted destinations (denied by the subnets' reconcile). The caller has made sure the owner
 * is gone; every write is conditioned on the owner, so a holding read a moment ago is safe.
 * Answers how many slots it left held because a bind of the owner is still making their
 * listener: a listener made after the take-down must not outlive the slot, so those are taken
 * down and freed again later (by a release queued again, or the next pass).
 */
export async function releaseOwner(
  deps: {
    readonly cluster: string;
    readonly store: FrontStore;
    readonly elbv2: Elbv2Api | undefined;
    readonly now: () => number;
  },
  allocationId: string,
  holdings: FrontHoldings,
  touched: Set<string>,
): Promise<{ readonly making: number }> {
  const slots = holdings.slots.filter((record) => record.owner.allocationId === allocationId);
  let making = 0;
  for (const record of slots) {
    // Without the NLB config its listeners cannot be read: the slot stays held (a leak, never
    // a port handed out twice) until the config is back.
    if (deps.elbv2 === undefined) continue;
    await takeDownListener(
      deps.elbv2,
      { cluster: deps.cluster, allocationId, portName: record.portName },
      record.slot,
    );
    if ((await deps.store.freeSlot(record.slot, allocationId, deps.now())) === 'making') making++;
  }
  const own = holdings.wanted.filter((cell) => cell.owner.allocationId === allocationId);
  for (const subnetId of new Set(own.map((cell) => cell.subnetId))) {
    await deps.store.unwant(
      allocationId,
      own.filter((cell) => cell.subnetId === subnetId),
    );
    touched.add(subnetId);
  }
  return { making };
}

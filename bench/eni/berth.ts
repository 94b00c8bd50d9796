/**
 * berth in the ENI benchmark: the real pool code (`assignIp`, `releaseIp`, background refills,
 * instance events and `runEniPass` every 60 s) behind the account rate budget, over the in-memory
 * store (the same `EniStore` contract as DynamoDB, used for speed). Every request, event and pass
 * is an invocation of its own on simulated concurrent time (`VirtualClock`), with the deadline and
 * budget waits its function has in AWS: one waiting for tokens holds back no other.
 */
import { parseConfig } from '../../shared/config/schema.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import type { Ec2Action, Ec2Network, InstanceTypeLimits } from '../../shared/ec2/network.js';
import {
  type BackoffPolicy,
  BudgetedEc2Network,
  DEFAULT_BACKOFF,
  NODE_WORK_BACKOFF,
  type RateBudget,
} from '../../shared/ec2/rate-budget.js';
import { type EniDeps, type EniDepsInput, eniDeps } from '../../shared/eni/deps.js';
import type { GroupUse } from '../../shared/eni/model.js';
import { handleInstanceStateChange, runEniPass } from '../../shared/eni/pass.js';
import {
  ENI_INVOCATIONS,
  type EniInvocation,
  type PoolMode,
  poolCapacity,
  poolPolicy,
  poolStats,
} from '../../shared/eni/policy.js';
import { refillAhead } from '../../shared/eni/refill.js';
import { type AssignDeps, assignIp, releaseIp } from '../../shared/eni/service.js';
import { type EniStore, forwarding } from '../../shared/eni/store.js';
import { boundPod, ec2Node, FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeEc2, INSTANCE_TYPES, MUTATING_ACTIONS } from '../../sim/fakes/ec2.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';
import { seededRandom } from '../../sim/random.js';
import { VirtualClock } from '../support/virtual-time.js';
import { type DayKind, DaySubnets, type SubnetOptions } from './day.js';
import {
  CallLedger,
  type EniRunResult,
  IdleByType,
  median,
  PodsPerNode,
  tally,
  type WaitCause,
  Waits,
} from './ledger.js';
import {
  BERTH_PASS_S,
  CNI_COOLDOWN_MS,
  DAY_S,
  isBurstWave,
  JoinSchedule,
  type NodeSpec,
  type PodEvent,
  RETRY_S,
  SEED,
  START,
} from './workload.js';

/**
 * From an assign's refill request to the ENI function's refill: Lambda's async invoke queue and
 * a warm start, with margin.
 */
const BACKGROUND_REFILL_DELAY_MS = 1_000;
/** What an on-demand refill inside assign costs the waiting pod (one EC2 call, plus margin). */
const ON_DEMAND_WAIT_MS = 1_000;

/** berth's ENI settings in a run: the config's `eni` block, any of it left to the defaults. */
export interface BerthEniSettings {
  readonly minIdle?: number;
  readonly maxIdle?: number;
  readonly mode?: PoolMode;
}

/**
 * The pods a node may run, as kubelet reports them: the EKS max-pods calculator's value for the
 * mode (its ENI formula for single addresses, 110 with prefix delegation below 30 vCPUs).
 */
function maxPodsOf(type: string, prefixes: boolean): number {
  const limits = INSTANCE_TYPES[type];
  if (prefixes) return 110;
  return (limits?.maxNetworkInterfaces ?? 1) * ((limits?.ipv4PerInterface ?? 1) - 1) + 2;
}

/** The account a day runs in: its clock, its EC2 and subnets, and its rate budget. */
export interface DayAccount {
  readonly clock: VirtualClock;
  readonly fake: FakeEc2;
  readonly subnets: DaySubnets;
  readonly random: () => number;
  /** A cluster's handle on the account's budget. */
  budgetFor(cluster: string): RateBudget;
  /** Told of every EC2 call any cluster makes. */
  readonly onCall?: (action: Ec2Action, atMs: number, throttled: boolean) => void;
  /** Where a cluster's subnet shortage marks live (one table's clusters share them). */
  subnetMarksFor(cluster: string): Pick<EniStore, 'subnetShortUntil' | 'markSubnetShort'>;
}

/** A one-cluster account: a budget of its own, as the ENI benchmark runs berth. */
export function soloAccount(day: DayKind, subnetOptions: SubnetOptions = {}): DayAccount {
  const clock = new VirtualClock(START);
  const random = seededRandom(SEED + 1);
  const fake = new FakeEc2({ now: clock.now, random, recordCalls: false });
  const budget = new InProcessSharedBudget(clock.now).for('bench');
  const marks = new InMemoryEniStore();
  return {
    clock,
    fake,
    subnets: new DaySubnets(fake, day, subnetOptions),
    random,
    budgetFor: () => budget,
    subnetMarksFor: () => marks,
  };
}

export async function runBerth(
  name: string,
  eni: BerthEniSettings,
  day: DayKind,
  nodes: NodeSpec[],
  events: PodEvent[],
  options: BerthRunOptions & { readonly reservation?: boolean } = {},
): Promise<EniRunResult> {
  const account = soloAccount(day, { reservation: options.reservation === true });
  const cluster = berthOnDay(name, eni, account, 'bench', nodes, events, options);
  await runDay(account, [cluster]);
  return cluster.result();
}

/**
 * What berth's pass learned of the node groups on a day of these events, as it stands the next
 * day: the history a berth that ran yesterday starts today with (`group-use.ts`).
 */
export async function learnedYesterday(nodes: NodeSpec[], events: PodEvent[]): Promise<GroupUse> {
  const account = soloAccount('clean');
  const store = new InMemoryEniStore();
  const cluster = berthOnDay('berth, the day before', {}, account, 'bench', nodes, events, {
    store,
  });
  await runDay(account, [cluster]);
  const use = await store.groupUse();
  const byType = Object.fromEntries(
    Object.entries(use.byType).map(([type, days]) => [
      type,
      days.map((peak) => ({ ...peak, day: peak.day - 1 })),
    ]),
  );
  return { byType, version: 0 };
}

/** How one berth run starts. */
export interface BerthRunOptions {
  /** Record why pods waited and idle addresses per instance type. */
  readonly diagnose?: boolean;
  /** What the pass learned before this day; nothing by default. */
  readonly groupUse?: GroupUse;
  /** The cluster's pool records, to read after the day; a new store by default. */
  readonly store?: InMemoryEniStore;
}

/**
 * Runs `clusters` through the day in `account`: each second, every cluster starts that second's
 * work on the account's clock, and the clock runs it all, every cluster's at once, to the
 * second's end (work that sleeps past it goes on in later seconds).
 */
export async function runDay(
  account: Pick<DayAccount, 'subnets' | 'clock'>,
  clusters: readonly BerthOnDay[],
  seconds = DAY_S,
): Promise<void> {
  for (let second = 0; second < seconds; second++) {
    account.subnets.advance(second);
    for (const cluster of clusters) cluster.start(second);
    await account.clock.runUntil(START + (second + 1) * 1000 - 1);
  }
}

/** One cluster's berth through a day, started a second at a time on its account's clock. */
export interface BerthOnDay {
  /**
   * Starts the work of `second` as invocations on the clock: nodes joining (their instance
   * events), pod arrivals and departures at their times, and at the second's end the retries of
   * waiting pods and the pass.
   */
  start(second: number): void;
  result(): EniRunResult;
}

/**
 * What one cluster's berth needs to run its real pool code in an account: the pool code's own
 * inputs, less the EC2 and randomness the account gives, plus the account and the cluster's
 * ledger.
 */
export interface BerthEniInput extends Omit<EniDepsInput, 'ec2' | 'random'> {
  readonly account: Pick<DayAccount, 'fake' | 'random' | 'budgetFor' | 'subnetMarksFor' | 'onCall'>;
  /** The cluster's own pool records (the subnet marks are the account's, `subnetMarksFor`). */
  readonly store: EniStore;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Told of every EC2 call the cluster makes. */
  readonly ledger: Pick<CallLedger, 'record'>;
  /** How long its EC2 calls may wait for budget tokens; the request path's by default. */
  readonly backoff?: BackoffPolicy;
  /** Epoch ms its waits must end by (`BudgetedEc2Network.until`); none by default. */
  readonly deadline?: number;
}

/**
 * One cluster's berth ENI dependencies in an account: the real pool code over `store`, its EC2
 * calls paid from the account's budget and recorded in its ledger and the account's.
 */
export function berthEniDeps(input: BerthEniInput): EniDeps {
  const { account, ledger, backoff, deadline, store, ...own } = input;
  const marks = account.subnetMarksFor(input.clusterName);
  const ec2: Ec2Network = new BudgetedEc2Network(account.fake, {
    budget: account.budgetFor(input.clusterName),
    now: input.now,
    sleep: input.sleep,
    random: account.random,
    ...(backoff ? { backoff } : {}),
    ...(deadline === undefined ? {} : { deadline }),
    onCall: (call) => {
      const throttled = call.outcome === 'throttled';
      ledger.record(call.action, call.at, throttled);
      account.onCall?.(call.action, call.at, throttled);
    },
  });
  return eniDeps({
    ...own,
    store: {
      ...forwarding(store),
      subnetShortUntil: (subnetId, what) => marks.subnetShortUntil(subnetId, what),
      markSubnetShort: (subnetId, what, until) => marks.markSubnetShort(subnetId, what, until),
    },
    ec2,
    random: account.random,
  });
}

/** berth for `clusterName`'s nodes and pods, in an account it may share with other clusters. */
export function berthOnDay(
  name: string,
  eni: BerthEniSettings,
  account: DayAccount,
  clusterName: string,
  nodes: NodeSpec[],
  events: PodEvent[],
  options: BerthRunOptions = {},
): BerthOnDay {
  const { clock, fake, subnets } = account;
  const cluster = new FakeClusterApi();
  const ledger = new CallLedger();
  const store =
    options.store ?? new InMemoryEniStore(options.groupUse ? { groupUse: options.groupUse } : {});
  const instanceTypes = new Map<string, InstanceTypeLimits>();
  const config = parseConfig({ cluster: clusterName, eni }).eni;
  // Background refills as the node IP function hands them to the ENI function: run
  // BACKGROUND_REFILL_DELAY_MS after the assign that asked, one queued per node at a time.
  const refillsQueued = new Set<string>();
  let backgroundRefills = 0;
  let invocations = 0;
  /**
   * One invocation of `kind` starting now, as its function runs it in AWS: its deadline, its
   * lease, how long it waits for budget (work on one node off the request path waits longer),
   * its own lease holder; `calls` hears of its EC2 calls too.
   */
  const invocation = (
    kind: EniInvocation,
    backoff: BackoffPolicy,
    calls?: { mutating: number },
  ): AssignDeps => {
    const limits = ENI_INVOCATIONS[kind];
    const deps = berthEniDeps({
      account,
      clusterName,
      config,
      cluster,
      store,
      now: clock.now,
      sleep: clock.sleep,
      ledger: {
        record: (action, at, throttled) => {
          ledger.record(action, at, throttled);
          if (calls && !throttled && MUTATING_ACTIONS.has(action)) calls.mutating++;
        },
      },
      instanceTypes,
      holder: `${clusterName}-${invocations++}`,
      backoff,
      deadline: clock.now() + limits.deadlineMs,
      leaseMs: limits.leaseMs,
    });
    return { ...deps, refills: { request: async (node) => requestRefill(node) } };
  };
  const requestRefill = (node: string): void => {
    if (refillsQueued.has(node)) return;
    refillsQueued.add(node);
    void clock.at(clock.now() + BACKGROUND_REFILL_DELAY_MS, async () => {
      refillsQueued.delete(node);
      try {
        const { outcome } = await refillAhead(invocation('work', NODE_WORK_BACKOFF), node);
        if (outcome === 'grown') backgroundRefills++;
      } catch {
        // The ENI function's invocation failed (its budget wait ran out): the pass and
        // on-demand refills remain.
      }
    });
  };

  const held = new Map<string, { node: string; ip: string }>();
  /** Pods whose assign is under way, and whether they left meanwhile. */
  const assigning = new Map<string, { departed: boolean }>();
  const pending = new Map<string, { node: string; since: number; fragmented: boolean }>();
  const waits = new Waits();
  const podsPerNode = new PodsPerNode();
  const podsOn = new Map<string, number>();
  const subnetOf = new Map<string, string>();
  const typeOf = new Map(nodes.map((spec) => [spec.name, spec.type]));
  const idle: number[] = [];
  const joins = new JoinSchedule(nodes);
  const policy = poolPolicy(config);
  // Diagnosis (diagnosed runs only): the pool as each arriving pod found it.
  const byCause: Record<WaitCause, number> = { coldPool: 0, nodeFull: 0, cooling: 0, drained: 0 };
  const byInstanceType: Record<string, number> = {};
  const priorArrivals: number[] = [];
  const recentArrivals = nodes.map((): number[] => []);
  let servedAfterRefill = 0;
  let retried = 0;
  let nearJoin = 0;
  let duringWave = 0;
  let servable30s = 0;
  const idleWhenWaited: number[] = [];
  const idleByType = new IdleByType();
  const poolAsFound = async (
    node: string,
  ): Promise<{ cause: WaitCause; idle: number; ready30s: number }> => {
    const pool = await store.getPool(node);
    if (!pool) return { cause: 'coldPool', idle: 0, ready30s: 0 };
    const state = await store.loadNode(node);
    const stats = poolStats(pool, state.ips, clock.now(), policy.cooldownMs, policy.mode);
    const ready30s = poolStats(pool, state.ips, clock.now(), CNI_COOLDOWN_MS, policy.mode).ready;
    const cause: WaitCause =
      stats.total < Math.min(policy.minIdle, poolCapacity(pool, policy.mode))
        ? 'coldPool'
        : stats.total - stats.idle >= poolCapacity(pool, policy.mode)
          ? 'nodeFull'
          : stats.cooling > 0
            ? 'cooling'
            : 'drained';
    return { cause, idle: stats.idle, ready30s };
  };

  /**
   * Releases a pod's address as the CNI's DEL does: an invocation of its own, which kubelet sends
   * again RETRY_S later when it fails (a contended pool).
   */
  const release = async (pod: string, holding: { node: string; ip: string }): Promise<void> => {
    try {
      await releaseIp(invocation('request', DEFAULT_BACKOFF), holding.node, holding.ip, {
        namespace: 'games',
        pod,
      });
    } catch {
      void clock.at(clock.now() + RETRY_S * 1000, () => release(pod, holding));
    }
  };
  /** The pod is gone from its node: its address goes back. */
  const leave = (pod: string, holding: { node: string; ip: string }): Promise<void> => {
    podsOn.set(holding.node, (podsOn.get(holding.node) ?? 1) - 1);
    return release(pod, holding);
  };

  /**
   * The CNI's ADD for `pod`: an invocation of the node IP function. Answers whether it got an
   * address, and whether its own EC2 calls (an on-demand refill) came first.
   */
  const tryAssign = async (
    node: string,
    type: string,
    pod: string,
  ): Promise<{ served: boolean; refilled: boolean }> => {
    const calls = { mutating: 0 };
    const state = { departed: false };
    assigning.set(pod, state);
    try {
      const answer = await assignIp(invocation('request', DEFAULT_BACKOFF, calls), node, {
        namespace: 'games',
        pod,
        sticky: false,
      });
      const holding = { node, ip: answer.ip };
      const count = (podsOn.get(node) ?? 0) + 1;
      podsOn.set(node, count);
      podsPerNode.seen(type, count);
      // Its game ended while the address was on its way: the DEL follows the ADD.
      if (state.departed) await leave(pod, holding);
      else held.set(pod, holding);
      return { served: true, refilled: calls.mutating > 0 };
    } catch {
      return { served: false, refilled: calls.mutating > 0 };
    } finally {
      assigning.delete(pod);
    }
  };

  const join = async (spec: NodeSpec, subnetId: string): Promise<void> => {
    const instanceId = fake.launchInstance({ instanceType: spec.type, subnetId });
    const limits = INSTANCE_TYPES[spec.type];
    const maxPods = maxPodsOf(spec.type, policy.mode === 'prefix');
    subnetOf.set(spec.name, subnetId);
    cluster.withNodes(ec2Node(spec.name, instanceId, 'us-east-1a', maxPods));
    if (limits) {
      podsPerNode.capacity(
        spec.type,
        poolCapacity(
          {
            maxInterfaces: limits.maxNetworkInterfaces,
            ipv4PerInterface: limits.ipv4PerInterface,
            prefixDelegation: limits.prefixDelegation,
            maxPods,
          },
          policy.mode,
        ),
      );
    }
    // The EC2 state-change rule: "running" runs the pass for this instance.
    try {
      await handleInstanceStateChange(invocation('work', NODE_WORK_BACKOFF), {
        instanceId,
        state: 'running',
      });
    } catch {
      // Lambda does not retry the ENI function: the node is the next pass's to serve.
    }
  };

  const arrive = async (event: PodEvent, node: string, type: string): Promise<void> => {
    cluster.withPods(boundPod('games', event.pod, node));
    const since = clock.now();
    let found: Awaited<ReturnType<typeof poolAsFound>> | undefined;
    let recent: number[] = [];
    if (options.diagnose) {
      found = await poolAsFound(node);
      recent = (recentArrivals[event.node] ?? []).filter((t) => t > event.at - 60);
      recent.push(event.at);
      recentArrivals[event.node] = recent;
    }
    const fragmented = subnets.fragmentedNow(subnetOf.get(node) ?? '');
    const { served, refilled } = await tryAssign(node, type, event.pod);
    let waited = true;
    if (!served) {
      retried++;
      // Unless its game ended while the ADD was under way, the pod waits for kubelet's retry.
      if (cluster.pods.has(`games/${event.pod}`)) {
        pending.set(event.pod, { node, since, fragmented });
      } else waits.add(clock.now() - since, fragmented, since);
    } else if (refilled) {
      // Served, but only after an on-demand refill: the pod waited for EC2.
      servedAfterRefill++;
      waits.add(ON_DEMAND_WAIT_MS + (clock.now() - since), fragmented, since);
    } else if (clock.now() > since) {
      // Served without EC2 of its own, after waiting for the budget or a contended pool.
      waits.add(clock.now() - since, fragmented, since);
    } else waited = false;
    const spec = nodes[event.node];
    if (waited && found && spec) {
      byCause[found.cause]++;
      idleWhenWaited.push(found.idle);
      if (found.ready30s > 0) servable30s++;
      byInstanceType[spec.type] = (byInstanceType[spec.type] ?? 0) + 1;
      priorArrivals.push(recent.length);
      if (event.at - spec.joinAt < 120) nearJoin++;
      if (isBurstWave(Math.floor(event.at))) duringWave++;
    }
  };

  const depart = async (event: PodEvent): Promise<void> => {
    cluster.pods.delete(`games/${event.pod}`);
    const wait = pending.get(event.pod);
    if (wait) {
      // It waited until its game was given up: the whole session.
      pending.delete(event.pod);
      waits.add(clock.now() - wait.since, wait.fragmented, wait.since);
    }
    const inFlight = assigning.get(event.pod);
    if (inFlight) inFlight.departed = true;
    const holding = held.get(event.pod);
    if (holding) {
      held.delete(event.pod);
      await leave(event.pod, holding);
    }
  };

  /** kubelet's retry of every waiting pod, each an ADD of its own. */
  const retryWaiting = (): void => {
    for (const [pod, wait] of [...pending]) {
      if (assigning.has(pod)) continue;
      void (async () => {
        const { served } = await tryAssign(wait.node, typeOf.get(wait.node) ?? '', pod);
        if (served && pending.get(pod) === wait) {
          pending.delete(pod);
          waits.add(clock.now() - wait.since, wait.fragmented, wait.since);
        }
      })();
    }
  };

  // The scheduled pass; a pass still running skips its turn.
  let passing = false;
  const pass = async (): Promise<void> => {
    if (passing) return;
    passing = true;
    try {
      const summary = await runEniPass(invocation('work', DEFAULT_BACKOFF), { concurrency: 1 });
      idle.push(summary.idleIps);
      if (options.diagnose) {
        for (const spec of joins.joined()) {
          const state = await store.loadNode(spec.name);
          idleByType.add(spec.type, state.ips.filter((ip) => ip.state === 'free').length);
        }
      }
    } catch {
      // A failed pass is the next one's to make up.
    } finally {
      passing = false;
    }
  };

  let next = 0;
  const start = (second: number): void => {
    const secondStart = START + second * 1000;
    for (const { spec, subnetId } of joins.due(second)) {
      void clock.at(secondStart, () => join(spec, subnetId));
    }
    for (let event = events[next]; event && event.at < second + 1; event = events[++next]) {
      const at = START + Math.floor(event.at * 1000);
      const node = nodes[event.node]?.name ?? '';
      const type = typeOf.get(node) ?? '';
      const happening = event;
      void clock.at(at, () =>
        happening.kind === 'arrive' ? arrive(happening, node, type) : depart(happening),
      );
    }
    const secondEnd = secondStart + 999;
    if (second % RETRY_S === 0) void clock.at(secondEnd, async () => retryWaiting());
    if (second % BERTH_PASS_S === 0) void clock.at(secondEnd, pass);
  };

  const result = (): EniRunResult => {
    for (const wait of pending.values())
      waits.add(clock.now() - wait.since, wait.fragmented, wait.since);
    return {
      name,
      settings: {
        mode: policy.mode,
        minIdle: config.minIdle,
        maxIdle: config.maxIdle,
        cooldownSeconds: config.cooldownSeconds,
        passSeconds: BERTH_PASS_S,
        prefixReservation: String(subnets.reservations.size > 0),
        store: 'in-memory (EniStore contract)',
      },
      ...tally(ledger, idle, waits, podsPerNode),
      ...(options.diagnose
        ? {
            idleByInstanceType: idleByType.averages(),
            backgroundRefills,
            waitCauses: {
              byCause,
              servedAfterRefill,
              retried,
              withinTwoMinutesOfJoin: nearJoin,
              arrivalsInPrior60s: {
                median: median(priorArrivals),
                max: Math.max(0, ...priorArrivals),
              },
              duringBurstWave: duringWave,
              byInstanceType: Object.fromEntries(Object.entries(byInstanceType).sort()),
              idleWhenWaited: {
                median: median(idleWhenWaited),
                max: Math.max(0, ...idleWhenWaited),
              },
              servableWith30sCooldown: servable30s,
            },
          }
        : {}),
    };
  };
  return { start, result };
}

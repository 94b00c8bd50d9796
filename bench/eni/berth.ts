/**
 * berth in the ENI benchmark: the real pool code (`assignIp`, `releaseIp`, background refills and
 * `runEniPass` every 60 s) behind the account rate budget, over the in-memory store (the same
 * `EniStore` contract as DynamoDB, used for speed).
 */
import { parseConfig } from '../../shared/config/schema.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import type { Ec2Action, Ec2Network } from '../../shared/ec2/network.js';
import {
  type BackoffPolicy,
  BudgetedEc2Network,
  type RateBudget,
} from '../../shared/ec2/rate-budget.js';
import { eniDeps } from '../../shared/eni/deps.js';
import { InMemoryEniStore } from '../../shared/eni/memory-store.js';
import { handleInstanceStateChange, runEniPass } from '../../shared/eni/pass.js';
import type { PoolMode } from '../../shared/eni/policy.js';
import { poolCapacity, poolStats } from '../../shared/eni/policy.js';
import { refillAhead } from '../../shared/eni/refill.js';
import { type AssignDeps, assignIp, releaseIp } from '../../shared/eni/service.js';
import { type EniStore, forwarding } from '../../shared/eni/store.js';
import { FakeEc2, INSTANCE_TYPES } from '../../sim/ec2-fake.js';
import { seededRandom } from '../../sim/random.js';
import { FakeCluster } from '../../test/eni/cluster-fake.js';
import { round } from '../support/stats.js';
import { type DayKind, DaySubnets } from './day.js';
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

/** berth with maxIdle sized to the workload's largest matchmaking burst (about 35 pods). */
export const BURST_SIZED = { minIdle: 8, maxIdle: 32 };
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
  readonly clock: { now: number };
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
export function soloAccount(day: DayKind): DayAccount {
  const clock = { now: START };
  const random = seededRandom(SEED + 1);
  const fake = new FakeEc2({ now: () => clock.now, random, recordCalls: false });
  const budget = new InProcessSharedBudget(() => clock.now).for('bench');
  const marks = new InMemoryEniStore();
  return {
    clock,
    fake,
    subnets: new DaySubnets(fake, day),
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
  options: { readonly diagnose?: boolean } = {},
): Promise<EniRunResult> {
  const account = soloAccount(day);
  const cluster = berthOnDay(name, eni, account, 'bench', nodes, events, options);
  await runDay(account, [cluster]);
  return cluster.result();
}

/** Runs `clusters` through the day in `account`, a second at a time, their work in time order. */
export async function runDay(
  account: Pick<DayAccount, 'subnets'>,
  clusters: readonly BerthOnDay[],
): Promise<void> {
  for (let second = 0; second < DAY_S; second++) {
    account.subnets.advance(second);
    await runSecond(clusters, second);
  }
}

/**
 * One cluster's berth through a day in `account`, a second at a time: `open` it (nodes joining
 * then), run its work in time order (`nextAt`, `runNext`: pod events and background refills
 * falling due), `close` it (retries of waiting pods, the pass).
 */
export interface BerthOnDay {
  open(second: number): Promise<void>;
  /** When its next pod event or background refill is due, epoch ms; infinite when none is. */
  nextAt(): number;
  runNext(): Promise<void>;
  close(second: number): Promise<void>;
  result(): EniRunResult;
}

/**
 * One second of the day for every cluster of an account, their work merged in time order: each
 * cluster's pods and refills happen when they are due, not after the other clusters' second
 * (the shared clock only moves forward, so a cluster run after another would find it at the end
 * of that cluster's second, its pods served late and its refills due late).
 */
export async function runSecond(clusters: readonly BerthOnDay[], second: number): Promise<void> {
  for (const cluster of clusters) await cluster.open(second);
  const end = START + (second + 1) * 1000;
  for (;;) {
    // The earliest work first; of work due at one instant, the first cluster's.
    let first: BerthOnDay | undefined;
    let firstAt = end;
    for (const cluster of clusters) {
      const at = cluster.nextAt();
      if (at < firstAt) {
        first = cluster;
        firstAt = at;
      }
    }
    if (!first) break;
    await first.runNext();
  }
  for (const cluster of clusters) await cluster.close(second);
}

/** What one cluster's berth needs to run its real pool code in an account. */
export interface BerthEniInput {
  readonly account: Pick<DayAccount, 'fake' | 'random' | 'budgetFor' | 'subnetMarksFor' | 'onCall'>;
  readonly clusterName: string;
  readonly eni: BerthEniSettings;
  readonly cluster: FakeCluster;
  /** The cluster's own pool records (the subnet marks are the account's, `subnetMarksFor`). */
  readonly store: EniStore;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Told of every EC2 call the cluster makes. */
  readonly ledger: CallLedger;
  /** The lease holder: one per concurrent invocation. */
  readonly holder: string;
  /** How long its EC2 calls may wait for budget tokens; the request path's by default. */
  readonly backoff?: BackoffPolicy;
  /** Epoch ms its waits must end by (`BudgetedEc2Network.until`); none by default. */
  readonly deadline?: number;
}

/**
 * One cluster's berth ENI dependencies in an account: the real pool code over `store`, its EC2
 * calls paid from the account's budget and recorded in its ledger and the account's.
 */
export function berthEniDeps(input: BerthEniInput) {
  const { account, clusterName, now, sleep, ledger } = input;
  const marks = account.subnetMarksFor(clusterName);
  const ec2: Ec2Network = new BudgetedEc2Network(account.fake, {
    budget: account.budgetFor(clusterName),
    now,
    sleep,
    random: account.random,
    ...(input.backoff ? { backoff: input.backoff } : {}),
    ...(input.deadline === undefined ? {} : { deadline: input.deadline }),
    onCall: (call) => {
      const throttled = call.outcome === 'throttled';
      ledger.record(call.action, call.at, throttled);
      account.onCall?.(call.action, call.at, throttled);
    },
  });
  const config = parseConfig({ cluster: clusterName, eni: input.eni });
  const deps = eniDeps({
    store: {
      ...forwarding(input.store),
      subnetShortUntil: (subnetId, what) => marks.subnetShortUntil(subnetId, what),
      markSubnetShort: (subnetId, what, until) => marks.markSubnetShort(subnetId, what, until),
    },
    ec2,
    cluster: input.cluster,
    clusterName,
    config: config.eni,
    now,
    sleep,
    random: account.random,
    holder: input.holder,
  });
  return { deps, config };
}

/** berth for `clusterName`'s nodes and pods, in an account it may share with other clusters. */
export function berthOnDay(
  name: string,
  eni: BerthEniSettings,
  account: DayAccount,
  clusterName: string,
  nodes: NodeSpec[],
  events: PodEvent[],
  options: { readonly diagnose?: boolean } = {},
): BerthOnDay {
  const { clock, fake, subnets } = account;
  const now = () => clock.now;
  const cluster = new FakeCluster();
  const ledger = new CallLedger();
  const sleep = async (ms: number) => {
    clock.now += ms;
  };
  const { deps: base, config } = berthEniDeps({
    account,
    clusterName,
    eni,
    cluster,
    store: new InMemoryEniStore(),
    now,
    sleep,
    ledger,
    holder: 'bench',
  });
  // Background refills as the node IP function hands them to the ENI function: run
  // BACKGROUND_REFILL_DELAY_MS after the assign that asked, one queued per node at a time.
  const refillsDue = new Map<string, number>();
  const deps: AssignDeps = {
    ...base,
    refills: {
      request: async (node) => {
        if (!refillsDue.has(node)) refillsDue.set(node, clock.now + BACKGROUND_REFILL_DELAY_MS);
      },
    },
  };
  let backgroundRefills = 0;
  const runRefillsDueBy = async (time: number) => {
    const due = [...refillsDue].filter(([, at]) => at <= time).sort((a, b) => a[1] - b[1]);
    for (const [node, at] of due) {
      refillsDue.delete(node);
      clock.now = Math.max(clock.now, at);
      try {
        if ((await refillAhead(deps, node)).outcome === 'grown') backgroundRefills++;
      } catch {
        // Budget spent: the ENI function's invocation fails; the pass and on-demand refills
        // remain. The day waits for budget as the request path does (3 s), not as the ENI
        // function's refills do (NODE_WORK_BACKOFF): on the day's one clock a longer wait would
        // stop every node of the account with it (the storm runs on concurrent time instead).
      }
    }
  };
  const held = new Map<string, { node: string; ip: string }>();
  const pending = new Map<string, { node: string; since: number; fragmented: boolean }>();
  const waits = new Waits();
  const podsPerNode = new PodsPerNode();
  const podsOn = new Map<string, number>();
  const subnetOf = new Map<string, string>();
  const typeOf = new Map(nodes.map((spec) => [spec.name, spec.type]));
  const idle: number[] = [];
  const joins = new JoinSchedule(nodes);
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
    const pool = await deps.store.getPool(node);
    if (!pool) return { cause: 'coldPool', idle: 0, ready30s: 0 };
    const state = await deps.store.loadNode(node);
    const stats = poolStats(pool, state.ips, clock.now, deps.policy.cooldownMs, deps.policy.mode);
    const ready30s = poolStats(pool, state.ips, clock.now, CNI_COOLDOWN_MS, deps.policy.mode).ready;
    const cause: WaitCause =
      stats.total < Math.min(deps.policy.minIdle, poolCapacity(pool, deps.policy.mode))
        ? 'coldPool'
        : stats.total - stats.idle >= poolCapacity(pool, deps.policy.mode)
          ? 'nodeFull'
          : stats.cooling > 0
            ? 'cooling'
            : 'drained';
    return { cause, idle: stats.idle, ready30s };
  };

  const tryAssign = async (node: string, type: string, pod: string): Promise<boolean> => {
    try {
      const answer = await assignIp(deps, node, { namespace: 'games', pod, sticky: false });
      held.set(pod, { node, ip: answer.ip });
      const count = (podsOn.get(node) ?? 0) + 1;
      podsOn.set(node, count);
      podsPerNode.seen(type, count);
      return true;
    } catch {
      return false;
    }
  };

  const late = { pods: 0, longestMs: 0 };
  let next = 0;
  const open = async (second: number): Promise<void> => {
    const at = START + second * 1000;
    clock.now = Math.max(clock.now, at);
    for (const { spec, subnetId } of joins.due(second)) {
      const instanceId = fake.launchInstance({ instanceType: spec.type, subnetId });
      const limits = INSTANCE_TYPES[spec.type];
      const maxPods = maxPodsOf(spec.type, deps.policy.mode === 'prefix');
      subnetOf.set(spec.name, subnetId);
      cluster.addNode(spec.name, instanceId, 'us-east-1a', maxPods);
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
            deps.policy.mode,
          ),
        );
      }
      // The EC2 state-change rule: "running" runs the pass for this instance.
      await handleInstanceStateChange(deps, { instanceId, state: 'running' });
    }
  };
  const eventAt = (): number => {
    const event = events[next];
    return event ? START + Math.floor(event.at * 1000) : Number.POSITIVE_INFINITY;
  };
  const refillAt = (): number => Math.min(...refillsDue.values());
  const nextAt = (): number => Math.min(eventAt(), refillAt());
  const runNext = async (): Promise<void> => {
    if (refillAt() < eventAt()) await runRefillsDueBy(refillAt());
    else await runEvent();
  };
  const runEvent = async (): Promise<void> => {
    const event = events[next++];
    if (!event) return;
    const node = nodes[event.node]?.name ?? '';
    const type = typeOf.get(node) ?? '';
    await runRefillsDueBy(START + Math.floor(event.at * 1000));
    const lateMs = clock.now - (START + Math.floor(event.at * 1000));
    if (event.kind === 'arrive' && lateMs > 0) {
      late.pods++;
      late.longestMs = Math.max(late.longestMs, lateMs);
    }
    clock.now = Math.max(clock.now, START + Math.floor(event.at * 1000));
    if (event.kind === 'arrive') {
      cluster.addPod('games', event.pod, node);
      const before = ledger.mutating();
      const since = clock.now;
      let found: Awaited<ReturnType<typeof poolAsFound>> | undefined;
      let recent: number[] = [];
      if (options.diagnose) {
        found = await poolAsFound(node);
        recent = (recentArrivals[event.node] ?? []).filter((t) => t > event.at - 60);
        recent.push(event.at);
        recentArrivals[event.node] = recent;
      }
      const fragmented = subnets.shortOfPrefixes(subnetOf.get(node) ?? '');
      let waited = true;
      if (!(await tryAssign(node, type, event.pod))) {
        retried++;
        pending.set(event.pod, { node, since, fragmented });
      } else if (ledger.mutating() > before) {
        // Served, but only after an on-demand refill: the pod waited for EC2.
        servedAfterRefill++;
        waits.add(ON_DEMAND_WAIT_MS, fragmented);
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
    } else {
      cluster.removePod('games', event.pod);
      const wait = pending.get(event.pod);
      if (wait) {
        // It waited until its game was given up: the whole session.
        pending.delete(event.pod);
        waits.add(clock.now - wait.since, wait.fragmented);
      }
      const holding = held.get(event.pod);
      if (holding) {
        held.delete(event.pod);
        podsOn.set(holding.node, (podsOn.get(holding.node) ?? 1) - 1);
        await releaseIp(deps, holding.node, holding.ip, { namespace: 'games', pod: event.pod });
      }
    }
  };
  const close = async (second: number): Promise<void> => {
    await runRefillsDueBy(START + second * 1000 + 999);
    if (second % RETRY_S === 0 && pending.size > 0) {
      for (const [pod, wait] of [...pending]) {
        if (await tryAssign(wait.node, typeOf.get(wait.node) ?? '', pod)) {
          pending.delete(pod);
          waits.add(clock.now - wait.since, wait.fragmented);
        }
      }
    }
    if (second % BERTH_PASS_S === 0) {
      const summary = await runEniPass(deps, { concurrency: 1 });
      idle.push(summary.idleIps);
      if (options.diagnose) {
        for (const spec of joins.joined()) {
          const state = await deps.store.loadNode(spec.name);
          idleByType.add(spec.type, state.ips.filter((ip) => ip.state === 'free').length);
        }
      }
    }
  };
  const result = (): EniRunResult => {
    for (const wait of pending.values()) waits.add(clock.now - wait.since, wait.fragmented);
    return {
      name,
      settings: {
        mode: deps.policy.mode,
        minIdle: config.eni.minIdle,
        maxIdle: config.eni.maxIdle,
        cooldownSeconds: config.eni.cooldownSeconds,
        passSeconds: BERTH_PASS_S,
        store: 'in-memory (EniStore contract)',
      },
      ...tally(ledger, idle, waits, podsPerNode),
      lateArrivals: { pods: late.pods, longestSeconds: round(late.longestMs / 1000, 1) },
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
  return { open, nextAt, runNext, close, result };
}

/**
 * ENI pool benchmark: one simulated day of game-server churn on the EC2 fake (a few hundred
 * nodes of mixed instance types, a diurnal load, matchmaking bursts), run five times on the
 * same pre-generated workload:
 * - berth: the real pool code (`assignIp`, `releaseIp`, `runEniPass` every 60 s) behind the
 *   account rate budget, over the in-memory store (same `EniStore` contract as DynamoDB, used
 *   for speed), three times: config defaults, burst-sized, and sized to hold the idle IPs
 *   WARM_ENI_TARGET=1 holds (derived from that run, so the target is judged like for like);
 * - the AWS VPC CNI's ipamd warm pool with WARM_ENI_TARGET=1 (its default);
 * - ipamd with WARM_IP_TARGET / MINIMUM_IP_TARGET.
 * ipamd is modelled per node from the formulas in shared/reference/eni-ip-pool.md §2 (5 s loop,
 * cooldown IPs counted as available, 30 s decrease interval, one ENI freed per cycle, ENIs freed
 * only when old ≥ 1 min with no assigned or cooling IP), calling the same EC2 fake.
 *
 * Reports EC2 mutating calls, peak calls per second, idle IPs held (average, peak, per instance
 * type), pods that waited for an IP (and for how long, and why), throttling, and rate-budget
 * compliance; writes bench/results/eni.json. Run alone with `npx tsx bench/eni.ts`.
 */
import { pathToFileURL } from 'node:url';
import { parseConfig } from '../shared/config/schema.js';
import type { Ec2Action, Ec2Network } from '../shared/ec2/network.js';
import {
  BudgetedEc2Network,
  DEFAULT_EC2_BUDGET,
  EC2_ACTION_FAMILY,
  type Ec2ActionFamily,
  InMemoryRateBudget,
} from '../shared/ec2/rate-budget.js';
import { fullBucket, takeTokens } from '../shared/ec2/token-bucket.js';
import { eniDeps } from '../shared/eni/deps.js';
import { InMemoryEniStore } from '../shared/eni/memory-store.js';
import { handleInstanceStateChange, runEniPass } from '../shared/eni/pass.js';
import { poolCapacity, poolStats } from '../shared/eni/policy.js';
import { refillAhead } from '../shared/eni/refill.js';
import { type AssignDeps, assignIp, releaseIp } from '../shared/eni/service.js';
import { FakeCluster } from '../test/eni/cluster-fake.js';
import { FakeEc2, INSTANCE_TYPES, MUTATING_ACTIONS } from '../test/fakes/ec2-fake.js';
import { seededRandom } from '../test/support/random.js';
import { writeResults } from './support/results.js';

const DAY_S = 24 * 3600;
const NODES = 300;
const SEED = 20250601;
/** Node types, their share of the fleet and game-server slots (CPU-bound, below IP capacity). */
const FLEET = [
  { type: 't3.medium', share: 0.2, slots: 8 },
  { type: 'c5.large', share: 0.3, slots: 8 },
  { type: 'm5.xlarge', share: 0.35, slots: 16 },
  { type: 'c5.4xlarge', share: 0.15, slots: 64 },
] as const;
/** Nodes join over the first ten minutes (a fleet does not boot in one second). */
const JOIN_WINDOW_S = 600;
const SESSION_MIN_S = 10 * 60;
const SESSION_MAX_S = 30 * 60;
/** Every 15 minutes a matchmaking wave fills 40% of 5% of the nodes within 10 s... */
const BURST_EVERY_S = 15 * 60;
const BURST_NODE_SHARE = 0.05;
const BURST_SLOT_SHARE = 0.4;
/** ...and those matches end together about 15 minutes later. */
const BURST_SESSION_S = 15 * 60;
/** A pod refused an IP retries after this (kubelet/CNI retry). */
const RETRY_S = 5;
const BERTH_PASS_S = 60;
const CNI_LOOP_S = 5;
const CNI_COOLDOWN_MS = 30_000;
const CNI_DECREASE_INTERVAL_MS = 30_000;
const CNI_MIN_ENI_LIFETIME_MS = 60_000;
const WARM_IP = { warmIpTarget: 4, minimumIpTarget: 8 };
/** berth with maxIdle sized to the workload's largest matchmaking burst (about 35 pods). */
const BURST_SIZED = { minIdle: 8, maxIdle: 32 };
/**
 * From an assign's refill request to the ENI function's refill: Lambda's async invoke queue and
 * a warm start, with margin.
 */
const BACKGROUND_REFILL_DELAY_MS = 1_000;
/** What an on-demand refill inside assign costs the waiting pod (one EC2 call, plus margin). */
const ON_DEMAND_WAIT_MS = 1_000;
const START = Date.parse('2025-06-02T00:00:00Z');

/** One run's measurements. */
export interface EniRunResult {
  readonly name: string;
  readonly settings: Record<string, number | string>;
  readonly mutatingCalls: number;
  readonly callsByAction: Record<string, number>;
  readonly peakCallsPerSecond: number;
  readonly peakMutatingCallsPerSecond: number;
  readonly throttledCalls: number;
  readonly idleIps: { readonly average: number; readonly peak: number };
  readonly waitingPods: number;
  readonly waitSeconds: number;
  /** Calls beyond berth's budget buckets (replayed strictly); berth must have 0. */
  readonly budgetViolations: number;
  /** Average idle IPs per node of each instance type (ipamd runs and diagnosed berth runs). */
  readonly idleByInstanceType?: Record<string, number>;
  /** Why berth's pods waited, from the pool as the pod found it (diagnosed berth runs). */
  readonly waitCauses?: WaitCauses;
}

/** A waiting pod's cause, judged on the pool just before its assign, first match wins. */
export type WaitCause = 'coldPool' | 'nodeFull' | 'cooling' | 'drained';

/** Waiting pods by cause, with the context that explains them. */
export interface WaitCauses {
  /**
   * coldPool: the pool had fewer addresses than min(minIdle, capacity), its first fill not done;
   * nodeFull: every address the instance can hold in use; cooling: no ready IP but released ones
   * resting in cooldown; drained: no idle IP at all, the node's recent arrivals took them all.
   */
  readonly byCause: Record<WaitCause, number>;
  /** Waits served only after an on-demand refill (the pod waited for EC2 calls). */
  readonly servedAfterRefill: number;
  /** Waits whose refill did not produce an IP at once: the pod retried every RETRY_S. */
  readonly retried: number;
  /** Waits on a node that joined less than 2 minutes before. */
  readonly withinTwoMinutesOfJoin: number;
  /** Arrivals on the same node in the 60 s before a wait (the wait's own included). */
  readonly arrivalsInPrior60s: { readonly median: number; readonly max: number };
  /** Waits that came within 15 s of a matchmaking wave's start. */
  readonly duringBurstWave: number;
  /** Waits by instance type. */
  readonly byInstanceType: Record<string, number>;
  /** Idle IPs on the pool when the waiting pod arrived (all cooling: none was ready). */
  readonly idleWhenWaited: { readonly median: number; readonly max: number };
  /** Waits an IP released 30–60 s before could have served: ready under ipamd's 30 s cooldown. */
  readonly servableWith30sCooldown: number;
}

/** One berth run against the VPC CNI runs. */
export interface EniTargetCheck {
  readonly run: string;
  readonly callsVsWarmEni: number;
  readonly callsVsWarmIp: number;
  readonly idleIpsVsWarmEni: number;
  /** At most 25% of both VPC CNI runs' mutating calls. */
  readonly callsTargetMet: boolean;
  /** No more pods waiting than either VPC CNI run. */
  readonly waitingTargetMet: boolean;
  readonly budgetRespected: boolean;
}

/** What `runEniBench` answers and writes. */
export interface EniBenchResult {
  readonly workload: {
    readonly nodes: number;
    readonly fleet: readonly { type: string; nodes: number; slots: number }[];
    readonly podsStarted: number;
    readonly simulatedHours: number;
    readonly store: string;
  };
  readonly runs: readonly EniRunResult[];
  /** Per berth run: its calls and idle IPs as a share of the VPC CNI runs', and the targets. */
  readonly judgments: readonly EniTargetCheck[];
  /** The targets, judged default against default, one entry each. */
  readonly targets: readonly {
    readonly target: string;
    readonly pass: boolean;
    readonly line: string;
  }[];
  /** The target, default against default: berth's config defaults vs both ipamd runs. */
  readonly verdict: EniTargetCheck & { readonly against: readonly string[]; readonly met: boolean };
  readonly runtimeMs: number;
}

interface NodeSpec {
  readonly name: string;
  readonly type: string;
  readonly slots: number;
  readonly joinAt: number;
  readonly cniPhase: number;
}

interface PodEvent {
  readonly at: number;
  readonly kind: 'arrive' | 'depart';
  readonly node: number;
  readonly pod: string;
}

/** The fraction of slots in use the day wants at second `t`: lowest at 04:00, highest at 16:00. */
function diurnal(t: number): number {
  return 0.2 + 0.65 * (0.5 - 0.5 * Math.cos((2 * Math.PI * (t - 4 * 3600)) / DAY_S));
}

/** The day's pod arrivals and departures, identical for every policy. */
function generateWorkload(): { nodes: NodeSpec[]; events: PodEvent[] } {
  const random = seededRandom(SEED);
  const nodes: NodeSpec[] = [];
  for (let i = 0; i < NODES; i++) {
    const pick = random();
    let cumulative = 0;
    const kind =
      FLEET.find((f) => {
        cumulative += f.share;
        return pick < cumulative;
      }) ?? FLEET[FLEET.length - 1];
    if (!kind) throw new Error('empty fleet');
    nodes.push({
      name: `node-${String(i).padStart(3, '0')}`,
      type: kind.type,
      slots: kind.slots,
      joinAt: Math.floor(random() * JOIN_WINDOW_S),
      cniPhase: Math.floor(random() * CNI_LOOP_S),
    });
  }
  const candidates: { at: number; node: number; session: number }[] = [];
  const meanSession = (SESSION_MIN_S + SESSION_MAX_S) / 2;
  nodes.forEach((node, n) => {
    // A thinned Poisson process: rate at second t = diurnal(t) × slots / mean session.
    const peakRate = (0.85 * node.slots) / meanSession;
    let t = node.joinAt + 30;
    for (;;) {
      t += -Math.log(1 - random()) / peakRate;
      if (t >= DAY_S) break;
      if (random() * 0.85 <= diurnal(t)) {
        const session = SESSION_MIN_S + random() * (SESSION_MAX_S - SESSION_MIN_S);
        candidates.push({ at: t, node: n, session });
      }
    }
  });
  for (let wave = BURST_EVERY_S; wave < DAY_S; wave += BURST_EVERY_S) {
    nodes.forEach((node, n) => {
      if (random() >= BURST_NODE_SHARE || wave < node.joinAt + 60) return;
      const size = Math.round(BURST_SLOT_SHARE * node.slots * (0.5 + diurnal(wave)));
      for (let k = 0; k < size; k++) {
        candidates.push({
          at: wave + random() * 10,
          node: n,
          session: BURST_SESSION_S + (random() - 0.5) * 120,
        });
      }
    });
  }
  candidates.sort((a, b) => a.at - b.at);
  // Admit an arrival only while its node has a free slot (the fleet allocator would place it
  // elsewhere otherwise): the same admitted pods then run under every policy.
  const ends: number[][] = nodes.map(() => []);
  const events: PodEvent[] = [];
  let seq = 0;
  for (const c of candidates) {
    const active = (ends[c.node] ?? []).filter((end) => end > c.at);
    ends[c.node] = active;
    if (active.length >= (nodes[c.node]?.slots ?? 0)) continue;
    const pod = `gs-${seq++}`;
    const end = Math.min(c.at + c.session, DAY_S - 1);
    active.push(end);
    events.push({ at: c.at, kind: 'arrive', node: c.node, pod });
    events.push({ at: end, kind: 'depart', node: c.node, pod });
  }
  events.sort((a, b) => a.at - b.at || (a.kind === 'depart' ? -1 : 1));
  return { nodes, events };
}

/** Node indexes in the order they join the cluster. */
/** The nodes in the order they join the cluster, handed out as their join time comes. */
class JoinSchedule {
  readonly #nodes: readonly NodeSpec[];
  readonly #order: readonly number[];
  #joined = 0;

  constructor(nodes: readonly NodeSpec[]) {
    this.#nodes = nodes;
    this.#order = nodes
      .map((_, i) => i)
      .sort((a, b) => (nodes[a]?.joinAt ?? 0) - (nodes[b]?.joinAt ?? 0));
  }

  /** The nodes joining by `second`, each once, with the subnet its instance launches in. */
  *due(second: number): Generator<{
    readonly index: number;
    readonly spec: NodeSpec;
    readonly subnetId: string;
  }> {
    while (this.#joined < this.#order.length) {
      const index = this.#order[this.#joined] ?? 0;
      const spec = this.#nodes[index];
      if (!spec || spec.joinAt > second) return;
      this.#joined++;
      yield { index, spec, subnetId: index % 2 ? 'subnet-a' : 'subnet-b' };
    }
  }

  /** The nodes that have joined so far. */
  joined(): NodeSpec[] {
    return this.#order.slice(0, this.#joined).flatMap((index) => this.#nodes[index] ?? []);
  }
}

/** Counts calls per action and per second, for every run alike. */
class CallLedger {
  readonly byAction = new Map<string, number>();
  readonly perSecond = new Map<number, number>();
  readonly mutatingPerSecond = new Map<number, number>();
  readonly byFamily = new Map<Ec2ActionFamily, number[]>();
  throttled = 0;

  record(action: Ec2Action, atMs: number, throttled: boolean): void {
    this.byAction.set(action, (this.byAction.get(action) ?? 0) + 1);
    const second = Math.floor(atMs / 1000);
    this.perSecond.set(second, (this.perSecond.get(second) ?? 0) + 1);
    if (MUTATING_ACTIONS.has(action)) {
      this.mutatingPerSecond.set(second, (this.mutatingPerSecond.get(second) ?? 0) + 1);
    }
    const family = EC2_ACTION_FAMILY[action];
    const times = this.byFamily.get(family) ?? [];
    times.push(atMs);
    this.byFamily.set(family, times);
    if (throttled) this.throttled++;
  }

  mutating(): number {
    let total = 0;
    for (const [action, count] of this.byAction) {
      if (MUTATING_ACTIONS.has(action as Ec2Action)) total += count;
    }
    return total;
  }

  /** Replays every family's calls through berth's budget bucket; counts calls it would refuse. */
  budgetViolations(): number {
    let violations = 0;
    for (const [family, times] of this.byFamily) {
      const spec = DEFAULT_EC2_BUDGET[family];
      let state = fullBucket(spec, times[0] ?? 0);
      for (const at of [...times].sort((a, b) => a - b)) {
        // A hair of slack for float rounding in the refill arithmetic.
        const outcome = takeTokens(spec, state, at, 0.999);
        if (!outcome.granted) violations++;
        state = { ...outcome.state, tokens: outcome.state.tokens - (outcome.granted ? 0.001 : 0) };
      }
    }
    return violations;
  }
}

const peak = (map: Map<number, number>) => Math.max(0, ...map.values());

/** Idle IPs per node of each instance type, summed over the samples. */
class IdleByType {
  readonly #sum = new Map<string, number>();
  readonly #samples = new Map<string, number>();

  add(type: string, idle: number): void {
    this.#sum.set(type, (this.#sum.get(type) ?? 0) + idle);
    this.#samples.set(type, (this.#samples.get(type) ?? 0) + 1);
  }

  averages(): Record<string, number> {
    return Object.fromEntries(
      FLEET.map((f) => [
        f.type,
        Math.round(
          ((this.#sum.get(f.type) ?? 0) / Math.max(1, this.#samples.get(f.type) ?? 0)) * 10,
        ) / 10,
      ]),
    );
  }
}

// ---- berth ------------------------------------------------------------------------------------

/** Whether `second` falls in the first 15 s of a matchmaking wave (waves fill within 10 s). */
function isBurstWave(second: number): boolean {
  return second >= BURST_EVERY_S && second % BURST_EVERY_S < 15;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function runBerth(
  name: string,
  eni: { readonly minIdle?: number; readonly maxIdle?: number },
  nodes: NodeSpec[],
  events: PodEvent[],
  options: { readonly diagnose?: boolean } = {},
): Promise<EniRunResult> {
  const clock = { now: START };
  const now = () => clock.now;
  const random = seededRandom(SEED + 1);
  const fake = new FakeEc2({ now, random, recordCalls: false });
  fake.addSubnet('subnet-a', '10.0.0.0/17');
  fake.addSubnet('subnet-b', '10.0.128.0/17');
  const cluster = new FakeCluster();
  const ledger = new CallLedger();
  const sleep = async (ms: number) => {
    clock.now += ms;
  };
  const ec2: Ec2Network = new BudgetedEc2Network(fake, {
    budget: new InMemoryRateBudget(now),
    now,
    sleep,
    random,
    onCall: (call) => ledger.record(call.action, call.at, call.outcome === 'throttled'),
  });
  const config = parseConfig({ cluster: 'bench', eni });
  const base = eniDeps({
    store: new InMemoryEniStore(),
    ec2,
    cluster,
    clusterName: 'bench',
    config: config.eni,
    now,
    sleep,
    random,
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
        // Budget spent: the ENI function's invocation fails; the pass and on-demand refills remain.
      }
    }
  };
  const held = new Map<string, { node: string; ip: string }>();
  const pending = new Map<string, { node: string; since: number }>();
  let waitingPods = 0;
  let waitMs = 0;
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

  const tryAssign = async (node: string, pod: string): Promise<boolean> => {
    try {
      const answer = await assignIp(deps, node, { namespace: 'games', pod, sticky: false });
      held.set(pod, { node, ip: answer.ip });
      return true;
    } catch {
      return false;
    }
  };

  let next = 0;
  for (let second = 0; second < DAY_S; second++) {
    const at = START + second * 1000;
    clock.now = Math.max(clock.now, at);
    for (const { spec, subnetId } of joins.due(second)) {
      const instanceId = fake.launchInstance({ instanceType: spec.type, subnetId });
      cluster.addNode(spec.name, instanceId);
      // The EC2 state-change rule: "running" runs the pass for this instance.
      await handleInstanceStateChange(deps, { instanceId, state: 'running' });
    }
    for (; next < events.length && (events[next]?.at ?? DAY_S) < second + 1; next++) {
      const event = events[next];
      if (!event) continue;
      const node = nodes[event.node]?.name ?? '';
      await runRefillsDueBy(START + Math.floor(event.at * 1000));
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
        let waited = true;
        if (!(await tryAssign(node, event.pod))) {
          waitingPods++;
          retried++;
          pending.set(event.pod, { node, since });
        } else if (ledger.mutating() > before) {
          // Served, but only after an on-demand refill: the pod waited for EC2.
          waitingPods++;
          servedAfterRefill++;
          waitMs += ON_DEMAND_WAIT_MS;
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
        pending.delete(event.pod);
        const holding = held.get(event.pod);
        if (holding) {
          held.delete(event.pod);
          await releaseIp(deps, holding.node, holding.ip, { namespace: 'games', pod: event.pod });
        }
      }
    }
    await runRefillsDueBy(at + 999);
    if (second % RETRY_S === 0 && pending.size > 0) {
      for (const [pod, wait] of [...pending]) {
        if (await tryAssign(wait.node, pod)) {
          pending.delete(pod);
          waitMs += clock.now - wait.since;
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
  }
  for (const wait of pending.values()) waitMs += clock.now - wait.since;
  return {
    name,
    settings: {
      minIdle: config.eni.minIdle,
      maxIdle: config.eni.maxIdle,
      cooldownSeconds: config.eni.cooldownSeconds,
      passSeconds: BERTH_PASS_S,
      store: 'in-memory (EniStore contract)',
    },
    ...tally(ledger, idle, waitingPods, waitMs),
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
}

// ---- AWS VPC CNI ipamd model ------------------------------------------------------------------

interface CniIp {
  pod?: string;
  unassignedAt?: number;
}

interface CniEni {
  readonly eniId: string;
  readonly primary: boolean;
  readonly createdAt: number;
  attachmentId: string;
  readonly deviceIndex: number;
  readonly ips: Map<string, CniIp>;
}

interface CniNode {
  readonly spec: NodeSpec;
  readonly instanceId: string;
  readonly subnetId: string;
  readonly maxEnis: number;
  readonly perEni: number;
  readonly maxPods: number;
  readonly enis: CniEni[];
  readonly pending: Map<string, number>;
  lastDecrease: number;
}

interface CniSettings {
  readonly warmEniTarget: number;
  readonly warmIpTarget: number;
  readonly minimumIpTarget: number;
}

/** One node's ipamd, per reference §2.2–2.7. */
class Ipamd {
  readonly #ec2: FakeEc2;
  readonly #ledger: CallLedger;
  readonly #now: () => number;
  readonly #settings: CniSettings;
  #token = 0;

  constructor(ec2: FakeEc2, ledger: CallLedger, now: () => number, settings: CniSettings) {
    this.#ec2 = ec2;
    this.#ledger = ledger;
    this.#now = now;
    this.#settings = settings;
  }

  get #ipTargets(): boolean {
    return this.#settings.warmIpTarget > 0 || this.#settings.minimumIpTarget > 0;
  }

  /** One EC2 request; a failure (throttled or not) answers undefined and is retried next cycle. */
  async #call<T>(
    action: Ec2Action,
    run: () => Promise<T>,
  ): Promise<{ readonly value: T } | undefined> {
    try {
      const value = await run();
      this.#ledger.record(action, this.#now(), false);
      return { value };
    } catch (error) {
      const throttled = (error as { name?: string }).name === 'RequestLimitExceeded';
      this.#ledger.record(action, this.#now(), throttled);
      return undefined;
    }
  }

  counts(node: CniNode): { total: number; assigned: number } {
    let total = 0;
    let assigned = 0;
    for (const eni of node.enis) {
      total += eni.ips.size;
      for (const ip of eni.ips.values()) if (ip.pod) assigned++;
    }
    return { total, assigned };
  }

  /** CNI ADD: an unused IP past its 30 s cooldown, or nothing (the pod waits). */
  take(node: CniNode, pod: string): boolean {
    const now = this.#now();
    for (const eni of node.enis) {
      for (const ip of eni.ips.values()) {
        if (!ip.pod && (ip.unassignedAt === undefined || now - ip.unassignedAt > CNI_COOLDOWN_MS)) {
          ip.pod = pod;
          ip.unassignedAt = undefined;
          return true;
        }
      }
    }
    return false;
  }

  /** CNI DEL. */
  free(node: CniNode, pod: string): void {
    for (const eni of node.enis) {
      for (const ip of eni.ips.values()) {
        if (ip.pod === pod) {
          ip.pod = undefined;
          ip.unassignedAt = this.#now();
          return;
        }
      }
    }
  }

  /** One `updateIPPoolIfRequired` cycle, then pending pods are served. */
  async tick(node: CniNode): Promise<void> {
    const { warmEniTarget, warmIpTarget, minimumIpTarget } = this.#settings;
    const { total, assigned } = this.counts(node);
    const available = total - assigned;
    let short: number;
    let over: number;
    let tooLow: boolean;
    if (this.#ipTargets) {
      short = Math.max(warmIpTarget - available, 0);
      short = Math.max(short, minimumIpTarget - total);
      over = Math.max(available - warmIpTarget, 0);
      over = Math.max(Math.min(over, total - minimumIpTarget), 0);
      tooLow = short > 0;
    } else {
      short = node.perEni;
      over = 0;
      tooLow = available < node.perEni * warmEniTarget || (warmEniTarget === 0 && available === 0);
    }
    if (total >= node.maxPods) tooLow = false;
    if (tooLow) await this.#increase(node, short);
    else if (over > 0 && this.#now() - node.lastDecrease > CNI_DECREASE_INTERVAL_MS) {
      await this.#decrease(node, over);
      node.lastDecrease = this.#now();
    }
    const extra = this.#ipTargets || available >= (warmEniTarget + 1) * node.perEni;
    if (extra) await this.#tryFreeEni(node);
    for (const [pod, since] of [...node.pending]) {
      if (!this.take(node, pod)) break;
      node.pending.delete(pod);
      waitTotals.ms += this.#now() - since;
    }
  }

  async #increase(node: CniNode, short: number): Promise<void> {
    const withRoom = node.enis.find((eni) => eni.ips.size < node.perEni);
    if (withRoom) {
      const want = this.#ipTargets
        ? Math.min(node.perEni - withRoom.ips.size, short)
        : node.perEni - withRoom.ips.size;
      const ips = await this.#call('AssignPrivateIpAddresses', () =>
        this.#ec2.assignPrivateIpAddresses({ eniId: withRoom.eniId, count: want }),
      );
      for (const ip of ips?.value ?? []) withRoom.ips.set(ip, {});
      return;
    }
    if (node.enis.length >= node.maxEnis) return;
    const count = this.#ipTargets ? Math.min(short, node.perEni) : node.perEni;
    const created = await this.#call('CreateNetworkInterface', () =>
      this.#ec2.createNetworkInterface({
        subnetId: node.subnetId,
        securityGroupIds: ['sg-0123456789abcdef0'],
        secondaryIpCount: count,
        description: `aws-K8S-${node.instanceId}`,
        tags: [{ key: 'node.k8s.amazonaws.com/instance_id', value: node.instanceId }],
        clientToken: `cni-${this.#token++}`,
      }),
    );
    if (!created) return;
    const eni = created.value;
    const used = new Set(node.enis.map((e) => e.deviceIndex));
    let deviceIndex = 1;
    while (used.has(deviceIndex)) deviceIndex++;
    const attached = await this.#call('AttachNetworkInterface', () =>
      this.#ec2.attachNetworkInterface({
        eniId: eni.eniId,
        instanceId: node.instanceId,
        deviceIndex,
      }),
    );
    if (!attached) {
      // ipamd deletes an ENI it could not attach.
      await this.#call('DeleteNetworkInterface', () =>
        this.#ec2.deleteNetworkInterface({ eniId: eni.eniId }),
      );
      return;
    }
    await this.#call('ModifyNetworkInterfaceAttribute', () =>
      this.#ec2.setDeleteOnTermination({
        eniId: eni.eniId,
        attachmentId: attached.value.attachmentId,
      }),
    );
    node.enis.push({
      eniId: eni.eniId,
      primary: false,
      createdAt: this.#now(),
      attachmentId: attached.value.attachmentId,
      deviceIndex,
      ips: new Map(eni.secondaryIps.map((ip) => [ip, {}])),
    });
  }

  /** WARM_IP_TARGET mode: free unassigned IPs (cooldown not checked), one call per ENI. */
  async #decrease(node: CniNode, over: number): Promise<void> {
    let left = over;
    for (const eni of node.enis) {
      if (left <= 0) break;
      const freeable = [...eni.ips].filter(([, ip]) => !ip.pod).slice(0, left);
      if (freeable.length === 0) continue;
      const done = await this.#call('UnassignPrivateIpAddresses', () =>
        this.#ec2.unassignPrivateIpAddresses({ eniId: eni.eniId, ips: freeable.map(([ip]) => ip) }),
      );
      if (done === undefined) return;
      for (const [ip] of freeable) eni.ips.delete(ip);
      left -= freeable.length;
    }
  }

  /** `getDeletableENI` + FreeENI: at most one ENI per cycle. */
  async #tryFreeEni(node: CniNode): Promise<void> {
    const now = this.#now();
    const { warmIpTarget, minimumIpTarget } = this.#settings;
    const deletable = node.enis.find((eni) => {
      if (eni.primary || now - eni.createdAt < CNI_MIN_ENI_LIFETIME_MS) return false;
      for (const ip of eni.ips.values()) {
        if (ip.pod) return false;
        if (ip.unassignedAt !== undefined && now - ip.unassignedAt <= CNI_COOLDOWN_MS) return false;
      }
      if (!this.#ipTargets) return true;
      let otherFree = 0;
      let otherTotal = 0;
      for (const other of node.enis) {
        if (other === eni) continue;
        otherTotal += other.ips.size;
        for (const ip of other.ips.values()) if (!ip.pod) otherFree++;
      }
      return otherFree >= warmIpTarget && otherTotal >= minimumIpTarget;
    });
    if (!deletable) return;
    const detached = await this.#call('DetachNetworkInterface', () =>
      this.#ec2.detachNetworkInterface({ attachmentId: deletable.attachmentId }),
    );
    if (detached === undefined) return;
    node.enis.splice(node.enis.indexOf(deletable), 1);
    // ipamd sleeps 2 s between detach and delete; the fake's detach takes 1 s.
    const at = this.#now();
    deferred.push({ at: at + 2_000, run: () => this.#deleteLater(deletable.eniId, 0) });
  }

  async #deleteLater(eniId: string, attempt: number): Promise<void> {
    const done = await this.#call('DeleteNetworkInterface', () =>
      this.#ec2.deleteNetworkInterface({ eniId }),
    );
    if (done === undefined && attempt < 12) {
      deferred.push({
        at: this.#now() + 500 * 2 ** attempt,
        run: () => this.#deleteLater(eniId, attempt + 1),
      });
    }
  }
}

/** Work ipamd scheduled for later (deletes after detach), shared by the model's nodes. */
let deferred: { at: number; run: () => Promise<void> }[] = [];
const waitTotals = { ms: 0 };

async function runVpcCni(
  name: string,
  settings: CniSettings,
  nodes: NodeSpec[],
  events: PodEvent[],
): Promise<EniRunResult> {
  deferred = [];
  waitTotals.ms = 0;
  const clock = { now: START };
  const now = () => clock.now;
  const fake = new FakeEc2({ now, random: seededRandom(SEED + 2), recordCalls: false });
  fake.addSubnet('subnet-a', '10.0.0.0/17');
  fake.addSubnet('subnet-b', '10.0.128.0/17');
  const ledger = new CallLedger();
  const ipamd = new Ipamd(fake, ledger, now, settings);
  const live: (CniNode | undefined)[] = nodes.map(() => undefined);
  const byPhase: CniNode[][] = Array.from({ length: CNI_LOOP_S }, () => []);
  const idle: number[] = [];
  const idleByType = new IdleByType();
  let waitingPods = 0;
  const joins = new JoinSchedule(nodes);
  let next = 0;
  for (let second = 0; second < DAY_S; second++) {
    clock.now = START + second * 1000;
    for (const { index, spec, subnetId } of joins.due(second)) {
      const instanceId = fake.launchInstance({ instanceType: spec.type, subnetId });
      const limits = INSTANCE_TYPES[spec.type];
      const maxEnis = limits?.maxNetworkInterfaces ?? 1;
      const perEni = (limits?.ipv4PerInterface ?? 1) - 1;
      const primary = fake
        .allInterfaces()
        .find(
          (eni) => eni.attachment?.instanceId === instanceId && eni.attachment.deviceIndex === 0,
        );
      const node: CniNode = {
        spec,
        instanceId,
        subnetId,
        maxEnis,
        perEni,
        maxPods: maxEnis * perEni + 2,
        enis: [
          {
            eniId: primary?.eniId ?? '',
            primary: true,
            createdAt: clock.now,
            attachmentId: primary?.attachment?.attachmentId ?? '',
            deviceIndex: 0,
            ips: new Map(),
          },
        ],
        pending: new Map(),
        lastDecrease: 0,
      };
      live[index] = node;
      byPhase[spec.cniPhase]?.push(node);
    }
    for (; next < events.length && (events[next]?.at ?? DAY_S) < second + 1; next++) {
      const event = events[next];
      const node = event ? live[event.node] : undefined;
      if (!event || !node) continue;
      clock.now = START + Math.floor(event.at * 1000);
      if (event.kind === 'arrive') {
        if (!ipamd.take(node, event.pod)) {
          waitingPods++;
          node.pending.set(event.pod, clock.now);
        }
      } else if (!node.pending.delete(event.pod)) {
        ipamd.free(node, event.pod);
      }
    }
    clock.now = START + second * 1000;
    const due = deferred.filter((d) => d.at <= clock.now);
    if (due.length > 0) {
      deferred = deferred.filter((d) => d.at > clock.now);
      for (const work of due) await work.run();
    }
    for (const node of byPhase[second % CNI_LOOP_S] ?? []) await ipamd.tick(node);
    if (second % BERTH_PASS_S === 0) {
      let sum = 0;
      for (const node of live) {
        if (!node) continue;
        const { total, assigned } = ipamd.counts(node);
        sum += total - assigned;
        idleByType.add(node.spec.type, total - assigned);
      }
      idle.push(sum);
    }
  }
  for (const node of live)
    for (const since of node?.pending.values() ?? []) waitTotals.ms += clock.now - since;
  return {
    name,
    settings: { ...settings, loopSeconds: CNI_LOOP_S, cooldownSeconds: CNI_COOLDOWN_MS / 1000 },
    ...tally(ledger, idle, waitingPods, waitTotals.ms),
    idleByInstanceType: idleByType.averages(),
  };
}

/** What every run reports the same way: EC2 calls, idle IPs over time, pods that waited. */
function tally(ledger: CallLedger, idle: readonly number[], waitingPods: number, waitMs: number) {
  return {
    mutatingCalls: ledger.mutating(),
    callsByAction: Object.fromEntries([...ledger.byAction].sort()),
    peakCallsPerSecond: peak(ledger.perSecond),
    peakMutatingCallsPerSecond: peak(ledger.mutatingPerSecond),
    throttledCalls: ledger.throttled,
    idleIps: {
      average: Math.round(idle.reduce((a, b) => a + b, 0) / Math.max(1, idle.length)),
      peak: Math.max(0, ...idle),
    },
    waitingPods,
    waitSeconds: Math.round(waitMs / 1000),
    budgetViolations: ledger.budgetViolations(),
  };
}

// ---- report -----------------------------------------------------------------------------------

function table(runs: readonly EniRunResult[]): string {
  const header = [
    'run',
    'mutating calls',
    'peak calls/s',
    'peak mutating/s',
    'throttled',
    'idle IPs avg',
    'idle IPs peak',
    'waiting pods',
    'wait s',
    'over berth budget',
  ];
  const rows = runs.map((r) => [
    r.name,
    String(r.mutatingCalls),
    String(r.peakCallsPerSecond),
    String(r.peakMutatingCallsPerSecond),
    String(r.throttledCalls),
    String(r.idleIps.average),
    String(r.idleIps.peak),
    String(r.waitingPods),
    String(r.waitSeconds),
    String(r.budgetViolations),
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/**
 * Runs the day four times (ipamd twice, then berth at its config defaults and burst-sized), prints
 * the table and writes bench/results/eni.json. The target is judged default against default:
 * berth as a user gets it, against ipamd as a user gets it (and its WARM_IP variant).
 */
export async function runEniBench(): Promise<EniBenchResult> {
  const started = performance.now();
  const { nodes, events } = generateWorkload();
  const warmEni = await runVpcCni(
    'vpc-cni WARM_ENI_TARGET=1',
    { warmEniTarget: 1, warmIpTarget: 0, minimumIpTarget: 0 },
    nodes,
    events,
  );
  const warmIp = await runVpcCni(
    `vpc-cni WARM_IP_TARGET=${WARM_IP.warmIpTarget} MINIMUM_IP_TARGET=${WARM_IP.minimumIpTarget}`,
    { warmEniTarget: 1, ...WARM_IP },
    nodes,
    events,
  );
  const defaults = await runBerth('berth (config defaults)', {}, nodes, events, {
    diagnose: true,
  });
  const berthRuns = [
    defaults,
    await runBerth('berth (burst-sized)', BURST_SIZED, nodes, events, { diagnose: true }),
  ];
  const runs = [...berthRuns, warmEni, warmIp];
  const ratio = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 1000) / 1000;
  const judge = (berth: EniRunResult): EniTargetCheck => ({
    run: berth.name,
    callsVsWarmEni: ratio(berth.mutatingCalls, warmEni.mutatingCalls),
    callsVsWarmIp: ratio(berth.mutatingCalls, warmIp.mutatingCalls),
    idleIpsVsWarmEni: ratio(berth.idleIps.average, warmEni.idleIps.average),
    callsTargetMet:
      berth.mutatingCalls <= 0.25 * warmEni.mutatingCalls &&
      berth.mutatingCalls <= 0.25 * warmIp.mutatingCalls,
    waitingTargetMet:
      berth.waitingPods <= warmEni.waitingPods && berth.waitingPods <= warmIp.waitingPods,
    budgetRespected: berth.budgetViolations === 0,
  });
  const verdict = judge(defaults);
  const result: EniBenchResult = {
    workload: {
      nodes: nodes.length,
      fleet: FLEET.map((f) => ({
        type: f.type,
        nodes: nodes.filter((n) => n.type === f.type).length,
        slots: f.slots,
      })),
      podsStarted: events.filter((e) => e.kind === 'arrive').length,
      simulatedHours: DAY_S / 3600,
      store:
        'berth ran on InMemoryEniStore (the EniStore contract DynamoEniStore passes), for speed',
    },
    runs,
    judgments: berthRuns.map(judge),
    targets: [
      {
        target: "mutating EC2 calls at most 25% of both VPC CNI runs'",
        pass: verdict.callsTargetMet,
        line: `${verdict.run}: ${verdict.callsVsWarmEni} of WARM_ENI's and ${verdict.callsVsWarmIp} of WARM_IP's calls`,
      },
      {
        target: 'no more pods waiting for an IP than either VPC CNI run',
        pass: verdict.waitingTargetMet,
        line: `${verdict.run}: ${defaults.waitingPods} pods waited, against ${warmEni.waitingPods} and ${warmIp.waitingPods}`,
      },
      {
        target: 'the EC2 rate budget respected',
        pass: verdict.budgetRespected,
        line: `${verdict.run}: ${defaults.budgetViolations} calls over the budget`,
      },
    ],
    verdict: {
      ...verdict,
      against: [warmEni.name, warmIp.name],
      met: verdict.callsTargetMet && verdict.waitingTargetMet && verdict.budgetRespected,
    },
    runtimeMs: Math.round(performance.now() - started),
  };
  console.log(
    `ENI pools: ${result.workload.nodes} nodes, ${result.workload.podsStarted} pods over ${result.workload.simulatedHours} h (${result.workload.store})`,
  );
  console.log(table(runs));
  for (const target of result.judgments) {
    const run = runs.find((r) => r.name === target.run);
    console.log(
      `${target.run}: calls ${target.callsVsWarmEni} of WARM_ENI's, ${target.callsVsWarmIp} of WARM_IP's ` +
        `with ${target.idleIpsVsWarmEni}× WARM_ENI's idle IPs ` +
        `(≤ 0.25 of both ${target.callsTargetMet ? 'met' : 'NOT met'}); waiting pods ${run?.waitingPods} ` +
        `vs ${warmEni.waitingPods} (WARM_ENI) and ${warmIp.waitingPods} (WARM_IP): ` +
        `${target.waitingTargetMet ? 'no more' : 'MORE'}; rate budget ` +
        `${target.budgetRespected ? 'respected' : 'EXCEEDED'}`,
    );
  }
  for (const run of runs) {
    const causes = run.waitCauses;
    if (causes) {
      console.log(
        `${run.name} waits by cause (pool as the pod found it): cold pool ` +
          `${causes.byCause.coldPool}, node full ${causes.byCause.nodeFull}, only cooling IPs ` +
          `${causes.byCause.cooling}, no idle IP ${causes.byCause.drained}; ready under a 30 s ` +
          `cooldown ${causes.servableWith30sCooldown}; served after an on-demand refill ` +
          `${causes.servedAfterRefill}, retried ${causes.retried}; within 2 min of the node joining ` +
          `${causes.withinTwoMinutesOfJoin}; in a matchmaking wave ${causes.duringBurstWave}; ` +
          `arrivals on the node in the prior 60 s median ${causes.arrivalsInPrior60s.median}, max ` +
          `${causes.arrivalsInPrior60s.max}; idle IPs then median ${causes.idleWhenWaited.median}; ` +
          `by type ${Object.entries(causes.byInstanceType)
            .map(([type, n]) => `${type} ${n}`)
            .join(', ')}`,
      );
    }
  }
  const byType = runs.filter((r) => r.idleByInstanceType);
  console.log(
    `idle IPs per node by type (${FLEET.map((f) => f.type).join(' / ')}): ` +
      byType
        .map(
          (r) => `${r.name} ${FLEET.map((f) => r.idleByInstanceType?.[f.type] ?? '-').join(' / ')}`,
        )
        .join('; '),
  );
  console.log(
    `${defaults.name} calls by action: ${Object.entries(defaults.callsByAction)
      .filter(([action]) => MUTATING_ACTIONS.has(action as Ec2Action))
      .map(([action, n]) => `${action} ${n}`)
      .join(', ')}`,
  );
  const v = result.verdict;
  console.log(
    `TARGET (default against default: ${v.run} vs ${v.against.join(' and ')}): calls ` +
      `${v.callsVsWarmEni} and ${v.callsVsWarmIp} of theirs (≤ 0.25: ${v.callsTargetMet ? 'yes' : 'NO'}); ` +
      `waiting pods ${defaults.waitingPods} vs ${warmEni.waitingPods} and ${warmIp.waitingPods} ` +
      `(no more: ${v.waitingTargetMet ? 'yes' : 'NO'}); idle IPs ${v.idleIpsVsWarmEni}× WARM_ENI's; ` +
      `rate budget ${v.budgetRespected ? 'respected' : 'EXCEEDED'} => target ${v.met ? 'MET' : 'NOT MET'}`,
  );
  console.log(`runtime ${result.runtimeMs} ms`);
  await writeResults('eni', { ...result });
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runEniBench();
}

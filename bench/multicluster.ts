/**
 * The multi-cluster benchmark: the ENI benchmark's day (`eni/workload.ts`: 300 nodes of mixed
 * types, a diurnal load, matchmaking bursts) split round-robin over three clusters in one VPC and
 * one account. Each day (clean subnets, and subnets other tenants fragmented), on the same events,
 * with berth's real pool code (`eni/berth.ts`):
 * - **together**: one berth for the three (one table): one rate budget with its fair share
 *   (shared/ec2/fair-share.ts) and subnet marks every cluster sees;
 * - **separately**: a berth each, at the same time in the same account and VPC, as every peer
 *   runs: a budget and marks of its own;
 * - **alone**: each cluster alone in the account.
 * Targets: the account's calls stay within one budget (replayed through the budget's buckets:
 * no call it would have refused, the peak per second printed); no cluster's pods wait more
 * together than alone; together the three make at most the mutating calls they make separately.
 * Every request, event and pass of every cluster is an invocation of its own on simulated
 * concurrent time, so one that waits for budget tokens holds back no other.
 * Then the budget under contention (`multicluster/storm.ts`): games-a adds 150 nodes within 30 s
 * while the others add ten each, and neither of those may be starved by it.
 * Writes `bench/results/multicluster.json`. Run with `npm run bench -- multicluster`.
 */
import { pathToFileURL } from 'node:url';
import { InProcessSharedBudget } from '../shared/ec2/fair-share.js';
import type { RateBudget } from '../shared/ec2/rate-budget.js';
import { FakeEc2 } from '../sim/fakes/ec2.js';
import { InMemoryEniStore } from '../sim/fakes/eni-store.js';
import { seededRandom } from '../sim/random.js';
import { berthOnDay, type DayAccount, runDay, soloAccount } from './eni/berth.js';
import { DAY_KINDS, type DayKind, DaySubnets } from './eni/day.js';
import { CallLedger, type EniRunResult, peak } from './eni/ledger.js';
import {
  BERTH_PASS_S,
  generateWorkload,
  type NodeSpec,
  type PodEvent,
  SEED,
  START,
} from './eni/workload.js';
import { runStorm, STORM, type StormOutcome } from './multicluster/storm.js';
import { writeResults } from './support/results.js';
import { VirtualClock } from './support/virtual-time.js';

export const CLUSTERS = ['games-a', 'games-b', 'games-c'] as const;

/** One cluster's share of the day: every third node, and the pods of those nodes. */
export interface ClusterDay {
  readonly cluster: string;
  readonly nodes: NodeSpec[];
  readonly events: PodEvent[];
}

/** The day's nodes dealt round-robin to the clusters, each pod event following its node. */
export function splitDay(nodes: readonly NodeSpec[], events: readonly PodEvent[]): ClusterDay[] {
  return CLUSTERS.map((cluster, c) => {
    const mine = nodes.flatMap((spec, i) => (i % CLUSTERS.length === c ? [{ spec, i }] : []));
    const index = new Map(mine.map(({ i }, j) => [i, j]));
    return {
      cluster,
      nodes: mine.map(({ spec }) => spec),
      events: events.flatMap((event) => {
        const j = index.get(event.node);
        return j === undefined ? [] : [{ ...event, node: j }];
      }),
    };
  });
}

/**
 * The account and VPC the three clusters run in, metered by `ledger`: run by one berth (one
 * table: one fair budget, shared subnet marks), or by three (a deployment each, as every peer
 * runs: a budget and marks of its own, the same EC2 and subnets).
 */
function accountOfThree(day: DayKind, ledger: CallLedger, berths: 'one' | 'three'): DayAccount {
  const clock = new VirtualClock(START);
  const now = clock.now;
  const random = seededRandom(SEED + 1);
  const fake = new FakeEc2({ now, random, recordCalls: false });
  const shared = { budget: new InProcessSharedBudget(now), marks: new InMemoryEniStore() };
  const own = new Map<string, { budget: RateBudget; marks: InMemoryEniStore }>();
  /** A cluster's own budget and marks, made at its first ask. */
  const ownOf = (cluster: string) => {
    let mine = own.get(cluster);
    if (!mine) {
      mine = { budget: new InProcessSharedBudget(now).for(cluster), marks: new InMemoryEniStore() };
      own.set(cluster, mine);
    }
    return mine;
  };
  return {
    clock,
    fake,
    subnets: new DaySubnets(fake, day),
    random,
    budgetFor: (cluster) => (berths === 'one' ? shared.budget.for(cluster) : ownOf(cluster).budget),
    subnetMarksFor: (cluster) => (berths === 'one' ? shared.marks : ownOf(cluster).marks),
    onCall: (action, at, throttled) => ledger.record(action, at, throttled),
  };
}

/** What the targets read of one cluster's run. */
type ClusterOutcome = Pick<EniRunResult, 'mutatingCalls' | 'waitingPods' | 'waitSeconds'>;

const outcome = (result: EniRunResult): ClusterOutcome => ({
  mutatingCalls: result.mutatingCalls,
  waitingPods: result.waitingPods,
  waitSeconds: result.waitSeconds,
});

/** The three clusters in one account, as the account meters them. */
export interface AccountRun {
  readonly mutatingCalls: number;
  readonly peakMutatingCallsPerSecond: number;
  readonly peakCallsPerSecond: number;
  /** Calls the account budget's buckets would have refused (replayed). */
  readonly budgetViolations: number;
  readonly throttledCalls: number;
  readonly clusters: Record<string, ClusterOutcome>;
}

/** What one day showed. */
export interface MultiClusterDay {
  readonly day: DayKind;
  /** One berth for the three (one table: a fair budget, shared marks). */
  readonly together: AccountRun;
  /** A berth each, at the same time in the same account and VPC, as every peer runs. */
  readonly separately: AccountRun;
  /** Each cluster alone in the account. */
  readonly alone: Record<string, ClusterOutcome>;
}

/** The three clusters through the day in one account, by one berth or by three. */
async function runThree(
  day: DayKind,
  split: readonly ClusterDay[],
  berths: 'one' | 'three',
): Promise<AccountRun> {
  const ledger = new CallLedger();
  const account = accountOfThree(day, ledger, berths);
  const clusters = split.map((share) =>
    berthOnDay(`berth ${share.cluster}`, {}, account, share.cluster, share.nodes, share.events),
  );
  await runDay(account, clusters);
  return {
    mutatingCalls: ledger.mutating(),
    peakMutatingCallsPerSecond: peak(ledger.mutatingPerSecond),
    peakCallsPerSecond: peak(ledger.perSecond),
    budgetViolations: ledger.budgetViolations(),
    throttledCalls: ledger.throttled,
    clusters: Object.fromEntries(
      clusters.map((cluster, i) => [split[i]?.cluster, outcome(cluster.result())]),
    ),
  };
}

async function runMultiClusterDay(
  day: DayKind,
  split: readonly ClusterDay[],
): Promise<MultiClusterDay> {
  const together = await runThree(day, split, 'one');
  const separately = await runThree(day, split, 'three');
  const alone: MultiClusterDay['alone'] = {};
  for (const share of split) {
    const own = soloAccount(day);
    const cluster = berthOnDay(
      `berth ${share.cluster} alone`,
      {},
      own,
      share.cluster,
      share.nodes,
      share.events,
    );
    await runDay(own, [cluster]);
    alone[share.cluster] = outcome(cluster.result());
  }
  return { day, together, separately, alone };
}

/** The targets of one day, each verdict from the measurement. */
function judge(result: MultiClusterDay) {
  const { together, separately } = result;
  return [
    {
      target: `${result.day}: the account's calls within one budget`,
      pass: together.budgetViolations === 0,
      line: `${together.budgetViolations} calls the budget would have refused; peak ${together.peakMutatingCallsPerSecond} mutating calls/s, ${together.peakCallsPerSecond} calls/s; ${together.throttledCalls} throttled by EC2 (a berth each: ${separately.budgetViolations} over the account budget, peak ${separately.peakMutatingCallsPerSecond} mutating calls/s, ${separately.throttledCalls} throttled)`,
    },
    {
      target: `${result.day}: the three together make at most the calls of the three run separately`,
      pass: together.mutatingCalls <= separately.mutatingCalls,
      line: `${together.mutatingCalls} mutating calls by one berth against ${separately.mutatingCalls} by a berth each`,
    },
    ...CLUSTERS.map((cluster) => {
      const mine = together.clusters[cluster];
      const alone = result.alone[cluster];
      return {
        target: `${result.day}: ${cluster}'s pods wait no more than alone`,
        pass: (mine?.waitingPods ?? 0) <= (alone?.waitingPods ?? 0),
        line: `${mine?.waitingPods} pods waited together (${mine?.waitSeconds} s) against ${alone?.waitingPods} alone in the account (${alone?.waitSeconds} s)`,
      };
    }),
  ];
}

/** The storm three ways: the fair budget, one first-come bucket, each cluster alone. */
interface StormResult {
  readonly fair: Record<string, StormOutcome>;
  readonly firstCome: Record<string, StormOutcome>;
  readonly alone: Record<string, StormOutcome>;
}

async function runStormThreeWays(): Promise<StormResult> {
  const fair = await runStorm(STORM, 'fair');
  const firstCome = await runStorm(STORM, 'first-come');
  const alone: Record<string, StormOutcome> = {};
  for (const wave of STORM) Object.assign(alone, await runStorm([wave], 'fair'));
  return { fair, firstCome, alone };
}

/**
 * The storm's targets: no cluster starved by another's storm. A quiet cluster's nodes join an
 * emptied bucket, so they cannot be as quick as alone; starved would be waiting for a pass
 * (60 s) behind the storm, as a first-come bucket makes them.
 */
function judgeStorm(result: StormResult) {
  const [storming] = STORM;
  return STORM.slice(1).map(({ cluster }) => {
    const fair = result.fair[cluster];
    const firstCome = result.firstCome[cluster];
    const alone = result.alone[cluster];
    return {
      target: `storm: ${cluster} is not starved by ${storming?.nodes} nodes of ${storming?.cluster} joining within ${storming?.overS} s`,
      pass: fair?.notReady === 0 && (fair?.readyMaxS ?? Number.POSITIVE_INFINITY) < BERTH_PASS_S,
      line: `every node's pool served within ${fair?.readyMaxS} s of joining (median ${fair?.readyP50S} s), under one pass (${BERTH_PASS_S} s), ${fair?.servedByEvent} of ${fair?.nodes} by their own event; a first-come bucket: ${firstCome?.readyMaxS} s (median ${firstCome?.readyP50S} s), ${firstCome?.servedByEvent} by their own event; alone in the account: ${alone?.readyMaxS} s`,
    };
  });
}

export async function runMultiClusterBench(): Promise<void> {
  const started = performance.now();
  const { nodes, events } = generateWorkload();
  const split = splitDay(nodes, events);
  const days: MultiClusterDay[] = [];
  for (const day of DAY_KINDS) {
    process.stdout.write(
      `  ${day} day: three clusters by one berth, by a berth each, then each alone…\n`,
    );
    days.push(await runMultiClusterDay(day, split));
  }
  for (const result of days) {
    console.log(`${result.day} day, ${nodes.length} nodes in three clusters of one account:`);
    console.table(
      Object.fromEntries(
        CLUSTERS.map((cluster) => [
          cluster,
          {
            'mutating calls, one berth': result.together.clusters[cluster]?.mutatingCalls,
            'mutating calls, a berth each': result.separately.clusters[cluster]?.mutatingCalls,
            'waiting pods, one berth': result.together.clusters[cluster]?.waitingPods,
            'waiting pods, alone': result.alone[cluster]?.waitingPods,
          },
        ]),
      ),
    );
  }
  process.stdout.write(
    `  storm: ${STORM.map((w) => `${w.cluster} ${w.nodes} nodes within ${w.overS} s`).join(', ')}…\n`,
  );
  const storm = await runStormThreeWays();
  console.log('storm: seconds from a node joining until its pool has an address (max, median):');
  console.table(
    Object.fromEntries(
      STORM.map(({ cluster, nodes }) => {
        const cell = (outcome: StormOutcome | undefined) =>
          `${outcome?.readyMaxS} s, ${outcome?.readyP50S} s`;
        return [
          cluster,
          {
            nodes,
            'fair budget': cell(storm.fair[cluster]),
            'first-come bucket': cell(storm.firstCome[cluster]),
            alone: cell(storm.alone[cluster]),
            'served by own event, fair': storm.fair[cluster]?.servedByEvent,
            'refused takes, fair': storm.fair[cluster]?.refusedTakes,
          },
        ];
      }),
    ),
  );
  const targets = [...days.flatMap(judge), ...judgeStorm(storm)];
  for (const t of targets) console.log(`${t.pass ? 'pass' : 'FAIL'}  ${t.target}: ${t.line}`);
  const met = targets.filter((t) => t.pass).length;
  console.log(
    `${met}/${targets.length} targets met${met === targets.length ? '' : ': TARGETS NOT MET'}`,
  );
  await writeResults('multicluster', {
    clusters: CLUSTERS,
    nodes: nodes.length,
    targets,
    days,
    storm: { waves: STORM, ...storm },
    runtimeMs: Math.round(performance.now() - started),
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runMultiClusterBench();

/**
 * ENI pool benchmark: one simulated day of game-server churn on the EC2 fake (a few hundred
 * nodes of mixed instance types, a diurnal load, matchmaking bursts; `eni/workload.ts`), on four
 * days (`eni/day.ts`): clean subnets, and subnets other tenants hold 60%, 80% and 90% of, placed
 * at random by a recorded seed. Each day, on exactly the same events:
 * - berth (`eni/berth.ts`): the real pool code behind the account rate budget, at its config
 *   defaults and in its other `eni.mode`, each run starting with what its pass learned of the
 *   node groups on the day before (the same events, run once first: `learnedYesterday`);
 * - the AWS VPC CNI's ipamd (`eni/vpc-cni.ts`): WARM_ENI_TARGET=1 (its default), prefix
 *   delegation with WARM_PREFIX_TARGET=1, and prefix delegation as its guide advises
 *   (`vpcCniSweep`): WARM_IP_TARGET 2, 5, 8, 12 and 16, each with each node group's
 *   MINIMUM_IP_TARGET at its instance type's peak pods + 2 and twice that. The sweep runs on the
 *   clean day; on a fragmented day, where no prefix-mode setting finds a free /28, only its
 *   first run (the guide's own WARM_IP_TARGET=2, MINIMUM_IP_TARGET=peak+2);
 * - Cilium's ENI operator (`eni/cilium.ts`) at its defaults and with its EC2 limiter raised.
 * On each fragmented day berth (defaults) and the guide's VPC CNI run also run on subnets with a
 * prefix-type CIDR reservation, as the EKS guide recommends for busy subnets.
 *
 * Reports for every run EC2 mutating calls, peak calls per second, idle addresses held (average,
 * peak, per instance type), pods that waited for an address (how many, how long, and why; the
 * cold start's first hour and the steady state apart), pods per node, throttling and rate-budget
 * compliance (`eni/ledger.ts`), and each day's frontier of calls against idle addresses
 * (`eni/frontier.ts`); judges the targets (`eni/targets.ts`); writes bench/results/eni.json. Run
 * with `npm run bench -- eni`.
 */
import { pathToFileURL } from 'node:url';
import type { Ec2Action } from '../shared/ec2/network.js';
import type { GroupUse } from '../shared/eni/model.js';
import { DEFAULT_POOL_MODE, type PoolMode } from '../shared/eni/policy.js';
import { MUTATING_ACTIONS } from '../sim/fakes/ec2.js';
import { learnedYesterday, runBerth } from './eni/berth.js';
import { CILIUM_DEFAULTS, CILIUM_RAISED_API, runCilium } from './eni/cilium.js';
import {
  type DayKind,
  DEFRAGMENT_AT_S,
  ENI_DAYS,
  FOREIGN_SEED,
  isFragmented,
  reservationCidr,
  SUBNETS,
  UTILIZATION,
} from './eni/day.js';
import { frontier } from './eni/frontier.js';
import { COLD_START_MS, type EniRunResult } from './eni/ledger.js';
import { judgeEni } from './eni/targets.js';
import { runVpcCni, VPC_CNI_RUNS, type VpcCniRun, vpcCniSweep } from './eni/vpc-cni.js';
import {
  DAY_S,
  FLEET,
  generateWorkload,
  type NodeSpec,
  type PodEvent,
  peakPodsByType,
} from './eni/workload.js';
import { type TargetVerdict, writeResults } from './support/results.js';

/** The other mode than berth's default, run beside it so the README can say which to pick. */
const OTHER_MODE: PoolMode = DEFAULT_POOL_MODE === 'prefix' ? 'ip' : 'prefix';

type Run = (day: DayKind, nodes: NodeSpec[], events: PodEvent[]) => Promise<EniRunResult>;

interface Peer {
  readonly name: string;
  readonly run: Run;
}

const vpcCni = ({ name, settings }: VpcCniRun): Peer => ({
  name,
  run: (day, nodes, events) => runVpcCni(name, settings, day, nodes, events),
});

/** The VPC CNI's defaults, before the sweep. */
const VPC_CNI_DEFAULTS: readonly Peer[] = [
  vpcCni({ name: 'vpc-cni WARM_ENI_TARGET=1', settings: VPC_CNI_RUNS.warmEni }),
  vpcCni({ name: 'vpc-cni prefix WARM_PREFIX_TARGET=1', settings: VPC_CNI_RUNS.prefixWarmPrefix }),
];

/** Cilium's operator, after the VPC CNI. */
const CILIUM: readonly Peer[] = [
  {
    name: 'cilium operator (defaults)',
    run: (day, nodes, events) =>
      runCilium('cilium operator (defaults)', CILIUM_DEFAULTS, day, nodes, events),
  },
  {
    name: 'cilium operator --limit-ipam-api-qps=20 --limit-ipam-api-burst=100',
    run: (day, nodes, events) =>
      runCilium(
        'cilium operator --limit-ipam-api-qps=20 --limit-ipam-api-burst=100',
        CILIUM_RAISED_API,
        day,
        nodes,
        events,
      ),
  },
];

/** berth and the peers on one set of subnets. */
export interface EniRuns {
  readonly berth: EniRunResult;
  readonly peers: readonly EniRunResult[];
}

/** One day's runs: berth at its defaults and in its other mode, the peers, reserved subnets. */
export interface EniDayResult extends EniRuns {
  readonly day: DayKind;
  /** The names of the peers that are the VPC CNI sweep's runs. */
  readonly swept: readonly string[];
  /**
   * The runs on the day's own subnets no other run beats on both mutating calls and mean idle
   * addresses, fewest calls first.
   */
  readonly frontier: readonly string[];
  /** Share of each subnet other tenants hold at 00:00. */
  readonly utilization: number;
  readonly fragmented: boolean;
  readonly berthOtherMode: EniRunResult;
  /** Each subnet's prefix reservation and the runs on them (fragmented days). */
  readonly reserved?: EniRuns & { readonly reservations: Record<string, string> };
}

/** What `runEniBench` answers and writes. */
export interface EniBenchResult {
  readonly workload: {
    readonly nodes: number;
    readonly fleet: readonly { type: string; nodes: number; slots: number }[];
    readonly podsStarted: number;
    /** The most pods one node of each type runs at once: what MINIMUM_IP_TARGET is set from. */
    readonly peakPodsPerNode: Record<string, number>;
    readonly simulatedHours: number;
    readonly fragmentedDays: string;
    readonly foreignSeed: number;
    readonly coldStartSeconds: number;
    readonly store: string;
  };
  readonly days: readonly EniDayResult[];
  readonly targets: readonly TargetVerdict[];
  readonly runtimeMs: number;
}

// ---- report -----------------------------------------------------------------------------------

function table(runs: readonly EniRunResult[]): string {
  const header = [
    'run',
    'mutating calls',
    'peak calls/s',
    'peak mutating/s',
    'throttled',
    'idle avg',
    'idle peak',
    'waiting pods',
    'wait s',
    'longest s',
    'after 1st h: calls',
    'waiting',
    'longest s',
    'over budget',
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
    String(r.longestWaitSeconds),
    String(r.steadyState.mutatingCalls),
    String(r.steadyState.waitingPods),
    String(r.steadyState.longestWaitSeconds),
    String(r.budgetViolations),
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const DEFAULTS_NAME = `berth eni.mode=${DEFAULT_POOL_MODE} (config defaults)`;

/**
 * Runs one day: berth in both modes, then every peer, each on the same events (the VPC CNI sweep
 * on the clean day, its first run on a fragmented one); on a fragmented day berth and the
 * sweep's first run again on reserved subnets.
 */
async function runDay(
  day: DayKind,
  nodes: NodeSpec[],
  events: PodEvent[],
  sweep: readonly VpcCniRun[],
  groupUse: GroupUse,
): Promise<EniDayResult> {
  process.stdout.write(`  ${day} day: berth\n`);
  const berth = await runBerth(DEFAULTS_NAME, {}, day, nodes, events, {
    diagnose: true,
    groupUse,
  });
  const berthOtherMode = await runBerth(
    `berth eni.mode=${OTHER_MODE}`,
    { mode: OTHER_MODE },
    day,
    nodes,
    events,
    { groupUse },
  );
  const fragmented = isFragmented(day);
  const [guide] = sweep;
  if (!guide) throw new Error('an empty VPC CNI sweep');
  const swept = fragmented ? [guide] : sweep;
  const peers: EniRunResult[] = [];
  for (const peer of [...VPC_CNI_DEFAULTS, ...swept.map(vpcCni), ...CILIUM]) {
    process.stdout.write(`  ${day} day: ${peer.name}\n`);
    peers.push(await peer.run(day, nodes, events));
  }
  const result: EniDayResult = {
    day,
    utilization: UTILIZATION[day],
    fragmented,
    berth,
    berthOtherMode,
    peers,
    swept: swept.map((run) => run.name),
    frontier: frontier([berth, berthOtherMode, ...peers]).front.map((run) => run.name),
  };
  if (!fragmented) return result;
  process.stdout.write(`  ${day} day, prefix reservation: berth, ${guide.name}\n`);
  const reservedBerth = await runBerth(
    `${DEFAULTS_NAME} + prefix reservation`,
    {},
    day,
    nodes,
    events,
    { reservation: true, groupUse },
  );
  const reservedPeer = await runVpcCni(
    `${guide.name} + prefix reservation`,
    guide.settings,
    day,
    nodes,
    events,
    { reservation: true },
  );
  const reservations = Object.fromEntries(
    SUBNETS.map(({ subnetId, cidr }) => [subnetId, reservationCidr(cidr, UTILIZATION[day])]),
  );
  return { ...result, reserved: { berth: reservedBerth, peers: [reservedPeer], reservations } };
}

function podsPerNodeLine(run: EniRunResult): string {
  return FLEET.map((f) => {
    const pods = run.podsPerNode[f.type];
    return `${f.type} ${pods?.peak ?? 0}/${pods?.capacity ?? 0}`;
  }).join(', ');
}

function printDay(result: EniDayResult): void {
  const runs = [
    result.berth,
    result.berthOtherMode,
    ...result.peers,
    ...(result.reserved ? [result.reserved.berth, ...result.reserved.peers] : []),
  ];
  const reserved = result.reserved
    ? `; reserved for prefixes: ${Object.entries(result.reserved.reservations)
        .map(([subnet, cidr]) => `${subnet} ${cidr}`)
        .join(', ')}`
    : '';
  console.log(
    `\n${result.day} day (other tenants hold ${result.utilization * 100}% of each subnet${reserved})`,
  );
  console.log(table(runs));
  const { front, dominated } = frontier([result.berth, result.berthOtherMode, ...result.peers]);
  const point = (run: EniRunResult) =>
    `${run.name} (${run.mutatingCalls} calls, ${run.idleIps.average} idle, ${run.waitingPods} waiting, longest ${run.longestWaitSeconds} s)`;
  console.log("frontier of mutating calls against mean idle addresses on the day's own subnets:");
  for (const run of front) console.log(`  on it: ${point(run)}`);
  for (const { run, by } of dominated) console.log(`  dominated: ${run.name}, by ${by.name}`);
  console.log('pods per node reached / allowed by the policy, by instance type:');
  for (const run of runs) console.log(`  ${run.name}: ${podsPerNodeLine(run)}`);
  console.log(
    `idle addresses per node by type (${FLEET.map((f) => f.type).join(' / ')}): ` +
      runs
        .filter((r) => r.idleByInstanceType)
        .map(
          (r) => `${r.name} ${FLEET.map((f) => r.idleByInstanceType?.[f.type] ?? '-').join(' / ')}`,
        )
        .join('; '),
  );
  const causes = result.berth.waitCauses;
  if (causes && result.berth.waitingPods > 0) {
    console.log(
      `${result.berth.name} waits by cause: cold pool ${causes.byCause.coldPool}, node full ` +
        `${causes.byCause.nodeFull}, only cooling ${causes.byCause.cooling}, drained ` +
        `${causes.byCause.drained}; served after an on-demand refill ${causes.servedAfterRefill}, ` +
        `retried ${causes.retried}`,
    );
  }
  console.log('settings:');
  for (const run of runs) {
    console.log(
      `  ${run.name}: ${Object.entries(run.settings)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ')}`,
    );
  }
  for (const run of runs) {
    console.log(
      `${run.name} calls by action: ${Object.entries(run.callsByAction)
        .filter(([action]) => MUTATING_ACTIONS.has(action as Ec2Action))
        .map(([action, n]) => `${action} ${n}`)
        .join(', ')}`,
    );
  }
}

/**
 * Runs every day (berth twice and the peers each, the reserved runs on fragmented days), prints
 * the tables, judges the targets and writes bench/results/eni.json.
 */
export async function runEniBench(): Promise<EniBenchResult> {
  const started = performance.now();
  const { nodes, events } = generateWorkload();
  const peakPodsPerNode = peakPodsByType(nodes, events);
  const sweep = vpcCniSweep(peakPodsPerNode);
  // berth runs for weeks: every berth run starts with what its pass learned of the node groups
  // on the day before, the same events (the VPC CNI's MINIMUM_IP_TARGET is set from them too).
  process.stdout.write('  the day before: berth learns its node groups\n');
  const groupUse = await learnedYesterday(nodes, events);
  const days: EniDayResult[] = [];
  for (const day of ENI_DAYS) days.push(await runDay(day, nodes, events, sweep, groupUse));
  const targets = judgeEni(days);
  const result: EniBenchResult = {
    workload: {
      nodes: nodes.length,
      fleet: FLEET.map((f) => ({
        type: f.type,
        nodes: nodes.filter((n) => n.type === f.type).length,
        slots: f.slots,
      })),
      podsStarted: events.filter((e) => e.kind === 'arrive').length,
      peakPodsPerNode,
      simulatedHours: DAY_S / 3600,
      fragmentedDays: `other tenants hold ${ENI_DAYS.filter(isFragmented)
        .map((day) => `${UTILIZATION[day] * 100}%`)
        .join(
          ', ',
        )} of each subnet's addresses, placed at random (seed ${FOREIGN_SEED}), until ${DEFRAGMENT_AT_S / 3600}:00, then half of them leave`,
      foreignSeed: FOREIGN_SEED,
      coldStartSeconds: COLD_START_MS / 1000,
      store:
        'berth ran on InMemoryEniStore (the EniStore contract DynamoEniStore passes), for speed',
    },
    days,
    targets,
    runtimeMs: Math.round(performance.now() - started),
  };
  console.log(
    `ENI pools: ${result.workload.nodes} nodes, ${result.workload.podsStarted} pods over ${result.workload.simulatedHours} h (${result.workload.store}); ${result.workload.fragmentedDays}`,
  );
  console.log(
    `most pods on one node at once, by type (each node group's MINIMUM_IP_TARGET is that + 2, or twice that): ${Object.entries(
      peakPodsPerNode,
    )
      .map(([type, pods]) => `${type} ${pods}`)
      .join(', ')}`,
  );
  for (const day of days) printDay(day);
  console.log('');
  for (const target of targets) {
    console.log(`  ${target.pass ? 'PASS' : 'FAIL'}  ${target.target}: ${target.line}`);
  }
  console.log(`runtime ${result.runtimeMs} ms`);
  await writeResults('eni', { ...result });
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runEniBench();
}

/**
 * ENI pool benchmark: one simulated day of game-server churn on the EC2 fake (a few hundred
 * nodes of mixed instance types, a diurnal load, matchmaking bursts; `eni/workload.ts`), on two
 * days (`eni/day.ts`): clean subnets, and subnets other tenants have fragmented. Each day, on
 * exactly the same events:
 * - berth (`eni/berth.ts`): the real pool code behind the account rate budget, at its config
 *   defaults and in its other `eni.mode`;
 * - the AWS VPC CNI's ipamd (`eni/vpc-cni.ts`): WARM_ENI_TARGET=1 (its default), prefix
 *   delegation with WARM_PREFIX_TARGET=1, and prefix delegation with WARM_IP_TARGET=5 /
 *   MINIMUM_IP_TARGET=10;
 * - Cilium's ENI operator at its defaults (`eni/cilium.ts`).
 *
 * Reports EC2 mutating calls, peak calls per second, idle addresses held (average, peak, per
 * instance type), pods that waited for an address (how long, and why), pods per node, throttling
 * and rate-budget compliance (`eni/ledger.ts`); judges the targets (`eni/targets.ts`); writes
 * bench/results/eni.json. Run with `npm run bench -- eni`.
 */
import { pathToFileURL } from 'node:url';
import type { Ec2Action } from '../shared/ec2/network.js';
import { DEFAULT_POOL_MODE, type PoolMode } from '../shared/eni/policy.js';
import { MUTATING_ACTIONS } from '../sim/ec2-fake.js';
import { runBerth } from './eni/berth.js';
import { CILIUM_DEFAULTS, runCilium } from './eni/cilium.js';
import { DAY_KINDS, type DayKind, DEFRAGMENT_AT_S, FRAGMENTED_SHARE } from './eni/day.js';
import type { EniRunResult } from './eni/ledger.js';
import { judgeEni, type TargetVerdict } from './eni/targets.js';
import { runVpcCni, VPC_CNI_RUNS } from './eni/vpc-cni.js';
import { DAY_S, FLEET, generateWorkload, type NodeSpec, type PodEvent } from './eni/workload.js';
import { writeResults } from './support/results.js';

/** The other mode than berth's default, run beside it so the README can say which to pick. */
const OTHER_MODE: PoolMode = DEFAULT_POOL_MODE === 'prefix' ? 'ip' : 'prefix';

type Run = (day: DayKind, nodes: NodeSpec[], events: PodEvent[]) => Promise<EniRunResult>;

/** The peers, in the order the issue names them. */
const PEERS: readonly { readonly name: string; readonly run: Run }[] = [
  {
    name: 'vpc-cni WARM_ENI_TARGET=1',
    run: (day, nodes, events) =>
      runVpcCni('vpc-cni WARM_ENI_TARGET=1', VPC_CNI_RUNS.warmEni, day, nodes, events),
  },
  {
    name: 'vpc-cni prefix WARM_PREFIX_TARGET=1',
    run: (day, nodes, events) =>
      runVpcCni(
        'vpc-cni prefix WARM_PREFIX_TARGET=1',
        VPC_CNI_RUNS.prefixWarmPrefix,
        day,
        nodes,
        events,
      ),
  },
  {
    name: 'vpc-cni prefix WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10',
    run: (day, nodes, events) =>
      runVpcCni(
        'vpc-cni prefix WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10',
        VPC_CNI_RUNS.prefixWarmIp,
        day,
        nodes,
        events,
      ),
  },
  {
    name: 'cilium operator (defaults)',
    run: (day, nodes, events) =>
      runCilium('cilium operator (defaults)', CILIUM_DEFAULTS, day, nodes, events),
  },
];

/** One day's runs: berth at its defaults, berth in its other mode, and the peers. */
export interface EniDayResult {
  readonly day: DayKind;
  readonly berth: EniRunResult;
  readonly berthOtherMode: EniRunResult;
  readonly peers: readonly EniRunResult[];
}

/** What `runEniBench` answers and writes. */
export interface EniBenchResult {
  readonly workload: {
    readonly nodes: number;
    readonly fleet: readonly { type: string; nodes: number; slots: number }[];
    readonly podsStarted: number;
    readonly simulatedHours: number;
    readonly fragmentedDay: string;
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
    String(r.budgetViolations),
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Runs one day: berth in both modes, then every peer, each on the same events. */
async function runDay(day: DayKind, nodes: NodeSpec[], events: PodEvent[]): Promise<EniDayResult> {
  const berth = await runBerth(
    `berth eni.mode=${DEFAULT_POOL_MODE} (config defaults)`,
    {},
    day,
    nodes,
    events,
    { diagnose: true },
  );
  const berthOtherMode = await runBerth(
    `berth eni.mode=${OTHER_MODE}`,
    { mode: OTHER_MODE },
    day,
    nodes,
    events,
  );
  const peers: EniRunResult[] = [];
  for (const peer of PEERS) {
    process.stdout.write(`  ${day} day: ${peer.name}\n`);
    peers.push(await peer.run(day, nodes, events));
  }
  return { day, berth, berthOtherMode, peers };
}

function podsPerNodeLine(run: EniRunResult): string {
  return FLEET.map((f) => {
    const pods = run.podsPerNode[f.type];
    return `${f.type} ${pods?.peak ?? 0}/${pods?.capacity ?? 0}`;
  }).join(', ');
}

function printDay(result: EniDayResult): void {
  const runs = [result.berth, result.berthOtherMode, ...result.peers];
  console.log(`\n${result.day} day`);
  console.log(table(runs));
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
  console.log(
    `${result.berth.name} calls by action: ${Object.entries(result.berth.callsByAction)
      .filter(([action]) => MUTATING_ACTIONS.has(action as Ec2Action))
      .map(([action, n]) => `${action} ${n}`)
      .join(', ')}`,
  );
}

/**
 * Runs both days (berth twice and four peers each), prints the tables, judges the targets and
 * writes bench/results/eni.json.
 */
export async function runEniBench(): Promise<EniBenchResult> {
  const started = performance.now();
  const { nodes, events } = generateWorkload();
  const days: EniDayResult[] = [];
  for (const day of DAY_KINDS) days.push(await runDay(day, nodes, events));
  const [clean, fragmented] = days;
  if (!clean || !fragmented) throw new Error('both days must run');
  const targets = judgeEni(clean, fragmented);
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
      fragmentedDay: `other tenants hold an address in ${FRAGMENTED_SHARE * 100}% of each subnet's /28s until ${DEFRAGMENT_AT_S / 3600}:00, then half of them leave`,
      store:
        'berth ran on InMemoryEniStore (the EniStore contract DynamoEniStore passes), for speed',
    },
    days,
    targets,
    runtimeMs: Math.round(performance.now() - started),
  };
  console.log(
    `ENI pools: ${result.workload.nodes} nodes, ${result.workload.podsStarted} pods over ${result.workload.simulatedHours} h (${result.workload.store})`,
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

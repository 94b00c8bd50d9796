/**
 * ENI pool benchmark: one simulated day of game-server churn on the EC2 fake (a few hundred
 * nodes of mixed instance types, a diurnal load, matchmaking bursts; `eni/workload.ts`), run four
 * times on the same pre-generated workload:
 * - berth (`eni/berth.ts`): the real pool code behind the account rate budget, twice: config
 *   defaults and burst-sized;
 * - the AWS VPC CNI's ipamd (`eni/vpc-cni.ts`) with WARM_ENI_TARGET=1 (its default), and with
 *   WARM_IP_TARGET / MINIMUM_IP_TARGET.
 *
 * Reports EC2 mutating calls, peak calls per second, idle IPs held (average, peak, per instance
 * type), pods that waited for an IP (and for how long, and why), throttling, and rate-budget
 * compliance (`eni/ledger.ts`); writes bench/results/eni.json. Run with `npm run bench -- eni`.
 */
import { pathToFileURL } from 'node:url';
import type { Ec2Action } from '../shared/ec2/network.js';
import { MUTATING_ACTIONS } from '../test/fakes/ec2-fake.js';
import { BURST_SIZED, runBerth } from './eni/berth.js';
import type { EniRunResult } from './eni/ledger.js';
import { runVpcCni, WARM_IP } from './eni/vpc-cni.js';
import { DAY_S, FLEET, generateWorkload } from './eni/workload.js';
import { writeResults } from './support/results.js';

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

/**
 * The fronts benchmark's targets, judged from the runs alone: berth's bursts against
 * fixed bounds and against OpenKruise Game's calls on the same events, and berth's chaos run
 * against the first rule and repair's promise. Pure, so a verdict is tested apart from a run.
 */
import { DEFAULT_ELBV2_BUDGET } from '../../shared/ec2/rate-budget.js';
import type { BucketSpec } from '../../shared/ec2/token-bucket.js';
import { NLB_REGISTRATION_DELAY_MS } from '../../sim/fakes/elbv2.js';
import type { TargetVerdict } from '../support/results.js';
import { percentile } from '../support/stats.js';
import { type RunResult, reachableStats } from './harness.js';

/** p99 from binding to reachable, seconds. */
export const ACCELERATOR_P99_S = 5;
export const NLB_P99_S = 15;
/** At most one mutating Global Accelerator call per this many game servers in a burst. */
export const GAME_SERVERS_PER_ACCELERATOR_CALL = 50;

/** Slots mode: p99 binding to serving, seconds, and how soon a new node's slots serve. */
export const SLOTS_P99_S = 2;
export const SEATS_SERVING_S = 300;
/** ELB calls a slot may cost per node lifetime. */
export const CALLS_PER_SEAT_LIFETIME = 3;

/** berth's and the peer's runs of each scenario. */
export interface JudgedRuns {
  readonly nlbBurst: { readonly berth: RunResult; readonly peer: RunResult };
  readonly acceleratorBurst: { readonly berth: RunResult; readonly peer: RunResult };
  readonly chaos: { readonly berth: RunResult };
  readonly steady: { readonly berth: RunResult };
  /** berth in slots mode: its burst and node churn, and its chaos run. */
  readonly slots: {
    readonly burst: RunResult;
    readonly churn: RunResult;
    readonly chaos: RunResult;
    readonly seats: number;
  };
}

/**
 * ELB calls per slot per node lifetime over a run: every mutating call, and the deregistration
 * each target still registered at the end is owed, over each node's slots.
 */
export function callsPerSeatLifetime(run: RunResult, seats: number) {
  const lifetimes = (run.nodes?.length ?? 0) * seats;
  const calls = run.elbv2MutatingCalls + run.registeredAtEnd;
  return {
    lifetimes,
    calls,
    perLifetime: Math.round((calls / Math.max(1, lifetimes)) * 100) / 100,
  };
}

/** The slots-mode targets, from its burst run and chaos run. */
function slotsVerdicts(slots: JudgedRuns['slots']): TargetVerdict[] {
  const { burst, churn, chaos, seats } = slots;
  // Every node that joined a running cluster, in the burst run and the churn run.
  const joined = [...(burst.nodes ?? []), ...(churn.nodes ?? [])].filter((n) => n.readyAt > 0);
  const cold = (burst.nodes ?? []).filter((node) => node.readyAt === 0);
  const slowest = (nodes: typeof joined) =>
    Math.max(...nodes.map((n) => (n.seatsServingMs ?? Number.POSITIVE_INFINITY) / 1000));
  const median = (nodes: typeof joined) =>
    percentile(
      nodes.map((n) => (n.seatsServingMs ?? Number.POSITIVE_INFINITY) / 1000),
      50,
    );
  const calls = callsPerSeatLifetime(churn, seats);
  const short = callsPerSeatLifetime(burst, seats);
  return [
    {
      ...latency(burst, 'nlb', SLOTS_P99_S),
      target: `slots mode: ${reachableStats(burst, 'nlb').gameServers} game servers at once on nodes Ready 5 minutes or more, p99 binding to serving at most ${SLOTS_P99_S} s`,
    },
    {
      target: 'slots mode: 0 ELB calls at bind',
      pass: burst.elbv2CallsWhileBinding === 0,
      line: `${burst.system}: ${burst.elbv2CallsWhileBinding} mutating ELBv2 calls between the first and the last binding`,
    },
    {
      target: `slots mode: every slot of a new node serving within ${SEATS_SERVING_S / 60} minutes of its Ready`,
      pass: joined.length > 0 && slowest(joined) <= SEATS_SERVING_S,
      line: `${burst.system}: ${joined.length} nodes joined a running cluster, every slot serving after median ${median(joined)} s, slowest ${slowest(joined)} s; the ${cold.length} nodes of a cold start at once: slowest ${slowest(cold)} s (their chains made within berth's half of the mutating budget)`,
    },
    {
      target: `slots mode: at most ${CALLS_PER_SEAT_LIFETIME} ELB calls per slot per node lifetime`,
      pass: calls.perLifetime <= CALLS_PER_SEAT_LIFETIME,
      line: `${churn.system}, ${churn.nodes?.length ?? 0} node lifetimes of churn: ${calls.calls} calls (${churn.elbv2MutatingCalls} made, ${churn.registeredAtEnd} deregistrations owed) over ${calls.lifetimes} slot lifetimes: ${calls.perLifetime} each; a chain's first lifetime costs 4 (CreateTargetGroup, CreateListener, RegisterTargets, DeregisterTargets), each later one 2; the ${burst.nodes?.length ?? 0}-node burst run, mostly first lifetimes and spares: ${short.perLifetime}`,
    },
    {
      target: 'chaos in slots mode: no public port held by two live game servers',
      pass: chaos.doublyHeld.length === 0,
      line:
        chaos.doublyHeld.length === 0
          ? `${chaos.system}: none, checked every 100 ms of ${chaos.simulatedSeconds} s`
          : `${chaos.system}: ${chaos.doublyHeld.length}, e.g. ${chaos.doublyHeld[0]}`,
    },
    {
      target: "chaos in slots mode: every orphan removed within repair's grace",
      pass: chaos.orphans.length === 0,
      line:
        chaos.orphans.length === 0
          ? `${chaos.system}: none left at the end`
          : `${chaos.system}: ${chaos.orphans.length} left, e.g. ${chaos.orphans[0]}`,
    },
  ];
}

const perGameServer = (calls: number, gameServers: number) =>
  Math.round((calls / Math.max(1, gameServers)) * 100) / 100;

function latency(run: RunResult, front: 'nlb' | 'accelerator', bound: number): TargetVerdict {
  const stats = reachableStats(run, front);
  const label = front === 'nlb' ? 'NLB' : 'Global Accelerator';
  return {
    target: `${stats.gameServers} game servers at once behind ${label}: p99 binding to reachable at most ${bound} s`,
    pass: stats.p99 <= bound,
    line: `${run.system}: p50 ${stats.p50} s, p99 ${stats.p99} s${stats.never > 0 ? `, ${stats.never} never reachable` : ''}`,
  };
}

/** Seconds a bucket takes to grant `calls` tokens, starting full. */
function drainSeconds(bucket: BucketSpec, calls: number): number {
  return Math.max(0, (calls - bucket.capacity) / bucket.refillPerSecond);
}

/**
 * The soonest the last of `gameServers` NLB binds can land within berth's ELBv2 budget: two
 * calls each (CreateTargetGroup, CreateListener) from elbv2-mutate and one (RegisterTargets)
 * from elbv2-targets.
 */
export function nlbBudgetFloorSeconds(gameServers: number): number {
  const mutate = drainSeconds(DEFAULT_ELBV2_BUDGET['elbv2-mutate'], 2 * gameServers);
  const targets = drainSeconds(DEFAULT_ELBV2_BUDGET['elbv2-targets'], gameServers);
  return Math.round(Math.max(mutate, targets) * 10) / 10;
}

/** The issue's targets, in its order. */
export function judgeFronts(runs: JudgedRuns): TargetVerdict[] {
  const acc = runs.acceleratorBurst.berth;
  const accServers = reachableStats(acc, 'accelerator').gameServers;
  const allowedCalls = accServers / GAME_SERVERS_PER_ACCELERATOR_CALL;
  const nlb = runs.nlbBurst;
  const nlbServers = reachableStats(nlb.berth, 'nlb').gameServers;
  const berthPer = perGameServer(nlb.berth.elbv2MutatingCalls, nlbServers);
  const peerPer = perGameServer(nlb.peer.elbv2MutatingCalls, nlbServers);
  const chaos = runs.chaos.berth;
  const berthRuns = [
    runs.nlbBurst.berth,
    runs.acceleratorBurst.berth,
    runs.chaos.berth,
    runs.steady.berth,
    runs.slots.burst,
    runs.slots.churn,
    runs.slots.chaos,
  ];
  const over = berthRuns.filter((run) => run.elbv2OverBucket > 0);
  return [
    ...slotsVerdicts(runs.slots),
    {
      target: 'every scenario: 0 ELB calls over the documented buckets',
      pass: over.length === 0,
      line:
        over.length === 0
          ? `berth: none in ${berthRuns.length} runs (${berthRuns.map((r) => r.scenario).join(', ')}); the chaos runs' injected throttling is a fault, not counted`
          : over.map((r) => `${r.system} ${r.scenario}: ${r.elbv2OverBucket}`).join('; '),
    },
    latency(acc, 'accelerator', ACCELERATOR_P99_S),
    {
      ...latency(nlb.berth, 'nlb', NLB_P99_S),
      line: `${latency(nlb.berth, 'nlb', NLB_P99_S).line} (berth's ELBv2 budget lets the last of ${nlbServers} binds land no sooner than ${nlbBudgetFloorSeconds(nlbServers)} s, and a target serves ${NLB_REGISTRATION_DELAY_MS / 1000} s after it is registered); in slots mode, on nodes Ready 5 minutes: p99 ${reachableStats(runs.slots.burst, 'nlb').p99} s`,
    },
    {
      target: 'NLB burst, a front per game server: p99 binding to reachable no worse than OKG',
      pass: reachableStats(nlb.berth, 'nlb').p99 <= reachableStats(nlb.peer, 'nlb').p99,
      line: `${latency(nlb.berth, 'nlb', NLB_P99_S).line}; ${latency(nlb.peer, 'nlb', NLB_P99_S).line}`,
    },
    {
      target: `Global Accelerator burst: at most 1 mutating call per ${GAME_SERVERS_PER_ACCELERATOR_CALL} game servers`,
      pass: acc.acceleratorMutatingCalls <= allowedCalls,
      line: `${acc.system}: ${acc.acceleratorMutatingCalls} mutating calls for ${accServers} game servers (${runs.acceleratorBurst.peer.system}: ${runs.acceleratorBurst.peer.acceleratorMutatingCalls})`,
    },
    {
      target: 'NLB burst: mutating ELBv2 calls per game server no more than OKG',
      pass: berthPer <= peerPer,
      line: `${nlb.berth.system}: ${berthPer} per game server; ${nlb.peer.system}: ${peerPer}`,
    },
    {
      target: 'chaos: no public port held by two live game servers',
      pass: chaos.doublyHeld.length === 0,
      line:
        chaos.doublyHeld.length === 0
          ? `${chaos.system}: none, checked every 100 ms of ${chaos.simulatedSeconds} s`
          : `${chaos.system}: ${chaos.doublyHeld.length}, e.g. ${chaos.doublyHeld[0]}`,
    },
    {
      target: "chaos: every orphan removed within repair's grace",
      pass: chaos.orphans.length === 0,
      line:
        chaos.orphans.length === 0
          ? `${chaos.system}: none left at the end`
          : `${chaos.system}: ${chaos.orphans.length} left, e.g. ${chaos.orphans[0]}`,
    },
  ];
}

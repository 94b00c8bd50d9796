/**
 * The fronts benchmark's targets, judged from the runs alone: berth's bursts against
 * fixed bounds and against OpenKruise Game's calls on the same events, and berth's chaos run
 * against the first rule and repair's promise. Pure, so a verdict is tested apart from a run.
 */
import { DEFAULT_ELBV2_BUDGET } from '../../shared/ec2/rate-budget.js';
import type { BucketSpec } from '../../shared/ec2/token-bucket.js';
import { NLB_REGISTRATION_DELAY_MS } from '../../sim/fakes/elbv2.js';
import type { TargetVerdict } from '../support/results.js';
import { type RunResult, reachableStats } from './harness.js';

/** p99 from binding to reachable, seconds. */
export const ACCELERATOR_P99_S = 5;
export const NLB_P99_S = 15;
/** At most one mutating Global Accelerator call per this many game servers in a burst. */
export const GAME_SERVERS_PER_ACCELERATOR_CALL = 50;

/** berth's and the peer's runs of each scenario. */
export interface JudgedRuns {
  readonly nlbBurst: { readonly berth: RunResult; readonly peer: RunResult };
  readonly acceleratorBurst: { readonly berth: RunResult; readonly peer: RunResult };
  readonly chaos: { readonly berth: RunResult };
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
  return [
    latency(acc, 'accelerator', ACCELERATOR_P99_S),
    {
      ...latency(nlb.berth, 'nlb', NLB_P99_S),
      line: `${latency(nlb.berth, 'nlb', NLB_P99_S).line} (berth's ELBv2 budget lets the last of ${nlbServers} binds land no sooner than ${nlbBudgetFloorSeconds(nlbServers)} s, and a target serves ${NLB_REGISTRATION_DELAY_MS / 1000} s after it is registered)`,
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

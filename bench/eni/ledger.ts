/**
 * What every run of the ENI benchmark reports the same way: EC2 calls per action and per second,
 * calls beyond berth's budget (replayed strictly), idle addresses over time, waiting pods.
 */
import type { Ec2Action } from '../../shared/ec2/network.js';
import {
  DEFAULT_EC2_BUDGET,
  EC2_ACTION_FAMILY,
  type Ec2ActionFamily,
} from '../../shared/ec2/rate-budget.js';
import { fullBucket, takeTokens } from '../../shared/ec2/token-bucket.js';
import { MUTATING_ACTIONS } from '../../sim/fakes/ec2.js';
import { FLEET, START } from './workload.js';

/** The cold start: nodes join and first fill their pools within this first hour of the day. */
export const COLD_START_MS = 3_600_000;

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
  /** The longest any one pod waited for an address. */
  readonly longestWaitSeconds: number;
  /**
   * Waits that began while the node's subnet was fragmented: no /28 to delegate although a /28's
   * worth of its addresses were free (`Subnets.fragmentedNow`).
   */
  readonly fragmentationWaits: { readonly pods: number; readonly longestSeconds: number };
  /**
   * The day after its first hour (COLD_START_MS), apart from the cold start: the pods that began
   * waiting then, the longest of those waits, and the mutating calls made then.
   */
  readonly steadyState: {
    readonly waitingPods: number;
    readonly longestWaitSeconds: number;
    readonly mutatingCalls: number;
  };
  /**
   * Per instance type: the pods a node can hold under the policy (its addresses for pods, capped
   * by maxPods) and the most pods one node of the type held addresses for at once.
   */
  readonly podsPerNode: Record<string, { readonly capacity: number; readonly peak: number }>;
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

/** Counts calls per action and per second, for every run alike. */
export class CallLedger {
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

  /** Mutating calls made at or after `fromMs`. */
  mutatingSince(fromMs: number): number {
    let total = 0;
    const from = Math.floor(fromMs / 1000);
    for (const [second, count] of this.mutatingPerSecond) if (second >= from) total += count;
    return total;
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

export const peak = (map: Map<number, number>) => Math.max(0, ...map.values());

/** Idle IPs per node of each instance type, summed over the samples. */
export class IdleByType {
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

/** Every pod that waited for an address, and how long. */
export class Waits {
  pods = 0;
  #ms = 0;
  #longestMs = 0;
  #fragmentation = { pods: 0, longestMs: 0 };
  #steady = { pods: 0, longestMs: 0 };

  /**
   * A pod that began waiting at `since` (epoch ms) waited `ms`; `fragmented` when its subnet
   * was fragmented as it arrived (no /28 to delegate, a /28's worth of addresses free).
   */
  add(ms: number, fragmented: boolean, since: number): void {
    this.pods++;
    this.#ms += ms;
    this.#longestMs = Math.max(this.#longestMs, ms);
    if (since >= START + COLD_START_MS) {
      this.#steady.pods++;
      this.#steady.longestMs = Math.max(this.#steady.longestMs, ms);
    }
    if (fragmented) {
      this.#fragmentation.pods++;
      this.#fragmentation.longestMs = Math.max(this.#fragmentation.longestMs, ms);
    }
  }

  report() {
    return {
      waitingPods: this.pods,
      waitSeconds: Math.round(this.#ms / 1000),
      longestWaitSeconds: Math.round(this.#longestMs / 100) / 10,
      fragmentationWaits: {
        pods: this.#fragmentation.pods,
        longestSeconds: Math.round(this.#fragmentation.longestMs / 100) / 10,
      },
    };
  }

  /** The waits that began after the cold start. */
  steady(): { waitingPods: number; longestWaitSeconds: number } {
    return {
      waitingPods: this.#steady.pods,
      longestWaitSeconds: Math.round(this.#steady.longestMs / 100) / 10,
    };
  }
}

/** Pods per node by instance type: what the policy allows, and what a node reached. */
export class PodsPerNode {
  readonly #capacity = new Map<string, number>();
  readonly #peak = new Map<string, number>();

  /** The pods a node of `type` can hold addresses for under the policy. */
  capacity(type: string, pods: number): void {
    this.#capacity.set(type, Math.max(this.#capacity.get(type) ?? 0, pods));
  }

  /** A node of `type` holds addresses for `pods` pods now. */
  seen(type: string, pods: number): void {
    this.#peak.set(type, Math.max(this.#peak.get(type) ?? 0, pods));
  }

  report(): Record<string, { capacity: number; peak: number }> {
    return Object.fromEntries(
      FLEET.map((f) => [
        f.type,
        { capacity: this.#capacity.get(f.type) ?? 0, peak: this.#peak.get(f.type) ?? 0 },
      ]),
    );
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/**
 * What every run reports the same way: EC2 calls, idle addresses over time, pods that waited,
 * pods per node.
 */
export function tally(
  ledger: CallLedger,
  idle: readonly number[],
  waits: Waits,
  podsPerNode: PodsPerNode,
) {
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
    ...waits.report(),
    steadyState: { ...waits.steady(), mutatingCalls: ledger.mutatingSince(START + COLD_START_MS) },
    budgetViolations: ledger.budgetViolations(),
    podsPerNode: podsPerNode.report(),
  };
}

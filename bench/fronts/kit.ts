/**
 * The moving parts the fronts benchmark builds its controllers from, on simulated time: a
 * client-side token bucket (client-go's and the AWS Load Balancer Controller's limiters), a
 * controller-runtime work queue (workers, de-duplicated keys, delayed and rate-limited requeues),
 * and the call latency every API call pays, berth's and the peer's alike.
 */
import {
  type BucketSpec,
  type BucketState,
  fullBucket,
  takeTokens,
} from '../../shared/ec2/token-bucket.js';
import type { CustomRoutingApi } from '../../shared/fronts/accelerator.js';
import type { Elbv2Api } from '../../shared/fronts/elbv2.js';

/** What a simulated component needs of the clock. */
export interface SimTime {
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * How long a call takes, the same for berth and the peer (an assumption: the AWS pages give no
 * latencies). The Global Accelerator control plane is in us-west-2, so its calls pay a
 * cross-Region round trip from most clusters.
 */
export const CALL_LATENCY_MS = {
  elbv2Read: 60,
  elbv2Write: 150,
  acceleratorRead: 200,
  acceleratorWrite: 300,
  /** A write to the cluster's API server (a patch, a create). */
  kubeWrite: 15,
} as const;

/** A token bucket a client waits on before each request (it never refuses, it delays). */
export class ClientLimiter {
  readonly #spec: BucketSpec;
  readonly #time: SimTime;
  #state: BucketState;

  constructor(spec: BucketSpec, time: SimTime) {
    this.#spec = spec;
    this.#time = time;
    this.#state = fullBucket(spec, time.now());
  }

  /** Resolves once a token is taken. */
  async wait(): Promise<void> {
    for (;;) {
      const outcome = takeTokens(this.#spec, this.#state, this.#time.now());
      this.#state = outcome.state;
      if (outcome.granted) return;
      await this.#time.sleep(outcome.retryAfterMs);
    }
  }
}

/** controller-runtime's default per-item backoff: 5 ms doubling to 1,000 s. */
export function itemBackoffMs(failures: number): number {
  return Math.min(5 * 2 ** failures, 1_000_000);
}

/**
 * The overall half of controller-runtime's default rate limiter (client-go's
 * `DefaultTypedControllerRateLimiter`: the larger of the per-item backoff and a 10 per second,
 * burst 100 bucket over every failed key): a failure reserves the bucket's next token.
 */
const OVERALL_RETRY = { capacity: 100, refillPerSecond: 10 };

/**
 * A controller-runtime work queue with `workers` goroutines: a key queued while it waits is queued
 * once; a key queued while it is processed runs again after; `addAfter` delays; a reconcile that
 * throws is requeued after the larger of the per-item backoff (`itemBackoffMs`) and the overall
 * retry bucket's wait, one that returns a delay is
 * requeued after it and its failures forgotten.
 */
export class WorkQueue {
  readonly #time: SimTime;
  readonly #reconcile: (key: string) => Promise<number | undefined>;
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #idle: (() => void)[] = [];
  /** The overall retry bucket: tokens may go negative, a reservation's wait being owed. */
  #retryTokens = OVERALL_RETRY.capacity;
  #retryUpdatedAt: number;
  #stopped = false;

  constructor(
    time: SimTime,
    workers: number,
    reconcile: (key: string) => Promise<number | undefined>,
  ) {
    this.#time = time;
    this.#reconcile = reconcile;
    this.#retryUpdatedAt = time.now();
    for (let i = 0; i < workers; i++) void this.#worker();
  }

  /** Queues a key now. */
  add(key: string): void {
    if (this.#stopped) return;
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#queue.push(key);
    this.#idle.shift()?.();
  }

  /** Queues a key after `ms`. */
  addAfter(key: string, ms: number): void {
    void this.#time.sleep(ms).then(() => this.add(key));
  }

  /** Drops every key and ends the workers (the process died). */
  stop(): void {
    this.#stopped = true;
    this.#queue.length = 0;
    this.#queued.clear();
    for (const wake of this.#idle.splice(0)) wake();
  }

  /** The wait the overall bucket puts on one more retry (0 while it has tokens). */
  #reserveRetry(): number {
    const now = this.#time.now();
    const refilled = ((now - this.#retryUpdatedAt) / 1000) * OVERALL_RETRY.refillPerSecond;
    this.#retryTokens = Math.min(OVERALL_RETRY.capacity, this.#retryTokens + refilled) - 1;
    this.#retryUpdatedAt = now;
    return this.#retryTokens >= 0 ? 0 : (-this.#retryTokens / OVERALL_RETRY.refillPerSecond) * 1000;
  }

  async #worker(): Promise<void> {
    while (!this.#stopped) {
      const key = this.#queue.shift();
      if (key === undefined) {
        await new Promise<void>((wake) => this.#idle.push(wake));
        continue;
      }
      this.#queued.delete(key);
      this.#processing.add(key);
      try {
        const after = await this.#reconcile(key);
        this.#failures.delete(key);
        if (after !== undefined) this.addAfter(key, after);
      } catch {
        const failures = this.#failures.get(key) ?? 0;
        this.#failures.set(key, failures + 1);
        this.addAfter(key, Math.max(itemBackoffMs(failures), this.#reserveRetry()));
      }
      this.#processing.delete(key);
      if (this.#dirty.delete(key)) this.add(key);
    }
  }
}

/** Read calls of ELBv2: the rest change state. */
const ELBV2_READS: ReadonlySet<keyof Elbv2Api> = new Set([
  'describeLoadBalancers',
  'describeListeners',
  'describeTargetGroups',
  'describeTags',
  'describeTargets',
]);
const ACCELERATOR_READS: ReadonlySet<keyof CustomRoutingApi> = new Set([
  'describeAccelerator',
  'describeEndpointGroup',
  'listPortMappings',
  'listPortMappingsByDestination',
]);

function delayed<T extends object>(
  api: T,
  sleep: (ms: number) => Promise<void>,
  latencyOf: (method: string) => number,
): T {
  return new Proxy(api, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      // Half the round trip before the service acts, half after: a call's effect lands mid-call.
      return async (...args: unknown[]) => {
        const half = latencyOf(property) / 2;
        await sleep(half);
        try {
          return await value.apply(target, args);
        } finally {
          await sleep(half);
        }
      };
    },
  });
}

/** The ELBv2 API as a caller sees it: every call takes `CALL_LATENCY_MS`. */
export function withElbv2Latency(api: Elbv2Api, sleep: (ms: number) => Promise<void>): Elbv2Api {
  return delayed(api, sleep, (method) =>
    ELBV2_READS.has(method as keyof Elbv2Api)
      ? CALL_LATENCY_MS.elbv2Read
      : CALL_LATENCY_MS.elbv2Write,
  );
}

/** The Global Accelerator API as a caller sees it: every call takes `CALL_LATENCY_MS`. */
export function withAcceleratorLatency(
  api: CustomRoutingApi,
  sleep: (ms: number) => Promise<void>,
): CustomRoutingApi {
  return delayed(api, sleep, (method) =>
    ACCELERATOR_READS.has(method as keyof CustomRoutingApi)
      ? CALL_LATENCY_MS.acceleratorRead
      : CALL_LATENCY_MS.acceleratorWrite,
  );
}

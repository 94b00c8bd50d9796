/**
 * One EC2 rate budget for the whole account: a token bucket per action family, sized below EC2's
 * own buckets so berth leaves headroom for every other caller in the account (EC2 buckets are per
 * account and Region, shared with Karpenter, node groups and the console). `BudgetedEc2Network`
 * wraps any `Ec2Network`: each call first takes a token, and `RequestLimitExceeded` gets a
 * capped, jittered, bounded backoff. Nothing here retries without limit (terway's uncapped
 * backoff once stopped all allocation).
 */
import { isThrottled, isTransient } from '../aws/error-codes.js';
import { Ec2BudgetExhaustedError } from './errors.js';
import { EC2_ACTIONS, type Ec2Action, type Ec2Network } from './network.js';
import type { BucketSpec } from './token-bucket.js';

/** Families of EC2 actions that share one budget bucket. */
export type Ec2ActionFamily = 'describe' | 'addresses' | 'interfaces' | 'tags';

/** Which bucket each action draws from. */
export const EC2_ACTION_FAMILY: Readonly<Record<Ec2Action, Ec2ActionFamily>> = {
  DescribeInstances: 'describe',
  DescribeInstanceTypes: 'describe',
  DescribeSubnets: 'describe',
  DescribeNetworkInterfaces: 'describe',
  AssignPrivateIpAddresses: 'addresses',
  UnassignPrivateIpAddresses: 'addresses',
  CreateNetworkInterface: 'interfaces',
  AttachNetworkInterface: 'interfaces',
  ModifyNetworkInterfaceAttribute: 'interfaces',
  DetachNetworkInterface: 'interfaces',
  DeleteNetworkInterface: 'interfaces',
  CreateTags: 'tags',
};

/**
 * berth's share of EC2's default buckets (reference §3.1). Each family's refill is at most half
 * of the slowest EC2 bucket among its members, and its capacity at most half of the smallest
 * EC2 maximum, so berth alone can never empty an EC2 bucket:
 * - describe: filtered/paginated Describe* is 100 max / 20 per s at EC2;
 * - addresses: Assign and Unassign are 100 / 5 each at EC2 (berth's budget covers both together);
 * - interfaces: Create/Delete/Modify are 100 / 5, Attach/Detach 50 / 5 (the mutating default);
 * - tags: CreateTags is 100 / 10.
 */
export const DEFAULT_EC2_BUDGET: Readonly<Record<Ec2ActionFamily, BucketSpec>> = {
  describe: { capacity: 40, refillPerSecond: 10 },
  addresses: { capacity: 25, refillPerSecond: 2.5 },
  interfaces: { capacity: 20, refillPerSecond: 2 },
  tags: { capacity: 25, refillPerSecond: 5 },
};

/** The answer of a budget to a request for tokens. */
export interface BudgetGrant {
  readonly granted: boolean;
  /** When refused: how long until the family has a token again. */
  readonly retryAfterMs: number;
}

/** The shared budget: one bucket per family, wherever it is kept (DynamoDB in AWS). */
export interface RateBudget {
  /** Takes `count` tokens from the family's bucket, or refuses without waiting. */
  take(family: Ec2ActionFamily, count?: number): Promise<BudgetGrant>;
}

/** Retry and wait limits of `BudgetedEc2Network`; every one is finite. */
export interface BackoffPolicy {
  /** Attempts per call, the first included, when EC2 throttles or fails transiently. */
  readonly maxAttempts: number;
  /** Backoff ceiling doubles from this base per attempt... */
  readonly baseDelayMs: number;
  /** ...up to this cap; the actual delay is uniformly jittered in [0, ceiling] ("full jitter"). */
  readonly maxDelayMs: number;
  /** Longest a call waits for budget tokens before giving up with `Ec2BudgetExhaustedError`. */
  readonly maxBudgetWaitMs: number;
}

/** Defaults: four attempts, 200 ms doubling to at most 5 s, at most 3 s waiting for tokens. */
export const DEFAULT_BACKOFF: BackoffPolicy = {
  maxAttempts: 4,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxBudgetWaitMs: 3_000,
};

/**
 * For work on one node off every request path (an instance's "running" event, a background
 * refill): an attempt waits its turn at the budget for up to 30 s rather than give up and leave
 * the node to the next pass, a minute later (Lambda does not retry the ENI function). Under a
 * node storm (VPC CNI #2730: 150 nodes within half a minute) the bucket then serves the waiting
 * invocations in turn, and the fair share can serve a quieter cluster's few within seconds
 * instead of a pass later (`npm run bench -- multicluster`, the storm). Every wait still ends by
 * the invocation's deadline (`ENI_INVOCATIONS`). The node IP API keeps the default (a
 * pod is waiting), and so does the pass (it works through every pool; whatever it leaves, the
 * next pass takes up).
 */
export const NODE_WORK_BACKOFF: BackoffPolicy = { ...DEFAULT_BACKOFF, maxBudgetWaitMs: 30_000 };

/** What one wrapped call did, for metrics and the benchmark. */
export interface Ec2CallRecord {
  readonly action: Ec2Action;
  readonly at: number;
  readonly outcome: 'ok' | 'throttled' | 'error';
  readonly code?: string;
}

/** The injected effects the decorator needs. */
export interface BudgetedEc2Options {
  readonly budget: RateBudget;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Uniform in [0, 1). */
  readonly random: () => number;
  readonly backoff?: BackoffPolicy;
  /**
   * Epoch ms no wait may end after, for budget tokens or before a retry: a call that would wait
   * past it fails at once instead, so an invocation stops waiting in time to end cleanly inside
   * its timeout and its leases (`until`).
   */
  readonly deadline?: number;
  /** Called once per EC2 request actually sent. */
  readonly onCall?: (record: Ec2CallRecord) => void;
}

/** The delay before retry `attempt` (1-based): full jitter under a capped exponential ceiling. */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/** An `Ec2Network` whose every call is paid from the shared budget and retried within bounds. */
export class BudgetedEc2Network implements Ec2Network {
  readonly #inner: Ec2Network;
  readonly #options: BudgetedEc2Options;
  readonly #backoff: BackoffPolicy;

  constructor(inner: Ec2Network, options: BudgetedEc2Options) {
    this.#inner = inner;
    this.#options = options;
    this.#backoff = options.backoff ?? DEFAULT_BACKOFF;
  }

  /**
   * The same network and budget for one invocation whose waits must all end by `deadline` (or
   * by this network's own, if earlier).
   */
  until(deadline: number): BudgetedEc2Network {
    const earliest = Math.min(deadline, this.#options.deadline ?? Number.POSITIVE_INFINITY);
    return new BudgetedEc2Network(this.#inner, { ...this.#options, deadline: earliest });
  }

  /** Whether a wait of `ms` from now would end past the deadline. */
  #pastDeadline(ms: number): boolean {
    const { deadline } = this.#options;
    return deadline !== undefined && this.#options.now() + ms > deadline;
  }

  async #call<T>(method: keyof Ec2Network, run: () => Promise<T>): Promise<T> {
    const action = EC2_ACTIONS[method];
    const family = EC2_ACTION_FAMILY[action];
    for (let attempt = 1; ; attempt++) {
      await this.#pay(family, attempt - 1);
      try {
        const result = await run();
        this.#options.onCall?.({ action, at: this.#options.now(), outcome: 'ok' });
        return result;
      } catch (error) {
        const throttled = isThrottled(error);
        this.#options.onCall?.({
          action,
          at: this.#options.now(),
          outcome: throttled ? 'throttled' : 'error',
          code: (error as { name?: string }).name,
        });
        const retryable = throttled || isTransient(error);
        if (!retryable || attempt >= this.#backoff.maxAttempts) throw error;
        const delay = backoffDelay(this.#backoff, attempt, this.#options.random);
        if (this.#pastDeadline(delay)) throw error;
        await this.#options.sleep(delay);
      }
    }
  }

  /** Waits for a token; `sent`: attempts of this call already sent (told to a refusal). */
  async #pay(family: Ec2ActionFamily, sent: number): Promise<void> {
    let waited = 0;
    for (;;) {
      const grant = await this.#options.budget.take(family);
      if (grant.granted) return;
      // A little jitter keeps several Lambdas that were refused together from retrying together.
      const delay = grant.retryAfterMs + Math.floor(this.#options.random() * 100);
      if (waited + delay > this.#backoff.maxBudgetWaitMs || this.#pastDeadline(delay)) {
        throw new Ec2BudgetExhaustedError(family, grant.retryAfterMs, sent);
      }
      await this.#options.sleep(delay);
      waited += delay;
    }
  }

  describeInstances(...args: Parameters<Ec2Network['describeInstances']>) {
    return this.#call('describeInstances', () => this.#inner.describeInstances(...args));
  }
  describeInstanceTypes(...args: Parameters<Ec2Network['describeInstanceTypes']>) {
    return this.#call('describeInstanceTypes', () => this.#inner.describeInstanceTypes(...args));
  }
  describeSubnets(...args: Parameters<Ec2Network['describeSubnets']>) {
    return this.#call('describeSubnets', () => this.#inner.describeSubnets(...args));
  }
  describeNetworkInterfaces(...args: Parameters<Ec2Network['describeNetworkInterfaces']>) {
    return this.#call('describeNetworkInterfaces', () =>
      this.#inner.describeNetworkInterfaces(...args),
    );
  }
  createNetworkInterface(...args: Parameters<Ec2Network['createNetworkInterface']>) {
    return this.#call('createNetworkInterface', () => this.#inner.createNetworkInterface(...args));
  }
  attachNetworkInterface(...args: Parameters<Ec2Network['attachNetworkInterface']>) {
    return this.#call('attachNetworkInterface', () => this.#inner.attachNetworkInterface(...args));
  }
  setDeleteOnTermination(...args: Parameters<Ec2Network['setDeleteOnTermination']>) {
    return this.#call('setDeleteOnTermination', () => this.#inner.setDeleteOnTermination(...args));
  }
  assignPrivateIpAddresses(...args: Parameters<Ec2Network['assignPrivateIpAddresses']>) {
    return this.#call('assignPrivateIpAddresses', () =>
      this.#inner.assignPrivateIpAddresses(...args),
    );
  }
  unassignPrivateIpAddresses(...args: Parameters<Ec2Network['unassignPrivateIpAddresses']>) {
    return this.#call('unassignPrivateIpAddresses', () =>
      this.#inner.unassignPrivateIpAddresses(...args),
    );
  }
  assignIpv4Prefixes(...args: Parameters<Ec2Network['assignIpv4Prefixes']>) {
    return this.#call('assignIpv4Prefixes', () => this.#inner.assignIpv4Prefixes(...args));
  }
  unassignIpv4Prefixes(...args: Parameters<Ec2Network['unassignIpv4Prefixes']>) {
    return this.#call('unassignIpv4Prefixes', () => this.#inner.unassignIpv4Prefixes(...args));
  }
  detachNetworkInterface(...args: Parameters<Ec2Network['detachNetworkInterface']>) {
    return this.#call('detachNetworkInterface', () => this.#inner.detachNetworkInterface(...args));
  }
  deleteNetworkInterface(...args: Parameters<Ec2Network['deleteNetworkInterface']>) {
    return this.#call('deleteNetworkInterface', () => this.#inner.deleteNetworkInterface(...args));
  }
  createTags(...args: Parameters<Ec2Network['createTags']>) {
    return this.#call('createTags', () => this.#inner.createTags(...args));
  }
}

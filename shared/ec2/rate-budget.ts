/**
 * One rate budget for the whole account: a token bucket per action family, sized below the
 * services' own buckets so berth leaves headroom for every other caller in the account (EC2 and
 * Elastic Load Balancing meter per account and Region, Global Accelerator per account, each
 * shared with Karpenter, node groups, controllers and the console). `callWithinBudget` makes one
 * call of any service so: each attempt first takes a token, and throttling or a transient fault
 * gets a capped, jittered, bounded backoff. `BudgetedEc2Network` wraps any `Ec2Network` with it
 * (the fronts' decorators wrap ELBv2 and Global Accelerator the same way). Nothing here retries
 * without limit (terway's uncapped backoff once stopped all allocation).
 */
import { isThrottled, isTransient } from '../aws/error-codes.js';
import { Ec2BudgetExhaustedError, RateBudgetExhaustedError } from './errors.js';
import { EC2_ACTIONS, type Ec2Action, type Ec2Network } from './network.js';
import type { BucketSpec } from './token-bucket.js';

/** Families of EC2 actions that share one budget bucket. */
export type Ec2ActionFamily = 'describe' | 'addresses' | 'interfaces' | 'tags';
/** Families of Elastic Load Balancing (v2) actions that share one budget bucket. */
export type Elbv2ActionFamily =
  | 'elbv2-describe'
  | 'elbv2-targets'
  | 'elbv2-mutate'
  | 'elbv2-account';
/** Families of Global Accelerator actions that share one budget bucket. */
export type AcceleratorActionFamily = 'accelerator-describe' | 'accelerator-mutate';
/** Every bucket of the account's budget. */
export type BudgetFamily = Ec2ActionFamily | Elbv2ActionFamily | AcceleratorActionFamily;

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

/**
 * berth's share of Elastic Load Balancing's account buckets, half of each (Elastic Load Balancing
 * User Guide, "Request throttling for the Elastic Load Balancing API",
 * docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html; API version 2
 * has buckets of its own, apart from the Classic API's):
 * - elbv2-describe: non-mutating Describe* calls, 40 refilled at 10 per second;
 * - elbv2-targets: RegisterTargets and DeregisterTargets, 20 at 4;
 * - elbv2-mutate: the other mutating calls berth makes (CreateTargetGroup, CreateListener,
 *   DeleteListener, DeleteTargetGroup), 20 at 3;
 * - elbv2-account: the account-level bucket every ELB call also draws from, 40 at 10, so the
 *   three families together never overdraw what the account allows.
 */
export const DEFAULT_ELBV2_BUDGET: Readonly<Record<Elbv2ActionFamily, BucketSpec>> = {
  'elbv2-describe': { capacity: 20, refillPerSecond: 5 },
  'elbv2-targets': { capacity: 10, refillPerSecond: 2 },
  'elbv2-mutate': { capacity: 10, refillPerSecond: 1.5 },
  'elbv2-account': { capacity: 20, refillPerSecond: 5 },
};

/**
 * berth's share of Global Accelerator's API. Its quotas page (Global Accelerator Developer Guide,
 * "Quotas for AWS Global Accelerator") publishes no request rate, and every call, whatever the
 * endpoints' Region, goes to the one API endpoint in us-west-2: berth takes half of the
 * conservative buckets the Global Accelerator fake assumes (reads 10 / 5 per s, allow and deny
 * 5 / 1), which is plenty, as a burst of binds is one AllowCustomRoutingTraffic per subnet and
 * port mappings are read once per subnet.
 */
export const DEFAULT_ACCELERATOR_BUDGET: Readonly<Record<AcceleratorActionFamily, BucketSpec>> = {
  'accelerator-describe': { capacity: 5, refillPerSecond: 2.5 },
  'accelerator-mutate': { capacity: 2, refillPerSecond: 0.5 },
};

/** Every family's bucket: the budget a fresh account item or an in-process budget starts from. */
export const DEFAULT_ACCOUNT_BUDGET: Readonly<Record<BudgetFamily, BucketSpec>> = {
  ...DEFAULT_EC2_BUDGET,
  ...DEFAULT_ELBV2_BUDGET,
  ...DEFAULT_ACCELERATOR_BUDGET,
};

/** Bucket sizes that differ from the defaults (a test's or a benchmark's); the rest default. */
export type BudgetSpecs = Readonly<Partial<Record<BudgetFamily, BucketSpec>>>;

/** Every family's bucket: `specs` over the defaults. */
export function budgetSpecs(specs: BudgetSpecs = {}): Readonly<Record<BudgetFamily, BucketSpec>> {
  return { ...DEFAULT_ACCOUNT_BUDGET, ...specs };
}

/** The answer of a budget to a request for tokens. */
export interface BudgetGrant {
  readonly granted: boolean;
  /** When refused: how long until the family has a token again. */
  readonly retryAfterMs: number;
}

/** The shared budget: one bucket per family, wherever it is kept (DynamoDB in AWS). */
export interface RateBudget {
  /** Takes `count` tokens from the family's bucket, or refuses without waiting. */
  take(family: BudgetFamily, count?: number): Promise<BudgetGrant>;
}

/** Retry and wait limits of a budgeted call; every one is finite. */
export interface BackoffPolicy {
  /** Attempts per call, the first included, when the service throttles or fails transiently. */
  readonly maxAttempts: number;
  /** Backoff ceiling doubles from this base per attempt... */
  readonly baseDelayMs: number;
  /** ...up to this cap; the actual delay is uniformly jittered in [0, ceiling] ("full jitter"). */
  readonly maxDelayMs: number;
  /** Longest a call waits for budget tokens before giving up with a `RateBudgetExhaustedError`. */
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
export interface CallRecord<A extends string = string> {
  readonly action: A;
  readonly at: number;
  readonly outcome: 'ok' | 'throttled' | 'error';
  readonly code?: string;
}

/** What one wrapped EC2 call did. */
export type Ec2CallRecord = CallRecord<Ec2Action>;

/** The injected effects a budgeted call needs. */
export interface BudgetedOptions<A extends string = string> {
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
  /** Called once per request actually sent. */
  readonly onCall?: (record: CallRecord<A>) => void;
}

/** The injected effects `BudgetedEc2Network` needs. */
export type BudgetedEc2Options = BudgetedOptions<Ec2Action>;

/** One call to make within the budget. */
export interface BudgetedCall<A extends string, T> {
  readonly action: A;
  readonly family: BudgetFamily;
  /** A family every call of the service also pays (ELB's account-level bucket). */
  readonly alsoFrom?: BudgetFamily;
  readonly run: () => Promise<T>;
  /**
   * The error a refused wait raises (`sent`: attempts of this call already sent); a
   * `RateBudgetExhaustedError` where absent.
   */
  readonly exhausted?: (family: BudgetFamily, retryAfterMs: number, sent: number) => Error;
}

/** The delay before retry `attempt` (1-based): full jitter under a capped exponential ceiling. */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/** The earlier of two optional deadlines. */
export function earlierDeadline(deadline: number, other: number | undefined): number {
  return Math.min(deadline, other ?? Number.POSITIVE_INFINITY);
}

/**
 * Makes one call within the budget: each attempt first takes a token from the call's family
 * (waiting for one at most `maxBudgetWaitMs`, then raising the call's exhausted error), and a
 * throttled or transient failure is tried again after a full-jitter backoff, at most
 * `maxAttempts` in all and never past the deadline. Any other error passes through at once.
 */
export async function callWithinBudget<A extends string, T>(
  options: BudgetedOptions<A>,
  call: BudgetedCall<A, T>,
): Promise<T> {
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const { action } = call;
  const pastDeadline = (ms: number) =>
    options.deadline !== undefined && options.now() + ms > options.deadline;
  /**
   * Waits for a token of each of the call's families in turn; `sent`: attempts of this call
   * already sent (told to a refusal). A wait that gives up after the first was paid leaves that
   * token spent, which only ever leaves the service more room.
   */
  const pay = async (sent: number): Promise<void> => {
    await payFrom(call.family, sent);
    if (call.alsoFrom !== undefined) await payFrom(call.alsoFrom, sent);
  };
  const payFrom = async (family: BudgetFamily, sent: number): Promise<void> => {
    let waited = 0;
    for (;;) {
      const grant = await options.budget.take(family);
      if (grant.granted) return;
      // A little jitter keeps several Lambdas that were refused together from retrying together.
      const delay = grant.retryAfterMs + Math.floor(options.random() * 100);
      if (waited + delay > backoff.maxBudgetWaitMs || pastDeadline(delay)) {
        throw call.exhausted
          ? call.exhausted(family, grant.retryAfterMs, sent)
          : new RateBudgetExhaustedError(family, grant.retryAfterMs, sent);
      }
      await options.sleep(delay);
      waited += delay;
    }
  };
  for (let attempt = 1; ; attempt++) {
    await pay(attempt - 1);
    try {
      const result = await call.run();
      options.onCall?.({ action, at: options.now(), outcome: 'ok' });
      return result;
    } catch (error) {
      const throttled = isThrottled(error);
      options.onCall?.({
        action,
        at: options.now(),
        outcome: throttled ? 'throttled' : 'error',
        code: (error as { name?: string }).name,
      });
      const retryable = throttled || isTransient(error);
      if (!retryable || attempt >= backoff.maxAttempts) throw error;
      const delay = backoffDelay(backoff, attempt, options.random);
      if (pastDeadline(delay)) throw error;
      await options.sleep(delay);
    }
  }
}

/** An `Ec2Network` whose every call is paid from the shared budget and retried within bounds. */
export class BudgetedEc2Network implements Ec2Network {
  readonly #inner: Ec2Network;
  readonly #options: BudgetedEc2Options;

  constructor(inner: Ec2Network, options: BudgetedEc2Options) {
    this.#inner = inner;
    this.#options = options;
  }

  /**
   * The same network and budget for one invocation whose waits must all end by `deadline` (or
   * by this network's own, if earlier).
   */
  until(deadline: number): BudgetedEc2Network {
    return new BudgetedEc2Network(this.#inner, {
      ...this.#options,
      deadline: earlierDeadline(deadline, this.#options.deadline),
    });
  }

  #call<T>(method: keyof Ec2Network, run: () => Promise<T>): Promise<T> {
    const action = EC2_ACTIONS[method];
    return callWithinBudget(this.#options, {
      action,
      family: EC2_ACTION_FAMILY[action],
      run,
      exhausted: (family, retryAfterMs, sent) =>
        new Ec2BudgetExhaustedError(family, retryAfterMs, sent),
    });
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

/**
 * A faithful in-memory Elastic Load Balancing v2 for berth's `Elbv2Api`: Network Load Balancers
 * in VPCs with a CIDR, target groups of type `ip`, listeners forwarding to one target group, the
 * real limits and error codes, pagination, throttling and a new listener's eventual consistency.
 * Error `name`s are the API's wire codes (`TooManyListeners`, not the SDK's
 * `TooManyListenersException`), as the domain interface names them.
 *
 * Behaviour modelled (Elastic Load Balancing API Reference, version 2015-12-01):
 * - CreateListener: idempotent for the same port, protocol and default action (the existing
 *   listener is returned); another protocol or target group on a taken port → `DuplicateListener`;
 *   at most 50 listeners per Network Load Balancer (Network Load Balancers User Guide, "Quotas for
 *   your Network Load Balancers", not adjustable) → `TooManyListeners`; a target group already
 *   forwarded to by another load balancer → `TargetGroupAssociationLimit` (a Network Load
 *   Balancer's target group serves one load balancer); listener and target group protocols must
 *   match → `IncompatibleProtocols`; a target group of another VPC → `InvalidConfigurationRequest`.
 * - CreateTargetGroup: idempotent for the same name and settings (protocol, port, VPC); another
 *   setting → `DuplicateTargetGroupName`; 3,000 target groups per Region → `TooManyTargetGroups`;
 *   a name is 1–32 alphanumerics or hyphens, neither first nor last, not `internal-…` →
 *   `ValidationError`.
 * - DeleteTargetGroup while a listener forwards to it → `ResourceInUse`.
 * - RegisterTargets: an `ip` target must lie in the target group's VPC CIDR → `InvalidTarget`.
 * - Describe*: at most 20 ARNs or names a call (`ValidationError`); pages of at most 400 with
 *   Marker → NextMarker; an unknown ARN → `LoadBalancerNotFound` / `TargetGroupNotFound` /
 *   `ListenerNotFound`.
 * - A listener just created may be missing from DescribeListeners for `listenerVisibilityLagMs`.
 * - Registration and health (Network Load Balancers User Guide, "Register targets for your
 *   Network Load Balancer": "It can take a few minutes for the registration process to complete
 *   and health checks to start"; AWS Support measured 180-300 s, quoted in
 *   kubernetes-sigs/aws-load-balancer-controller#1834): a registered target is `initial` for
 *   `targetRegistrationDelayMs` (180 s by default), then `healthy` or `unhealthy` as its health
 *   check answers (`healthCheck`: by default a TCP check on the traffic port, which a UDP-only
 *   game server never answers). Traffic goes to the healthy targets; when every registered target
 *   is unhealthy the load balancer fails open and sends it to all of them ("Health checks for
 *   Network Load Balancer target groups": "If all targets fail health checks at the same time
 *   ... the load balancer fails open"). `servingTargets` and `targetHealth` show it.
 *
 * Throttling (Elastic Load Balancing User Guide, "Request throttling for the Elastic Load
 * Balancing API", docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html):
 * token buckets per account and Region for API version 2, a refused call answered HTTP 400 with
 * code `ThrottlingException` and message `Rate exceeded` (the page's words; berth treats the
 * query API's `Throttling`, which kubernetes-sigs/aws-load-balancer-controller#1871 shows, the
 * same). Non-mutating Describe* calls 40 refilled at 10 per second; registration
 * (RegisterTargets, DeregisterTargets) 20 at 4; the other mutating calls (Create*, Delete*,
 * Modify*, AddTags) 20 at 3; and one account-level bucket of 40 at 10 that every call also draws
 * from. Pass `buckets` or `accountBucket` to change them.
 */

import type { BucketSpec } from '../../shared/ec2/token-bucket.js';
import {
  type CreateListenerInput,
  type CreateTargetGroupInput,
  type Elbv2Action,
  type Elbv2Api,
  type Elbv2Page,
  type Elbv2Tag,
  type HealthCheck,
  type IpTarget,
  type Listener,
  type ListenerProtocol,
  MAX_LISTENERS_PER_NLB,
  type NetworkLoadBalancer,
  type RegisteredTarget,
  type TargetGroup,
  type TargetHealthState,
} from '../../shared/fronts/elbv2.js';
import { type CidrBlock, cidrContains, parseCidr, parseIp } from '../../shared/net/ip.js';
import { ApiGate, type FakeApiCall } from './api-gate.js';

/** The buckets ELBv2 meters its actions by. */
export type Elbv2ActionClass = 'describe' | 'registration' | 'mutating';

/** Which bucket each action draws from. */
export const ELBV2_ACTION_CLASS: Readonly<Record<Elbv2Action, Elbv2ActionClass>> = {
  DescribeLoadBalancers: 'describe',
  DescribeListeners: 'describe',
  DescribeTargetGroups: 'describe',
  DescribeTags: 'describe',
  DescribeTargetHealth: 'describe',
  RegisterTargets: 'registration',
  DeregisterTargets: 'registration',
  CreateTargetGroup: 'mutating',
  DeleteTargetGroup: 'mutating',
  CreateListener: 'mutating',
  DeleteListener: 'mutating',
};

/** The fake's default buckets (see the header for where each figure comes from). */
export const ELBV2_DEFAULT_BUCKETS: Readonly<Record<Elbv2ActionClass, BucketSpec>> = {
  describe: { capacity: 40, refillPerSecond: 10 },
  registration: { capacity: 20, refillPerSecond: 4 },
  mutating: { capacity: 20, refillPerSecond: 3 },
};

/** The account-level bucket every ELB API version 2 call also draws from. */
export const ELBV2_ACCOUNT_BUCKET: BucketSpec = { capacity: 40, refillPerSecond: 10 };

/**
 * How long a registered target stays `initial` by default: the low end of the 180-300 s AWS
 * Support gave for an NLB target's registration (aws-load-balancer-controller#1834).
 */
export const NLB_REGISTRATION_DELAY_MS = 180_000;

/** Actions that change state. */
export const ELBV2_MUTATING_ACTIONS: ReadonlySet<Elbv2Action> = new Set([
  'CreateTargetGroup',
  'DeleteTargetGroup',
  'RegisterTargets',
  'DeregisterTargets',
  'CreateListener',
  'DeleteListener',
]);

/** Target groups per Region (Network Load Balancers User Guide, "Quotas"). */
export const MAX_TARGET_GROUPS_PER_REGION = 3_000;
/** At most this many items on one Describe page (the API's PageSize maximum). */
export const ELBV2_PAGE_SIZE = 400;
/** At most this many ARNs or names in one Describe call. */
export const ELBV2_MAX_DESCRIBE_ITEMS = 20;

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';
const ARN_PREFIX = `arn:aws:elasticloadbalancing:${REGION}:${ACCOUNT}`;
const DEFAULT_VPC_CIDR = '10.0.0.0/16';
const PROTOCOLS: ReadonlySet<string> = new Set<ListenerProtocol>(['TCP', 'UDP', 'TCP_UDP']);
/** 1–32 alphanumerics and hyphens, no hyphen first or last (CreateTargetGroup, `Name`). */
const TARGET_GROUP_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$/;

/** One call the fake answered (or refused). */
export type FakeElbv2Call = FakeApiCall<Elbv2Action>;

/** Options of the fake. */
export interface FakeElbv2Options {
  /** Epoch ms; buckets refill and listeners become visible on this clock. */
  readonly now: () => number;
  /** Uniform in [0, 1): drives `throttleRate`. Defaults to Math.random. */
  readonly random?: () => number;
  /** A new listener is missing from DescribeListeners this long (default 0). */
  readonly listenerVisibilityLagMs?: number;
  /** A registered target is `initial` this long after RegisterTargets (default 180 s). */
  readonly targetRegistrationDelayMs?: number;
  /**
   * Whether a target's health check passes once it is registered. By default a check on the
   * traffic port (a group made with no `healthCheck`) passes for a TCP or TCP_UDP target group,
   * never for a UDP one (a UDP game port answers no TCP check); a check on another port of the
   * target's address (a node's health port, the game's TCP query port) passes.
   */
  readonly healthCheck?: (
    target: IpTarget,
    group: { readonly protocol: ListenerProtocol; readonly healthCheck?: HealthCheck },
  ) => boolean;
  /** Override ELBv2's buckets (e.g. to model other callers sharing the account). */
  readonly buckets?: Partial<Record<Elbv2ActionClass, BucketSpec>>;
  /** Override the account-level bucket. */
  readonly accountBucket?: BucketSpec;
  /** Target groups per Region (default 3,000). */
  readonly maxTargetGroups?: number;
}

interface LoadBalancerRecord {
  view: NetworkLoadBalancer;
  readonly tags: Elbv2Tag[];
}

interface TargetGroupRecord {
  readonly arn: string;
  readonly name: string;
  readonly protocol: ListenerProtocol;
  readonly port: number;
  readonly vpcId: string;
  readonly healthCheck?: HealthCheck;
  readonly tags: readonly Elbv2Tag[];
  /** Registered targets by `ip:port`, with when each was registered. */
  readonly targets: Map<string, { readonly target: IpTarget; readonly registeredAt: number }>;
}

interface ListenerRecord {
  readonly view: Listener;
  readonly tags: readonly Elbv2Tag[];
  readonly createdAt: number;
}

/** The fake ELBv2 of one account and Region. */
export class FakeElbv2 implements Elbv2Api {
  readonly #now: () => number;
  readonly #lagMs: number;
  readonly #registrationDelayMs: number;
  readonly #healthCheck: NonNullable<FakeElbv2Options['healthCheck']>;
  readonly #maxTargetGroups: number;
  readonly #gate: ApiGate<Elbv2Action, Elbv2ActionClass>;
  readonly #vpcs = new Map<string, CidrBlock>();
  readonly #loadBalancers = new Map<string, LoadBalancerRecord>();
  readonly #targetGroups = new Map<string, TargetGroupRecord>();
  /** Target group ARNs by name (a name is unique in the account and Region). */
  readonly #targetGroupNames = new Map<string, string>();
  readonly #listeners = new Map<string, ListenerRecord>();
  #seq = 0;

  constructor(options: FakeElbv2Options) {
    this.#now = options.now;
    this.#lagMs = options.listenerVisibilityLagMs ?? 0;
    this.#registrationDelayMs = options.targetRegistrationDelayMs ?? NLB_REGISTRATION_DELAY_MS;
    this.#healthCheck =
      options.healthCheck ??
      ((_, group) => group.healthCheck !== undefined || group.protocol !== 'UDP');
    this.#maxTargetGroups = options.maxTargetGroups ?? MAX_TARGET_GROUPS_PER_REGION;
    this.#gate = new ApiGate(
      {
        classOf: ELBV2_ACTION_CLASS,
        buckets: { ...ELBV2_DEFAULT_BUCKETS, ...options.buckets },
        accountBucket: options.accountBucket ?? ELBV2_ACCOUNT_BUCKET,
        throttleCode: 'ThrottlingException',
        throttleMessage: 'Rate exceeded',
      },
      options.now,
      options.random ?? Math.random,
    );
  }

  // ---- steering and inspection ----------------------------------------------------------------

  /** Probability that any call is answered `ThrottlingException` before it does anything. */
  get throttleRate(): number {
    return this.#gate.throttleRate;
  }
  set throttleRate(rate: number) {
    this.#gate.throttleRate = rate;
  }

  /** Every call, in order. */
  get calls(): readonly FakeElbv2Call[] {
    return this.#gate.calls;
  }

  /** Calls per action, ok or not. */
  get counts(): ReadonlyMap<Elbv2Action, number> {
    return this.#gate.counts;
  }

  /** Calls refused with `ThrottlingException`. */
  get throttled(): number {
    return this.#gate.throttled;
  }

  /** Calls a bucket refused: over the documented rates (injected throttling not counted). */
  get overBucket(): number {
    return this.#gate.overBucket;
  }

  /** Calls of actions that change state, ok or not. */
  mutatingCalls(): number {
    return this.#gate.countOf(ELBV2_MUTATING_ACTIONS);
  }

  /** Makes the next call of `action` fail with `code` (queued; each injection fails one call). */
  failNext(action: Elbv2Action, code: string, message?: string): void {
    this.#gate.failNext(action, code, message);
  }

  /** Declares a VPC and its CIDR (a load balancer's VPC not declared gets 10.0.0.0/16). */
  addVpc(vpcId: string, cidr: string): void {
    const block = parseCidr(cidr);
    if (block?.family !== 'IPv4') throw new Error(`bad VPC CIDR ${cidr}`);
    this.#vpcs.set(vpcId, block);
  }

  /** Adds a Network Load Balancer (state `active` unless given). */
  addLoadBalancer(input: {
    readonly name: string;
    readonly vpcId: string;
    readonly state?: NetworkLoadBalancer['state'];
  }): NetworkLoadBalancer {
    if (!this.#vpcs.has(input.vpcId)) this.addVpc(input.vpcId, DEFAULT_VPC_CIDR);
    const id = this.#hex();
    const view: NetworkLoadBalancer = {
      arn: `${ARN_PREFIX}:loadbalancer/net/${input.name}/${id}`,
      dnsName: `${input.name}-${id}.elb.${REGION}.amazonaws.com`,
      vpcId: input.vpcId,
      state: input.state ?? 'active',
    };
    this.#loadBalancers.set(view.arn, { view, tags: [] });
    return view;
  }

  /** Moves a load balancer to another state (`provisioning`, `failed`, ...). */
  setLoadBalancerState(arn: string, state: NetworkLoadBalancer['state']): void {
    const record = this.#loadBalancers.get(arn);
    if (!record) throw new Error(`no load balancer ${arn}`);
    record.view = { ...record.view, state };
  }

  /**
   * Deletes a load balancer out of band (someone else's DeleteLoadBalancer): its listeners go
   * with it, its target groups stay (ELBv2 API Reference, "DeleteLoadBalancer").
   */
  deleteLoadBalancer(arn: string): void {
    this.#loadBalancers.delete(arn);
    for (const [listenerArn, listener] of this.#listeners) {
      if (listener.view.loadBalancerArn === arn) this.#listeners.delete(listenerArn);
    }
  }

  /** Every listener of a load balancer, visible or not yet, in creation order. */
  listeners(loadBalancerArn: string): readonly Listener[] {
    return [...this.#listeners.values()]
      .filter((l) => l.view.loadBalancerArn === loadBalancerArn)
      .map((l) => l.view);
  }

  /** Every target group, in creation order. */
  targetGroups(): readonly TargetGroup[] {
    return [...this.#targetGroups.values()].map((tg) => this.#targetGroupView(tg));
  }

  /** The registered targets of a target group (empty for one unknown). */
  targets(targetGroupArn: string): readonly IpTarget[] {
    const registered = this.#targetGroups.get(targetGroupArn)?.targets.values() ?? [];
    return [...registered].map((r) => r.target);
  }

  /** Each registered target of a target group and its state now (empty for one unknown). */
  targetHealth(
    targetGroupArn: string,
  ): readonly { readonly target: IpTarget; readonly state: TargetHealthState }[] {
    const group = this.#targetGroups.get(targetGroupArn);
    if (!group) return [];
    const since = this.#now() - this.#registrationDelayMs;
    return [...group.targets.values()].map(({ target, registeredAt }) => ({
      target,
      state:
        registeredAt > since
          ? 'initial'
          : this.#healthCheck(target, group)
            ? 'healthy'
            : 'unhealthy',
    }));
  }

  /**
   * The targets that receive traffic now: the healthy ones, or, when every registered target is
   * unhealthy, all of them (the load balancer fails open); never one still `initial`.
   */
  servingTargets(targetGroupArn: string): readonly IpTarget[] {
    const health = this.targetHealth(targetGroupArn);
    const healthy = health.filter((t) => t.state === 'healthy');
    const failedOpen =
      health.length > 0 && health.every((t) => t.state === 'unhealthy') ? health : [];
    return (healthy.length > 0 ? healthy : failedOpen).map((t) => t.target);
  }

  /** The tags of a listener or target group, as created (undefined for one unknown). */
  tagsOf(arn: string): readonly Elbv2Tag[] | undefined {
    return (
      this.#listeners.get(arn)?.tags ??
      this.#targetGroups.get(arn)?.tags ??
      this.#loadBalancers.get(arn)?.tags
    );
  }

  // ---- Elbv2Api -------------------------------------------------------------------------------

  async describeLoadBalancers(arns: readonly string[]): Promise<readonly NetworkLoadBalancer[]> {
    const action = 'DescribeLoadBalancers';
    this.#gate.enter(action);
    this.#checkCount(action, 'LoadBalancerArns', arns.length);
    const found: NetworkLoadBalancer[] = [];
    for (const arn of arns) found.push(this.#loadBalancer(action, arn).view);
    return this.#gate.ok(action, found);
  }

  async describeListeners(loadBalancerArn: string, marker?: string): Promise<Elbv2Page<Listener>> {
    const action = 'DescribeListeners';
    this.#gate.enter(action);
    this.#loadBalancer(action, loadBalancerArn);
    const visibleFrom = this.#now() - this.#lagMs;
    const visible = [...this.#listeners.values()]
      .filter((l) => l.view.loadBalancerArn === loadBalancerArn && l.createdAt <= visibleFrom)
      .map((l) => l.view);
    return this.#gate.ok(action, this.#page(action, visible, marker));
  }

  async describeTargetGroups(
    query: { readonly names?: readonly string[] },
    marker?: string,
  ): Promise<Elbv2Page<TargetGroup>> {
    const action = 'DescribeTargetGroups';
    this.#gate.enter(action);
    let groups = [...this.#targetGroups.values()];
    if (query.names !== undefined) {
      this.#checkCount(action, 'Names', query.names.length);
      groups = query.names.map(
        (name) =>
          this.#targetGroupNamed(name) ??
          this.#gate.fail(action, 'TargetGroupNotFound', 'One or more target groups not found'),
      );
    }
    const views = groups.map((tg) => this.#targetGroupView(tg));
    return this.#gate.ok(action, this.#page(action, views, marker));
  }

  async describeTags(arns: readonly string[]): Promise<ReadonlyMap<string, readonly Elbv2Tag[]>> {
    const action = 'DescribeTags';
    this.#gate.enter(action);
    this.#checkCount(action, 'ResourceArns', arns.length);
    const tags = new Map<string, readonly Elbv2Tag[]>();
    for (const arn of arns) {
      const found = this.tagsOf(arn);
      if (found === undefined) this.#notFound(action, arn);
      tags.set(arn, found);
    }
    return this.#gate.ok(action, tags);
  }

  async describeTargets(targetGroupArn: string): Promise<readonly RegisteredTarget[]> {
    const action = 'DescribeTargetHealth';
    this.#gate.enter(action);
    const group = this.#targetGroup(action, targetGroupArn);
    return this.#gate.ok(
      action,
      this.targetHealth(group.arn).map(({ target, state }) => ({ ...target, state })),
    );
  }

  async createTargetGroup(input: CreateTargetGroupInput): Promise<TargetGroup> {
    const action = 'CreateTargetGroup';
    this.#gate.enter(action);
    if (!TARGET_GROUP_NAME.test(input.name) || input.name.startsWith('internal-')) {
      this.#gate.fail(
        action,
        'ValidationError',
        `Target group name '${input.name}' must be 1-32 alphanumeric characters or hyphens, must not begin or end with a hyphen, and must not begin with 'internal-'`,
      );
    }
    this.#checkProtocol(action, input.protocol);
    this.#checkPort(action, 'Port', input.port);
    if (!this.#vpcs.has(input.vpcId)) {
      this.#gate.fail(action, 'ValidationError', `The VPC ID '${input.vpcId}' is not found`);
    }
    const existing = this.#targetGroupNamed(input.name);
    if (existing) {
      const same =
        existing.protocol === input.protocol &&
        existing.port === input.port &&
        existing.vpcId === input.vpcId &&
        sameHealthCheck(existing.healthCheck, input.healthCheck);
      if (!same) {
        this.#gate.fail(
          action,
          'DuplicateTargetGroupName',
          'A target group with the same name exists, but with different settings',
        );
      }
      return this.#gate.ok(action, this.#targetGroupView(existing));
    }
    if (this.#targetGroups.size >= this.#maxTargetGroups) {
      this.#gate.fail(
        action,
        'TooManyTargetGroups',
        'You have reached the limit on the number of target groups for your AWS account',
      );
    }
    const record: TargetGroupRecord = {
      arn: `${ARN_PREFIX}:targetgroup/${input.name}/${this.#hex()}`,
      name: input.name,
      protocol: input.protocol,
      port: input.port,
      vpcId: input.vpcId,
      ...(input.healthCheck ? { healthCheck: { ...input.healthCheck } } : {}),
      tags: [...input.tags],
      targets: new Map(),
    };
    this.#targetGroups.set(record.arn, record);
    this.#targetGroupNames.set(record.name, record.arn);
    return this.#gate.ok(action, this.#targetGroupView(record));
  }

  async deleteTargetGroup(targetGroupArn: string): Promise<void> {
    const action = 'DeleteTargetGroup';
    this.#gate.enter(action);
    const { name } = this.#targetGroup(action, targetGroupArn);
    if (this.#forwardersOf(targetGroupArn).length > 0) {
      this.#gate.fail(
        action,
        'ResourceInUse',
        `Target group '${targetGroupArn}' is currently in use by a listener or a rule`,
      );
    }
    this.#targetGroups.delete(targetGroupArn);
    this.#targetGroupNames.delete(name);
    this.#gate.ok(action, undefined);
  }

  async registerTargets(targetGroupArn: string, targets: readonly IpTarget[]): Promise<void> {
    const action = 'RegisterTargets';
    this.#gate.enter(action);
    const group = this.#targetGroup(action, targetGroupArn);
    this.#checkTargets(action, targets);
    const vpcCidr = this.#vpcs.get(group.vpcId);
    for (const target of targets) {
      const address = parseIp(target.ip);
      if (!address || !vpcCidr || !cidrContains(vpcCidr, address)) {
        this.#gate.fail(
          action,
          'InvalidTarget',
          `The IP address '${target.ip}' is not within the CIDR of VPC '${group.vpcId}'`,
        );
      }
    }
    const registeredAt = this.#now();
    for (const target of targets) {
      const key = `${target.ip}:${target.port}`;
      // Registering a registered target again changes nothing (nor its health check clock).
      if (!group.targets.has(key)) group.targets.set(key, { target, registeredAt });
    }
    this.#gate.ok(action, undefined);
  }

  /** Deregistering a target that is not registered changes nothing and succeeds. */
  async deregisterTargets(targetGroupArn: string, targets: readonly IpTarget[]): Promise<void> {
    const action = 'DeregisterTargets';
    this.#gate.enter(action);
    const group = this.#targetGroup(action, targetGroupArn);
    this.#checkTargets(action, targets);
    for (const target of targets) group.targets.delete(`${target.ip}:${target.port}`);
    this.#gate.ok(action, undefined);
  }

  async createListener(input: CreateListenerInput): Promise<Listener> {
    const action = 'CreateListener';
    this.#gate.enter(action);
    const balancer = this.#loadBalancer(action, input.loadBalancerArn);
    this.#checkProtocol(action, input.protocol);
    this.#checkPort(action, 'Port', input.port);
    const group = this.#targetGroup(action, input.targetGroupArn);
    const own = [...this.#listeners.values()].filter(
      (l) => l.view.loadBalancerArn === input.loadBalancerArn,
    );
    const onPort = own.find((l) => l.view.port === input.port);
    if (onPort) {
      const same =
        onPort.view.protocol === input.protocol &&
        onPort.view.targetGroupArn === input.targetGroupArn;
      if (!same) {
        this.#gate.fail(action, 'DuplicateListener', 'A listener with this port already exists');
      }
      return this.#gate.ok(action, onPort.view);
    }
    if (group.protocol !== input.protocol) {
      this.#gate.fail(
        action,
        'IncompatibleProtocols',
        `The listener protocol '${input.protocol}' does not match the target group protocol '${group.protocol}'`,
      );
    }
    if (group.vpcId !== balancer.view.vpcId) {
      this.#gate.fail(
        action,
        'InvalidConfigurationRequest',
        `The target group's VPC '${group.vpcId}' is not the load balancer's '${balancer.view.vpcId}'`,
      );
    }
    const elsewhere = this.#forwardersOf(group.arn).some(
      (l) => l.view.loadBalancerArn !== input.loadBalancerArn,
    );
    if (elsewhere) {
      this.#gate.fail(
        action,
        'TargetGroupAssociationLimit',
        `The target group '${group.arn}' is already associated with another load balancer`,
      );
    }
    if (own.length >= MAX_LISTENERS_PER_NLB) {
      this.#gate.fail(
        action,
        'TooManyListeners',
        `You've reached the limit on the number of listeners per load balancer (${MAX_LISTENERS_PER_NLB})`,
      );
    }
    const id = this.#hex();
    // A listener's ARN extends its load balancer's: listener/net/NAME/LB-ID/LISTENER-ID.
    const balancerPath = input.loadBalancerArn.split(':loadbalancer/')[1] ?? '';
    const view: Listener = {
      arn: `${ARN_PREFIX}:listener/${balancerPath}/${id}`,
      loadBalancerArn: input.loadBalancerArn,
      port: input.port,
      protocol: input.protocol,
      targetGroupArn: input.targetGroupArn,
    };
    this.#listeners.set(view.arn, { view, tags: [...input.tags], createdAt: this.#now() });
    return this.#gate.ok(action, view);
  }

  async deleteListener(listenerArn: string): Promise<void> {
    const action = 'DeleteListener';
    this.#gate.enter(action);
    if (!this.#listeners.delete(listenerArn)) {
      this.#gate.fail(action, 'ListenerNotFound', `Listener '${listenerArn}' not found`);
    }
    this.#gate.ok(action, undefined);
  }

  // ---- internals ------------------------------------------------------------------------------

  #loadBalancer(action: Elbv2Action, arn: string): LoadBalancerRecord {
    return (
      this.#loadBalancers.get(arn) ??
      this.#gate.fail(action, 'LoadBalancerNotFound', `Load balancer '${arn}' not found`)
    );
  }

  #targetGroup(action: Elbv2Action, arn: string): TargetGroupRecord {
    return (
      this.#targetGroups.get(arn) ??
      this.#gate.fail(action, 'TargetGroupNotFound', `Target group '${arn}' not found`)
    );
  }

  #targetGroupNamed(name: string): TargetGroupRecord | undefined {
    const arn = this.#targetGroupNames.get(name);
    return arn === undefined ? undefined : this.#targetGroups.get(arn);
  }

  /** The not-found code of an ARN's resource type. */
  #notFound(action: Elbv2Action, arn: string): never {
    if (arn.includes(':listener/')) {
      this.#gate.fail(action, 'ListenerNotFound', `Listener '${arn}' not found`);
    }
    if (arn.includes(':targetgroup/')) {
      this.#gate.fail(action, 'TargetGroupNotFound', `Target group '${arn}' not found`);
    }
    if (arn.includes(':loadbalancer/')) {
      this.#gate.fail(action, 'LoadBalancerNotFound', `Load balancer '${arn}' not found`);
    }
    this.#gate.fail(
      action,
      'ValidationError',
      `'${arn}' is not a valid load balancer resource ARN`,
    );
  }

  #forwardersOf(targetGroupArn: string): ListenerRecord[] {
    return [...this.#listeners.values()].filter((l) => l.view.targetGroupArn === targetGroupArn);
  }

  #targetGroupView(record: TargetGroupRecord): TargetGroup {
    const balancers = new Set(this.#forwardersOf(record.arn).map((l) => l.view.loadBalancerArn));
    return {
      arn: record.arn,
      name: record.name,
      protocol: record.protocol,
      port: record.port,
      vpcId: record.vpcId,
      ...(record.healthCheck ? { healthCheck: record.healthCheck } : {}),
      loadBalancerArns: [...balancers],
    };
  }

  #checkCount(action: Elbv2Action, field: string, count: number): void {
    if (count > ELBV2_MAX_DESCRIBE_ITEMS) {
      this.#gate.fail(
        action,
        'ValidationError',
        `1 validation error detected: Value at '${field}' failed to satisfy constraint: Member must have length less than or equal to ${ELBV2_MAX_DESCRIBE_ITEMS}`,
      );
    }
  }

  #checkProtocol(action: Elbv2Action, protocol: string): void {
    if (!PROTOCOLS.has(protocol)) {
      this.#gate.fail(
        action,
        'ValidationError',
        `Protocol '${protocol}' is not TCP, UDP or TCP_UDP`,
      );
    }
  }

  #checkPort(action: Elbv2Action, field: string, port: number): void {
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      this.#gate.fail(action, 'ValidationError', `${field} ${port} is not between 1 and 65535`);
    }
  }

  #checkTargets(action: Elbv2Action, targets: readonly IpTarget[]): void {
    if (targets.length === 0) {
      this.#gate.fail(action, 'ValidationError', 'Targets must name at least one target');
    }
    for (const target of targets) this.#checkPort(action, 'Target port', target.port);
  }

  /** One page from `marker` (an offset into the listing, opaque to callers). */
  #page<T>(action: Elbv2Action, items: readonly T[], marker?: string): Elbv2Page<T> {
    const start = marker === undefined ? 0 : Number(marker);
    if (!Number.isInteger(start) || start < 0 || start > items.length) {
      this.#gate.fail(action, 'ValidationError', `Invalid marker '${marker}'`);
    }
    const end = Math.min(items.length, start + ELBV2_PAGE_SIZE);
    return {
      items: items.slice(start, end),
      ...(end < items.length ? { nextMarker: String(end) } : {}),
    };
  }

  /** 16 hex digits, unique within the fake (the id part of an ELBv2 ARN). */
  #hex(): string {
    this.#seq++;
    return this.#seq.toString(16).padStart(16, '0');
  }
}

/** Whether two health checks are one setting (CreateTargetGroup's idempotence compares them). */
function sameHealthCheck(a: HealthCheck | undefined, b: HealthCheck | undefined): boolean {
  return a?.protocol === b?.protocol && a?.port === b?.port && a?.path === b?.path;
}

/**
 * The Elastic Load Balancing v2 calls berth makes for Network Load Balancer fronts, and only
 * those. Inputs and outputs are berth's own shapes, so the domain never sees an SDK type; the SDK
 * adapter, the rate-budget decorator and the test fake all implement this one interface.
 *
 * Behaviour every implementation keeps (Elastic Load Balancing API reference, "CreateListener"
 * and "CreateTargetGroup"): creating a listener or a target group with the same settings as an
 * existing one succeeds and returns the existing one, so a step repeated after a crash is safe;
 * different settings on a taken port or name fail (`DuplicateListener`, `DuplicateTargetGroupName`).
 */

/** A listener's protocol: a game port is UDP, TCP, or both on one listener. */
export type ListenerProtocol = 'TCP' | 'UDP' | 'TCP_UDP';

/** One tag, as ELBv2 keeps them. */
export interface Elbv2Tag {
  readonly key: string;
  readonly value: string;
}

/** A Network Load Balancer of the pool. */
export interface NetworkLoadBalancer {
  readonly arn: string;
  readonly dnsName: string;
  readonly vpcId: string;
  /** `active` serves; `provisioning` does not yet; `failed` never will. */
  readonly state: 'active' | 'provisioning' | 'active_impaired' | 'failed';
}

/** A target group of type `ip`: the game server's address and port are its one target. */
export interface TargetGroup {
  readonly arn: string;
  /** At most 32 characters, unique per account and Region. */
  readonly name: string;
  readonly protocol: ListenerProtocol;
  readonly port: number;
  readonly vpcId: string;
  /** Its health check, when set off the traffic port. */
  readonly healthCheck?: HealthCheck;
  /** The load balancers whose listeners forward to it (empty until a listener does). */
  readonly loadBalancerArns: readonly string[];
}

/**
 * A target group's health check, on a port of the target's address other than the traffic port:
 * a UDP game port answers no TCP or HTTP check, so a check left on the traffic port fails, and
 * a target group whose targets all fail sends traffic to all of them (Network Load Balancers User
 * Guide, "Health checks for Network Load Balancer target groups": UDP is no health check
 * protocol; "If all targets fail health checks at the same time ... the load balancer fails
 * open"). The port is a node-level health endpoint or the game's TCP query port.
 */
export interface HealthCheck {
  readonly protocol: 'TCP' | 'HTTP';
  readonly port: number;
  /** The HTTP request path (HTTP only). */
  readonly path?: string;
}

/** What `createTargetGroup` takes. */
export interface CreateTargetGroupInput {
  readonly name: string;
  readonly protocol: ListenerProtocol;
  readonly port: number;
  readonly vpcId: string;
  /** ELBv2's default (TCP on the traffic port) when absent. */
  readonly healthCheck?: HealthCheck;
  readonly tags: readonly Elbv2Tag[];
}

/** One target: an IP address and a port. */
export interface IpTarget {
  readonly ip: string;
  readonly port: number;
}

/**
 * A target's health as DescribeTargetHealth names it: `initial` while its registration completes
 * (minutes, for a Network Load Balancer), `healthy` or `unhealthy` as its check answers.
 */
export type TargetHealthState =
  | 'initial'
  | 'healthy'
  | 'unhealthy'
  | 'unused'
  | 'draining'
  | 'unavailable';

/** A registered target and its health. */
export interface RegisteredTarget extends IpTarget {
  readonly state: TargetHealthState;
}

/** A listener forwarding every packet to one target group. */
export interface Listener {
  readonly arn: string;
  readonly loadBalancerArn: string;
  readonly port: number;
  readonly protocol: ListenerProtocol;
  readonly targetGroupArn: string;
}

/** What `createListener` takes. */
export interface CreateListenerInput {
  readonly loadBalancerArn: string;
  readonly port: number;
  readonly protocol: ListenerProtocol;
  readonly targetGroupArn: string;
  readonly tags: readonly Elbv2Tag[];
}

/** One page of a listing; `nextMarker` is absent on the last page. */
export interface Elbv2Page<T> {
  readonly items: readonly T[];
  readonly nextMarker?: string;
}

/** The calls berth makes. */
export interface Elbv2Api {
  /** At most 20 ARNs a call (the API's limit); an unknown ARN fails `LoadBalancerNotFound`. */
  describeLoadBalancers(arns: readonly string[]): Promise<readonly NetworkLoadBalancer[]>;
  /** One page of a load balancer's listeners (at most 400 a page). */
  describeListeners(loadBalancerArn: string, marker?: string): Promise<Elbv2Page<Listener>>;
  /**
   * One page of target groups: those named (at most 20), or every one in the account when no
   * name is given (at most 400 a page).
   */
  describeTargetGroups(
    query: { readonly names?: readonly string[] },
    marker?: string,
  ): Promise<Elbv2Page<TargetGroup>>;
  /** Tags of at most 20 resources (listeners or target groups), by ARN. */
  describeTags(arns: readonly string[]): Promise<ReadonlyMap<string, readonly Elbv2Tag[]>>;
  /** The registered targets of a target group, with their health. */
  describeTargets(targetGroupArn: string): Promise<readonly RegisteredTarget[]>;
  createTargetGroup(input: CreateTargetGroupInput): Promise<TargetGroup>;
  /** Fails `ResourceInUse` while a listener forwards to it; `TargetGroupNotFound` when gone. */
  deleteTargetGroup(targetGroupArn: string): Promise<void>;
  registerTargets(targetGroupArn: string, targets: readonly IpTarget[]): Promise<void>;
  deregisterTargets(targetGroupArn: string, targets: readonly IpTarget[]): Promise<void>;
  /**
   * Fails `TooManyListeners` past the load balancer's 50, `DuplicateListener` for a port taken
   * with other settings, `TargetGroupAssociationLimit` for a target group another load balancer
   * already uses.
   */
  createListener(input: CreateListenerInput): Promise<Listener>;
  /** Fails `ListenerNotFound` when gone. */
  deleteListener(listenerArn: string): Promise<void>;
}

/** The action names, as the API and the budget know them. */
export const ELBV2_ACTIONS = {
  describeLoadBalancers: 'DescribeLoadBalancers',
  describeListeners: 'DescribeListeners',
  describeTargetGroups: 'DescribeTargetGroups',
  describeTags: 'DescribeTags',
  describeTargets: 'DescribeTargetHealth',
  createTargetGroup: 'CreateTargetGroup',
  deleteTargetGroup: 'DeleteTargetGroup',
  registerTargets: 'RegisterTargets',
  deregisterTargets: 'DeregisterTargets',
  createListener: 'CreateListener',
  deleteListener: 'DeleteListener',
} as const satisfies Record<keyof Elbv2Api, string>;

/** One of the ELBv2 actions berth calls. */
export type Elbv2Action = (typeof ELBV2_ACTIONS)[keyof typeof ELBV2_ACTIONS];

/** At most this many listeners on one Network Load Balancer; AWS does not raise it. */
export const MAX_LISTENERS_PER_NLB = 50;

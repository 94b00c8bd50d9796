/**
 * The `Elbv2Api` adapter over `@aws-sdk/client-elastic-load-balancing-v2`: SDK shapes in,
 * berth's shapes out. It neither retries nor rate-limits (wrap it in `BudgetedElbv2Api`); build
 * the client with `elbv2Client()` so the SDK's own retries do not spend the budget behind berth's
 * back. SDK errors pass through: `shared/aws/error-codes.ts` classifies them.
 */
import {
  CreateListenerCommand,
  CreateTargetGroupCommand,
  DeleteListenerCommand,
  DeleteTargetGroupCommand,
  DeregisterTargetsCommand,
  DescribeListenersCommand,
  DescribeLoadBalancersCommand,
  DescribeTagsCommand,
  DescribeTargetGroupsCommand,
  DescribeTargetHealthCommand,
  ElasticLoadBalancingV2Client,
  RegisterTargetsCommand,
  type Listener as SdkListener,
  type TargetGroup as SdkTargetGroup,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import type {
  CreateListenerInput,
  CreateTargetGroupInput,
  Elbv2Api,
  Elbv2Page,
  Elbv2Tag,
  HealthCheck,
  IpTarget,
  Listener,
  ListenerProtocol,
  NetworkLoadBalancer,
  RegisteredTarget,
  TargetGroup,
  TargetHealthState,
} from './elbv2.js';

/** Listing page size: ELBv2's maximum (Elastic Load Balancing API Reference, "PageSize"). */
const PAGE_SIZE = 400;

const PROTOCOLS: ReadonlySet<string> = new Set<ListenerProtocol>(['TCP', 'UDP', 'TCP_UDP']);
const LOAD_BALANCER_STATES: ReadonlySet<string> = new Set<NetworkLoadBalancer['state']>([
  'active',
  'provisioning',
  'active_impaired',
  'failed',
]);

/**
 * An ELBv2 client for berth: one SDK attempt per call, because `BudgetedElbv2Api` retries
 * throttling itself, paying each attempt from the shared budget.
 */
export function elbv2Client(region?: string): ElasticLoadBalancingV2Client {
  return new ElasticLoadBalancingV2Client({ ...(region ? { region } : {}), maxAttempts: 1 });
}

/** `Elbv2Api` over the AWS SDK. */
export class SdkElbv2Api implements Elbv2Api {
  readonly #client: ElasticLoadBalancingV2Client;

  constructor(client: ElasticLoadBalancingV2Client) {
    this.#client = client;
  }

  async describeLoadBalancers(arns: readonly string[]): Promise<readonly NetworkLoadBalancer[]> {
    // No ARN would list every load balancer of the account, not none.
    if (arns.length === 0) return [];
    const out = await this.#client.send(
      new DescribeLoadBalancersCommand({ LoadBalancerArns: [...arns] }),
    );
    return (out.LoadBalancers ?? []).map((lb) => {
      const state = String(lb.State?.Code ?? 'provisioning');
      return {
        arn: lb.LoadBalancerArn ?? '',
        dnsName: lb.DNSName ?? '',
        vpcId: lb.VpcId ?? '',
        state: (LOAD_BALANCER_STATES.has(state)
          ? state
          : 'provisioning') as NetworkLoadBalancer['state'],
      };
    });
  }

  async describeListeners(loadBalancerArn: string, marker?: string): Promise<Elbv2Page<Listener>> {
    const out = await this.#client.send(
      new DescribeListenersCommand({
        LoadBalancerArn: loadBalancerArn,
        PageSize: PAGE_SIZE,
        ...(marker ? { Marker: marker } : {}),
      }),
    );
    return page((out.Listeners ?? []).flatMap(toListener), out.NextMarker);
  }

  async describeTargetGroups(
    query: { readonly names?: readonly string[] },
    marker?: string,
  ): Promise<Elbv2Page<TargetGroup>> {
    const out = await this.#client.send(
      new DescribeTargetGroupsCommand({
        ...(query.names ? { Names: [...query.names] } : {}),
        PageSize: PAGE_SIZE,
        ...(marker ? { Marker: marker } : {}),
      }),
    );
    return page((out.TargetGroups ?? []).flatMap(toTargetGroup), out.NextMarker);
  }

  async describeTags(arns: readonly string[]): Promise<ReadonlyMap<string, readonly Elbv2Tag[]>> {
    if (arns.length === 0) return new Map();
    const out = await this.#client.send(new DescribeTagsCommand({ ResourceArns: [...arns] }));
    return new Map(
      (out.TagDescriptions ?? []).map((description) => [
        description.ResourceArn ?? '',
        (description.Tags ?? []).map((tag) => ({ key: tag.Key ?? '', value: tag.Value ?? '' })),
      ]),
    );
  }

  async describeTargets(targetGroupArn: string): Promise<readonly RegisteredTarget[]> {
    const out = await this.#client.send(
      new DescribeTargetHealthCommand({ TargetGroupArn: targetGroupArn }),
    );
    return (out.TargetHealthDescriptions ?? []).flatMap((description) =>
      description.Target?.Id
        ? [
            {
              ip: description.Target.Id,
              port: description.Target.Port ?? 0,
              // `unhealthy.draining` drains as `draining` does; an unknown state is not healthy.
              state: healthStateOf(description.TargetHealth?.State),
            },
          ]
        : [],
    );
  }

  async createTargetGroup(input: CreateTargetGroupInput): Promise<TargetGroup> {
    // Only settings berth always sends the same way: ELBv2 answers the existing group for a
    // repeated create only when every setting matches ("CreateTargetGroup").
    const out = await this.#client.send(
      new CreateTargetGroupCommand({
        Name: input.name,
        Protocol: input.protocol,
        Port: input.port,
        VpcId: input.vpcId,
        TargetType: 'ip',
        ...(input.healthCheck
          ? {
              HealthCheckEnabled: true,
              HealthCheckProtocol: input.healthCheck.protocol,
              HealthCheckPort: String(input.healthCheck.port),
              ...(input.healthCheck.path ? { HealthCheckPath: input.healthCheck.path } : {}),
            }
          : {}),
        Tags: toSdkTags(input.tags),
      }),
    );
    const created = out.TargetGroups?.[0];
    const group = created ? toTargetGroup(created)[0] : undefined;
    if (!group) {
      throw new Error(`CreateTargetGroup ${input.name} returned no ${input.protocol} group`);
    }
    return group;
  }

  async deleteTargetGroup(targetGroupArn: string): Promise<void> {
    await this.#client.send(new DeleteTargetGroupCommand({ TargetGroupArn: targetGroupArn }));
  }

  async registerTargets(targetGroupArn: string, targets: readonly IpTarget[]): Promise<void> {
    await this.#client.send(
      new RegisterTargetsCommand({
        TargetGroupArn: targetGroupArn,
        Targets: toSdkTargets(targets),
      }),
    );
  }

  async deregisterTargets(targetGroupArn: string, targets: readonly IpTarget[]): Promise<void> {
    await this.#client.send(
      new DeregisterTargetsCommand({
        TargetGroupArn: targetGroupArn,
        Targets: toSdkTargets(targets),
      }),
    );
  }

  async createListener(input: CreateListenerInput): Promise<Listener> {
    const out = await this.#client.send(
      new CreateListenerCommand({
        LoadBalancerArn: input.loadBalancerArn,
        Port: input.port,
        Protocol: input.protocol,
        DefaultActions: [{ Type: 'forward', TargetGroupArn: input.targetGroupArn }],
        Tags: toSdkTags(input.tags),
      }),
    );
    const created = out.Listeners?.[0];
    const listener = created ? toListener(created)[0] : undefined;
    if (!listener) {
      throw new Error(`CreateListener on port ${input.port} returned no forwarding listener`);
    }
    return listener;
  }

  async deleteListener(listenerArn: string): Promise<void> {
    await this.#client.send(new DeleteListenerCommand({ ListenerArn: listenerArn }));
  }
}

function page<T>(items: readonly T[], nextMarker: string | undefined): Elbv2Page<T> {
  return { items, ...(nextMarker ? { nextMarker } : {}) };
}

function toSdkTags(tags: readonly Elbv2Tag[]): { Key: string; Value: string }[] {
  return tags.map((tag) => ({ Key: tag.key, Value: tag.value }));
}

function toSdkTargets(targets: readonly IpTarget[]): { Id: string; Port: number }[] {
  return targets.map((target) => ({ Id: target.ip, Port: target.port }));
}

/**
 * A listener as berth knows one, or none: a listener of another protocol (TLS, QUIC) or with no
 * forward action was not made by berth, and `createListener` on its port fails
 * `DuplicateListener` whatever a listing shows.
 */
function toListener(listener: SdkListener): Listener[] {
  const protocol = String(listener.Protocol ?? '');
  const action = listener.DefaultActions?.find((a) => a.Type === 'forward');
  const targetGroupArn =
    action?.TargetGroupArn ?? action?.ForwardConfig?.TargetGroups?.[0]?.TargetGroupArn;
  if (!PROTOCOLS.has(protocol) || !targetGroupArn) return [];
  return [
    {
      arn: listener.ListenerArn ?? '',
      loadBalancerArn: listener.LoadBalancerArn ?? '',
      port: listener.Port ?? 0,
      protocol: protocol as ListenerProtocol,
      targetGroupArn,
    },
  ];
}

/**
 * A target group as berth knows one, or none: a group of another protocol (HTTP, TLS, GENEVE)
 * was not made by berth, and a name it holds fails berth's create `DuplicateTargetGroupName`.
 */
function toTargetGroup(group: SdkTargetGroup): TargetGroup[] {
  const protocol = String(group.Protocol ?? '');
  if (!PROTOCOLS.has(protocol)) return [];
  return [
    {
      arn: group.TargetGroupArn ?? '',
      name: group.TargetGroupName ?? '',
      protocol: protocol as ListenerProtocol,
      port: group.Port ?? 0,
      vpcId: group.VpcId ?? '',
      ...healthCheckOf(group),
      loadBalancerArns: group.LoadBalancerArns ?? [],
    },
  ];
}

/** The group's health check when it is off the traffic port (the only kind berth sets). */
function healthCheckOf(group: SdkTargetGroup): { healthCheck?: HealthCheck } {
  const port = Number(group.HealthCheckPort);
  const protocol = group.HealthCheckProtocol;
  if (!Number.isInteger(port) || (protocol !== 'TCP' && protocol !== 'HTTP')) return {};
  return {
    healthCheck: {
      protocol,
      port,
      ...(protocol === 'HTTP' && group.HealthCheckPath ? { path: group.HealthCheckPath } : {}),
    },
  };
}

const HEALTH_STATES: ReadonlySet<string> = new Set<TargetHealthState>([
  'initial',
  'healthy',
  'unhealthy',
  'unused',
  'draining',
  'unavailable',
]);

/** A target's state in berth's words. */
function healthStateOf(state: string | undefined): TargetHealthState {
  if (state === 'unhealthy.draining') return 'draining';
  return state !== undefined && HEALTH_STATES.has(state)
    ? (state as TargetHealthState)
    : 'unavailable';
}

/**
 * The AWS permissions of the fronts function: the ELBv2 calls of `Elbv2Api`
 * (shared/fronts/elbv2.ts) on the configured pool of Network Load Balancers, and the Global
 * Accelerator calls of `CustomRoutingApi` (shared/fronts/accelerator.ts) on the configured
 * custom routing accelerator, each scoped as far as the service's authorisation model allows
 * (Service Authorization Reference, "Actions, resources, and condition keys for AWS Elastic Load
 * Balancing V2" and "… for AWS Global Accelerator"). Where a resource cannot be narrowed the
 * statement says why, and the role acknowledges exactly that finding for cdk-nag.
 */
import { Fn, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { type PermissionSet, wildcardFinding } from './permissions.js';

/** The prefix of every target group name berth creates (`berth-<hash>`, at most 32 characters). */
export const TARGET_GROUP_PREFIX = 'berth-';

/** What the fronts function works on, from every cluster's config. */
export interface FrontsResources {
  /** The configured NLB ARNs (`…:loadbalancer/net/NAME/ID`). */
  readonly loadBalancerArns: readonly string[];
  /** The custom routing endpoint group ARNs (a token where the stack creates the accelerator). */
  readonly endpointGroupArns: readonly string[];
}

/** `arn:…:elasticloadbalancing:REGION:ACCOUNT:` of an NLB ARN. */
function elbv2Prefix(loadBalancerArn: string): string {
  return loadBalancerArn.slice(0, loadBalancerArn.indexOf(':loadbalancer/') + 1);
}

/** The listeners of one NLB: `…:listener/net/NAME/ID/*` (ELBv2 ARNs name the listener under its load balancer). */
export function listenersOf(loadBalancerArn: string): string {
  return `${loadBalancerArn.replace(':loadbalancer/net/', ':listener/net/')}/*`;
}

/**
 * The accelerator of an endpoint group ARN (`…:accelerator/ID/listener/ID/endpoint-group/ID`):
 * Global Accelerator ARNs nest each resource under its accelerator.
 */
export function acceleratorOf(endpointGroupArn: string): string {
  if (!Token.isUnresolved(endpointGroupArn)) {
    return endpointGroupArn.slice(0, endpointGroupArn.indexOf('/listener/'));
  }
  return Fn.select(0, Fn.split('/listener/', endpointGroupArn));
}

/** The ELBv2 reads of Describe* and the reason for their `*`. */
const DESCRIBE_REASON = 'ELBv2 Describe* actions support no resource-level permissions.';

/**
 * What admission reads of the pool at a pod's CREATE, to hand out a listener address: the load
 * balancers' DNS names and the listener ports others hold on them. Reads only.
 */
export function poolReadPermissions(): PermissionSet {
  return {
    statements: [
      new iam.PolicyStatement({
        sid: 'ReadLoadBalancerPool',
        // ELBv2 Describe* actions support no resource-level permissions: `*` is the only resource.
        actions: [
          'elasticloadbalancing:DescribeLoadBalancers',
          'elasticloadbalancing:DescribeListeners',
        ],
        resources: ['*'],
      }),
    ],
    acknowledgements: [{ id: wildcardFinding('*'), reason: DESCRIBE_REASON }],
  };
}

/** ELBv2 and Global Accelerator statements for the fronts function. */
export function frontsPermissions(resources: FrontsResources): PermissionSet {
  const statements: iam.PolicyStatement[] = [];
  const acknowledgements: { id: string; reason: string }[] = [];
  const { loadBalancerArns, endpointGroupArns } = resources;
  if (loadBalancerArns.length > 0) {
    statements.push(
      new iam.PolicyStatement({
        sid: 'DescribeLoadBalancing',
        // ELBv2 Describe* actions support no resource-level permissions: `*` is the only resource.
        actions: [
          'elasticloadbalancing:DescribeLoadBalancers',
          'elasticloadbalancing:DescribeListeners',
          'elasticloadbalancing:DescribeTargetGroups',
          'elasticloadbalancing:DescribeTags',
          'elasticloadbalancing:DescribeTargetHealth',
        ],
        resources: ['*'],
      }),
      new iam.PolicyStatement({
        sid: 'ListenOnPool',
        // CreateListener is authorised on the load balancer (and, listed too, the new listener
        // under it): only the pool's.
        actions: ['elasticloadbalancing:CreateListener'],
        resources: [...loadBalancerArns, ...loadBalancerArns.map(listenersOf)],
      }),
      new iam.PolicyStatement({
        sid: 'ManagePoolListeners',
        // A listener's ARN holds an id ELBv2 generates; the load balancer part pins it to the
        // pool. AddTags: the berth tags CreateListener sets on the new listener.
        actions: ['elasticloadbalancing:DeleteListener', 'elasticloadbalancing:AddTags'],
        resources: loadBalancerArns.map(listenersOf),
      }),
      new iam.PolicyStatement({
        sid: 'ManageBerthTargetGroups',
        // A target group's ARN holds its name and a generated id: berth's are named berth-<hash>,
        // in the Regions and accounts of the pool's load balancers (a target group must be in
        // its load balancer's Region).
        actions: [
          'elasticloadbalancing:CreateTargetGroup',
          'elasticloadbalancing:DeleteTargetGroup',
          'elasticloadbalancing:RegisterTargets',
          'elasticloadbalancing:DeregisterTargets',
          'elasticloadbalancing:AddTags',
        ],
        resources: [
          ...new Set(
            loadBalancerArns.map(
              (arn) => `${elbv2Prefix(arn)}targetgroup/${TARGET_GROUP_PREFIX}*/*`,
            ),
          ),
        ],
      }),
    );
    acknowledgements.push(
      { id: wildcardFinding('*'), reason: DESCRIBE_REASON },
      ...loadBalancerArns.map((arn) => ({
        id: wildcardFinding(listenersOf(arn)),
        reason:
          'The listeners of one configured load balancer: the wildcard is the listener id ELBv2 generates.',
      })),
      ...[...new Set(loadBalancerArns.map(elbv2Prefix))].map((prefix) => ({
        id: wildcardFinding(`${prefix}targetgroup/${TARGET_GROUP_PREFIX}*/*`),
        reason:
          'Target groups named berth-<hash> (the hash of the game server port they front) with the id ELBv2 generates; no other target group matches.',
      })),
    );
  }
  if (endpointGroupArns.length > 0) {
    const accelerators = endpointGroupArns.map(acceleratorOf);
    statements.push(
      new iam.PolicyStatement({
        sid: 'ReadAccelerator',
        // The accelerator's addresses and its one listing of port mappings per subnet.
        actions: [
          'globalaccelerator:DescribeCustomRoutingAccelerator',
          'globalaccelerator:ListCustomRoutingPortMappings',
        ],
        resources: accelerators,
      }),
      new iam.PolicyStatement({
        sid: 'RouteDestinations',
        // Allow and deny name the endpoint group; the accelerator is listed too, so the grant
        // holds whichever of the two the service authorises on, and reaches no other accelerator.
        actions: [
          'globalaccelerator:AllowCustomRoutingTraffic',
          'globalaccelerator:DenyCustomRoutingTraffic',
          'globalaccelerator:DescribeCustomRoutingEndpointGroup',
        ],
        resources: [...accelerators, ...endpointGroupArns],
      }),
      new iam.PolicyStatement({
        sid: 'MappingsByDestination',
        // The request names a subnet and an address, no accelerator: it supports no
        // resource-level permission, and only reads mappings.
        actions: ['globalaccelerator:ListCustomRoutingPortMappingsByDestination'],
        resources: ['*'],
      }),
    );
    acknowledgements.push({
      id: wildcardFinding('*'),
      reason:
        'ListCustomRoutingPortMappingsByDestination (read only) names a subnet and an address, no accelerator: it supports no resource-level permission.',
    });
  }
  return { statements, acknowledgements };
}

/**
 * The AWS permissions of the ENI and scale functions, as data: the calls of `Ec2Network`
 * (shared/ec2/network.ts) and of the node pool adapters (shared/node-pool/), each scoped as far
 * as the service's authorisation model allows. Where a resource cannot be narrowed (EC2 and
 * Auto Scaling Describe calls, the subnet an ENI is created in) the statement says why, and the
 * stack acknowledges exactly that finding for cdk-nag.
 */
import { type Acknowledgment, ArnFormat, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct, IConstruct } from 'constructs';
import type { NodePoolConfig } from '../../shared/config/schema.js';
import { BERTH_TAGS } from '../../shared/ec2/network.js';

/** Policy statements and the cdk-nag findings they knowingly raise, each with its reason. */
export interface PermissionSet {
  readonly statements: readonly iam.PolicyStatement[];
  readonly acknowledgements: readonly Acknowledgment[];
}

/** Adds a permission set to a role and acknowledges its findings on that role only. */
export function grantPermissions(role: iam.Role, permissions: PermissionSet): void {
  for (const statement of permissions.statements) role.addToPrincipalPolicy(statement);
  if (permissions.acknowledgements.length > 0)
    Validations.of(role).acknowledge(...permissions.acknowledgements);
}

/**
 * Adds a permission set to a role as a policy of its own, made in `scope`: one cluster's
 * statements in a stack of several, whose statement ids would collide in the role's default
 * policy, and which leave with their cluster.
 */
export function attachPermissions(
  scope: Construct,
  id: string,
  role: iam.Role,
  permissions: PermissionSet,
): void {
  if (permissions.statements.length === 0) return;
  const policy = new iam.Policy(scope, id, { statements: [...permissions.statements] });
  policy.attachToRole(role);
  if (permissions.acknowledgements.length > 0)
    Validations.of(policy).acknowledge(...permissions.acknowledgements);
}

/** The id of an AwsSolutions-IAM5 finding for one wildcard resource, as cdk-nag prints it. */
export function wildcardFinding(resource: string): string {
  return `AwsSolutions::AwsSolutions-IAM5[Resource::${resource}]`;
}

/**
 * The AwsSolutions-IAM5 finding of an invoke grant CDK makes on a function and its versions
 * (`ARN:*`), as cdk-nag prints it.
 */
export function invokeVersionsFinding(fn: IConstruct): string {
  const resource = fn.node.defaultChild;
  if (!(resource instanceof lambda.CfnFunction)) throw new Error('not a Lambda function');
  return wildcardFinding(`<${Stack.of(fn).getLogicalId(resource)}.Arn>:*`);
}

/** A resource ARN as cdk-nag flattens the `formatArn` tokens. */
function flattenedArn(service: string, resource: string): string {
  return `arn:<AWS::Partition>:${service}:<AWS::Region>:<AWS::AccountId>:${resource}`;
}

/** The tag keys berth may set on an ENI it already owns (never the cluster tag: that is ownership). */
const RETAGGABLE_KEYS = [BERTH_TAGS.node, BERTH_TAGS.instance, BERTH_TAGS.createdAt];

/**
 * Statements for the ENI pool pass and the ENI IP API on berth-tagged interfaces of the
 * stack's clusters (a condition on a list of values matches any of them).
 */
export function eniNetworkPermissions(stack: Stack, clusters: readonly string[]): PermissionSet {
  const arn = (resource: string) =>
    stack.formatArn({ service: 'ec2', resource, resourceName: '*' });
  const networkInterfaces = arn('network-interface');
  const cluster = clusters.length === 1 ? (clusters[0] as string) : [...clusters];
  const ownedByCluster = { StringEquals: { [`aws:ResourceTag/${BERTH_TAGS.cluster}`]: cluster } };
  const statements = [
    new iam.PolicyStatement({
      sid: 'DescribeNetwork',
      // EC2 Describe* calls support no resource-level permissions: `*` is the only resource.
      actions: [
        'ec2:DescribeInstances',
        'ec2:DescribeInstanceTypes',
        'ec2:DescribeSubnets',
        'ec2:DescribeNetworkInterfaces',
      ],
      resources: ['*'],
    }),
    new iam.PolicyStatement({
      sid: 'CreateClusterTaggedEni',
      // An ENI can only be created carrying this cluster's tag, so every later call below
      // (conditioned on that tag) reaches berth's own interfaces and nobody else's.
      actions: ['ec2:CreateNetworkInterface'],
      resources: [networkInterfaces],
      conditions: { StringEquals: { [`aws:RequestTag/${BERTH_TAGS.cluster}`]: cluster } },
    }),
    new iam.PolicyStatement({
      sid: 'CreateEniInSubnet',
      // The subnet and security groups of a new ENI are the node's own, found at run time.
      actions: ['ec2:CreateNetworkInterface'],
      resources: [arn('subnet'), arn('security-group')],
    }),
    new iam.PolicyStatement({
      sid: 'TagOnCreate',
      // Tags applied atomically by CreateNetworkInterface's TagSpecifications.
      actions: ['ec2:CreateTags'],
      resources: [networkInterfaces],
      conditions: { StringEquals: { 'ec2:CreateAction': 'CreateNetworkInterface' } },
    }),
    new iam.PolicyStatement({
      sid: 'RetagOwnEni',
      // The leak sweep stamps a created-at tag on an own ENI that lacks one.
      actions: ['ec2:CreateTags'],
      resources: [networkInterfaces],
      conditions: {
        ...ownedByCluster,
        'ForAllValues:StringEquals': { 'aws:TagKeys': RETAGGABLE_KEYS },
      },
    }),
    new iam.PolicyStatement({
      sid: 'ManageOwnEni',
      actions: [
        'ec2:AttachNetworkInterface',
        'ec2:DetachNetworkInterface',
        'ec2:DeleteNetworkInterface',
        'ec2:ModifyNetworkInterfaceAttribute',
        'ec2:AssignPrivateIpAddresses',
        'ec2:UnassignPrivateIpAddresses',
      ],
      resources: [networkInterfaces],
      conditions: ownedByCluster,
    }),
    new iam.PolicyStatement({
      sid: 'AttachToNode',
      // The instance side of an attachment. Node instances carry no tag every node provisioner
      // sets (managed node groups, Karpenter and self-managed groups differ), so this stays
      // unconditioned; the ENI side above is what limits the call to berth's interfaces.
      actions: ['ec2:AttachNetworkInterface', 'ec2:DetachNetworkInterface'],
      resources: [arn('instance')],
    }),
  ];
  return {
    statements,
    acknowledgements: [
      {
        id: wildcardFinding('*'),
        reason: 'EC2 Describe* actions support no resource-level permissions.',
      },
      {
        id: wildcardFinding(flattenedArn('ec2', 'network-interface/*')),
        reason: `Every mutating ENI action is conditioned on the ${BERTH_TAGS.cluster} tag (aws:ResourceTag, or aws:RequestTag / ec2:CreateAction on create): only the stack's clusters' berth ENIs match.`,
      },
      {
        id: wildcardFinding(flattenedArn('ec2', 'subnet/*')),
        reason:
          "A new ENI goes into its node's subnet, known only at run time; the ENI itself must carry the cluster tag.",
      },
      {
        id: wildcardFinding(flattenedArn('ec2', 'security-group/*')),
        reason:
          "A new ENI gets its node's security groups, known only at run time; the ENI itself must carry the cluster tag.",
      },
      {
        id: wildcardFinding(flattenedArn('ec2', 'instance/*')),
        reason:
          'The instance side of attach/detach: nodes share no tag across provisioners; the ENI side is tag-conditioned.',
      },
    ],
  };
}

function autoScalingGroupArn(stack: Stack, groupName: string): string {
  // arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<uuid>:autoScalingGroupName/<name>
  return stack.formatArn({
    service: 'autoscaling',
    resource: 'autoScalingGroup',
    resourceName: `*:autoScalingGroupName/${groupName}`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}

function describeAutoScaling(): iam.PolicyStatement {
  return new iam.PolicyStatement({
    sid: 'DescribeAutoScaling',
    // Auto Scaling Describe calls support no resource-level permissions.
    actions: ['autoscaling:DescribeAutoScalingGroups', 'autoscaling:DescribeAutoScalingInstances'],
    resources: ['*'],
  });
}

/**
 * Statements for the scale pass's node pool: an Auto Scaling group by name, an EKS managed node
 * group (and the Auto Scaling groups EKS made for it, found by the tags EKS puts on them), or
 * nothing at all for `none` (Kubernetes only), `karpenter` and `auto-mode` (deleting the Node
 * object is Karpenter's cue to terminate the instance, EKS Auto Mode's Karpenter included).
 */
export function nodePoolPermissions(
  stack: Stack,
  cluster: string,
  pool: NodePoolConfig,
): PermissionSet {
  const describe = {
    id: wildcardFinding('*'),
    reason: 'Auto Scaling Describe* actions support no resource-level permissions.',
  };
  // An Auto Scaling group ARN holds a generated UUID before the name: `*` stands for it.
  const group = (name: string, reason: string) => ({
    id: wildcardFinding(
      flattenedArn('autoscaling', `autoScalingGroup:*:autoScalingGroupName/${name}`),
    ),
    reason,
  });
  switch (pool.type) {
    case 'none':
    case 'kubernetes':
    case 'karpenter':
    case 'auto-mode':
      return { statements: [], acknowledgements: [] };
    case 'asg':
      return {
        statements: [
          describeAutoScaling(),
          new iam.PolicyStatement({
            sid: 'ScaleAutoScalingGroup',
            // Grow by desired capacity; remove one chosen, drained node (decrementing desired).
            actions: [
              'autoscaling:SetDesiredCapacity',
              'autoscaling:TerminateInstanceInAutoScalingGroup',
            ],
            resources: [autoScalingGroupArn(stack, pool.name)],
          }),
        ],
        acknowledgements: [
          describe,
          group(pool.name, 'The wildcard is the group UUID in the ARN; the group name is fixed.'),
        ],
      };
    case 'eks-nodegroup':
      return {
        statements: [
          describeAutoScaling(),
          new iam.PolicyStatement({
            sid: 'ScaleNodegroup',
            // Grow through the node group's scaling config, so EKS stays the owner of its size.
            actions: ['eks:DescribeNodegroup', 'eks:UpdateNodegroupConfig'],
            resources: [
              stack.formatArn({
                service: 'eks',
                resource: 'nodegroup',
                resourceName: `${cluster}/${pool.name}/*`,
              }),
            ],
          }),
          new iam.PolicyStatement({
            sid: 'RemoveNodegroupInstance',
            // A chosen node leaves through the node group's own Auto Scaling group, whose name
            // EKS generates; the eks:* tags EKS sets on it pin the grant to this node group.
            actions: ['autoscaling:TerminateInstanceInAutoScalingGroup'],
            resources: [autoScalingGroupArn(stack, '*')],
            conditions: {
              StringEquals: {
                'autoscaling:ResourceTag/eks:cluster-name': cluster,
                'autoscaling:ResourceTag/eks:nodegroup-name': pool.name,
              },
            },
          }),
        ],
        acknowledgements: [
          describe,
          {
            id: wildcardFinding(flattenedArn('eks', `nodegroup/${cluster}/${pool.name}/*`)),
            reason:
              'The wildcard is the node group UUID in the ARN; cluster and node group names are fixed.',
          },
          group(
            '*',
            "EKS names a node group's Auto Scaling group itself; the eks:cluster-name and eks:nodegroup-name tag conditions pin the grant to this node group.",
          ),
        ],
      };
  }
}

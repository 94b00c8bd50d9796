/**
 * The stack's Global Accelerator custom routing accelerator, its listener and its one endpoint
 * group (the stack's Region, the given subnets, one destination port range, TCP and UDP), made
 * by a custom resource: CloudFormation has no custom routing types (see
 * infra/custom-routing/lifecycle.ts). A `custom_resources.Provider` runs `onEvent` and
 * `isComplete` from infra/custom-routing/handler.ts, polling until the accelerator is DEPLOYED,
 * and on delete until it is disabled and gone; `AwsCustomResource` makes one call per request
 * and cannot wait.
 */
import { join } from 'node:path';
import { CustomResource, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import type { PortRange } from '../../shared/net/port-range.js';
import type { AcceleratorProperties } from '../custom-routing/lifecycle.js';
import { BUNDLED_SOURCE, BUNDLING } from './berth-function.js';
import { invokeVersionsFinding, wildcardFinding } from './permissions.js';

/** Props of the accelerator. */
export interface CustomRoutingAcceleratorProps {
  /** The accelerator's name (the stack's). */
  readonly name: string;
  /** The public ports: they must number at least the subnets' addresses times the destination ports. */
  readonly listenerPorts: PortRange;
  /** The destination ports on every address of the subnets: the host port range kept for it. */
  readonly destinationPorts: PortRange;
  /** The endpoint subnets (the game-server nodes' subnets, in the stack's Region). */
  readonly subnetIds: readonly string[];
  /** Tags for the accelerator. */
  readonly tags?: Readonly<Record<string, string>>;
}

/** The provider's steps: `onEvent` and `isComplete`, two functions from one file. */
export const ACCELERATOR_HANDLER_ENTRY = join(
  import.meta.dirname,
  '..',
  'custom-routing',
  'handler.ts',
);

/** A custom routing accelerator made and removed by a polling custom resource. */
export class CustomRoutingAccelerator extends Construct {
  /** The accelerator's ARN. */
  readonly acceleratorArn: string;
  /** The endpoint group's ARN: the config's `fronts.accelerator.endpointGroupArn`. */
  readonly endpointGroupArn: string;
  /** The static addresses players dial, comma-separated. */
  readonly ipAddresses: string;

  constructor(scope: Construct, id: string, props: CustomRoutingAcceleratorProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // One role for both steps: each may create, change and delete what the other looks at.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `berth custom routing accelerator of stack ${props.name}`,
    });
    const accelerators = `arn:${stack.partition}:globalaccelerator::${stack.account}:accelerator/*`;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logGroup.logGroupArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'CreateAccelerator',
        // A new accelerator has no ARN yet: creation supports no resource-level permission.
        actions: ['globalaccelerator:CreateCustomRoutingAccelerator'],
        resources: ['*'],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ManageAccelerator',
        actions: [
          'globalaccelerator:TagResource',
          'globalaccelerator:DescribeCustomRoutingAccelerator',
          'globalaccelerator:UpdateCustomRoutingAccelerator',
          'globalaccelerator:DeleteCustomRoutingAccelerator',
          'globalaccelerator:ListCustomRoutingListeners',
          'globalaccelerator:CreateCustomRoutingListener',
          'globalaccelerator:UpdateCustomRoutingListener',
          'globalaccelerator:DeleteCustomRoutingListener',
          'globalaccelerator:ListCustomRoutingEndpointGroups',
          'globalaccelerator:CreateCustomRoutingEndpointGroup',
          'globalaccelerator:DeleteCustomRoutingEndpointGroup',
          'globalaccelerator:AddCustomRoutingEndpoints',
          'globalaccelerator:RemoveCustomRoutingEndpoints',
        ],
        resources: [accelerators],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadEndpointSubnets',
        // What Global Accelerator checks of a subnet endpoint as the caller (the EC2 reads of its
        // managed policy GlobalAcceleratorFullAccess); EC2 Describe* supports no resource.
        actions: ['ec2:DescribeSubnets', 'ec2:DescribeInternetGateways'],
        resources: ['*'],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'GlobalAcceleratorServiceRole',
        // The first accelerator of an account creates Global Accelerator's service-linked role.
        actions: ['iam:CreateServiceLinkedRole'],
        resources: [
          `arn:${stack.partition}:iam::${stack.account}:role/aws-service-role/globalaccelerator.amazonaws.com/AWSServiceRoleForGlobalAccelerator*`,
        ],
        conditions: { StringEquals: { 'iam:AWSServiceName': 'globalaccelerator.amazonaws.com' } },
      }),
    );
    Validations.of(role).acknowledge(
      {
        id: wildcardFinding('*'),
        reason:
          'CreateCustomRoutingAccelerator (no ARN before creation) and EC2 Describe* support no resource-level permissions.',
      },
      {
        id: wildcardFinding(
          'arn:<AWS::Partition>:globalaccelerator::<AWS::AccountId>:accelerator/*',
        ),
        reason:
          "The accelerator's id is generated at creation; the role belongs to this stack's provider only, which acts on the accelerator it created.",
      },
      {
        id: wildcardFinding(
          'arn:<AWS::Partition>:iam::<AWS::AccountId>:role/aws-service-role/globalaccelerator.amazonaws.com/AWSServiceRoleForGlobalAccelerator*',
        ),
        reason:
          "Global Accelerator's own service-linked role, conditioned on iam:AWSServiceName globalaccelerator.amazonaws.com.",
      },
    );
    const step = (stepId: string, handler: 'onEvent' | 'isComplete') =>
      new NodejsFunction(this, stepId, {
        entry: ACCELERATOR_HANDLER_ENTRY,
        handler,
        description: `berth custom routing accelerator: ${handler}`,
        runtime: lambda.Runtime.NODEJS_24_X,
        architecture: lambda.Architecture.ARM_64,
        memorySize: 256,
        timeout: Duration.minutes(1),
        role,
        logGroup,
        loggingFormat: lambda.LoggingFormat.JSON,
        ...BUNDLED_SOURCE,
        bundling: BUNDLING,
      });
    const onEventStep = step('OnEvent', 'onEvent');
    const isCompleteStep = step('IsComplete', 'isComplete');
    // The framework's own functions get roles of their own (CDK's default ones carry the managed
    // AWSLambdaBasicExecutionRole, which may write to any log group): each logs only here, and
    // CDK adds the invokes it needs. Two roles, as the framework asks, against a dependency cycle.
    const frameworkRole = (roleId: string) => {
      const frameworkRole = new iam.Role(this, roleId, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      });
      frameworkRole.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [logGroup.logGroupArn],
        }),
      );
      return frameworkRole;
    };
    const provider = new cr.Provider(this, 'Provider', {
      onEventHandler: onEventStep,
      isCompleteHandler: isCompleteStep,
      // Disabling takes minutes, and each change puts the accelerator IN_PROGRESS for a while.
      queryInterval: Duration.seconds(30),
      totalTimeout: Duration.hours(1),
      logGroup,
      frameworkOnEventRole: frameworkRole('FrameworkOnEventRole'),
      frameworkCompleteAndTimeoutRole: frameworkRole('FrameworkPollRole'),
      // Every step of a deploy's wait, in the log group: it runs only while CloudFormation creates,
      // changes or deletes the accelerator.
      disableWaiterStateMachineLogging: false,
      waiterStateMachineLogOptions: {
        destination: logGroup,
        level: sfn.LogLevel.ALL,
        includeExecutionData: true,
      },
    });
    const frameworkFunction = (name: string) =>
      provider.node.findChild(`framework-${name}`) as lambda.Function;
    // The framework roles (here) and the waiter's (in the provider) hold the invoke grants.
    Validations.of(this).acknowledge(
      ...[
        onEventStep,
        isCompleteStep,
        frameworkFunction('isComplete'),
        frameworkFunction('onTimeout'),
      ].map((fn) => ({
        id: invokeVersionsFinding(fn),
        reason:
          "CDK grants invoke on the provider's functions and their versions (ARN:*): each role invokes this provider's own functions only.",
      })),
    );
    Validations.of(provider).acknowledge(
      {
        id: wildcardFinding('*'),
        reason:
          "The waiter's log delivery (logs:CreateLogDelivery and the other CloudWatch Logs vended-delivery actions Step Functions needs) supports no resource-level permissions.",
      },
      {
        id: 'AwsSolutions::AwsSolutions-SF2',
        reason:
          "The waiter runs only while a deploy creates, changes or deletes the accelerator; every state of it is logged to the provider's log group.",
      },
    );
    const properties: AcceleratorProperties = {
      Name: props.name,
      ListenerFromPort: props.listenerPorts.base,
      ListenerToPort: props.listenerPorts.base + props.listenerPorts.size - 1,
      DestinationFromPort: props.destinationPorts.base,
      DestinationToPort: props.destinationPorts.base + props.destinationPorts.size - 1,
      EndpointGroupRegion: stack.region,
      SubnetIds: [...props.subnetIds],
      Tags: Object.entries(props.tags ?? {}).map(([Key, Value]) => ({ Key, Value })),
    };
    const resource = new CustomResource(this, 'Resource', {
      serviceToken: provider.serviceToken,
      resourceType: 'Custom::CustomRoutingAccelerator',
      properties: { ...properties },
    });
    this.acceleratorArn = resource.getAttString('AcceleratorArn');
    this.endpointGroupArn = resource.getAttString('EndpointGroupArn');
    this.ipAddresses = resource.getAttString('IpAddresses');
  }
}

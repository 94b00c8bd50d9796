/**
 * The life of the stack's Global Accelerator custom routing accelerator, as a CDK custom resource
 * provider runs it (`custom_resources.Provider`: `onEvent` once per CloudFormation request, then
 * `isComplete` every poll until it answers complete).
 *
 * CloudFormation cannot make this accelerator: AWS::GlobalAccelerator::Accelerator has no
 * accelerator type (Name, IpAddressType, IpAddresses, Enabled and Tags only, so it is always a
 * standard accelerator), and AWS::GlobalAccelerator::EndpointGroup takes endpoint ids of load
 * balancers, Elastic IPs or instances, never subnets with destination port ranges (CloudFormation
 * Template Reference, "AWS::GlobalAccelerator::Accelerator" and
 * "AWS::GlobalAccelerator::EndpointGroup"). So the custom routing API is called here.
 *
 * Every step is written to be repeated: `onEvent` only creates the accelerator (with the request
 * id as idempotency token) or disables it, so its physical id is known to CloudFormation before
 * anything else exists, and a create that fails later is rolled back by a Delete of that id;
 * `isComplete` reads the accelerator, makes the one change still missing (listener, endpoint
 * group, subnets) while it is DEPLOYED, and answers complete once nothing is missing and the
 * accelerator is DEPLOYED again. A delete disables, waits, removes endpoint groups and listeners,
 * then deletes the accelerator (Global Accelerator API reference, DeleteCustomRoutingAccelerator:
 * an accelerator must be disabled and have no listeners first).
 */
import {
  AddCustomRoutingEndpointsCommand,
  CreateCustomRoutingAcceleratorCommand,
  CreateCustomRoutingEndpointGroupCommand,
  CreateCustomRoutingListenerCommand,
  type CustomRoutingEndpointGroup,
  DeleteCustomRoutingAcceleratorCommand,
  DeleteCustomRoutingEndpointGroupCommand,
  DeleteCustomRoutingListenerCommand,
  DescribeCustomRoutingAcceleratorCommand,
  type GlobalAcceleratorClient,
  ListCustomRoutingEndpointGroupsCommand,
  ListCustomRoutingListenersCommand,
  RemoveCustomRoutingEndpointsCommand,
  UpdateCustomRoutingAcceleratorCommand,
  UpdateCustomRoutingListenerCommand,
} from '@aws-sdk/client-global-accelerator';

/**
 * Global Accelerator's control plane is in US West (Oregon) whatever the Region of the stack
 * (Global Accelerator API reference: "you must specify the US West (Oregon) Region to create,
 * update, or otherwise work with accelerators").
 */
export const GLOBAL_ACCELERATOR_REGION = 'us-west-2';

/** The custom resource's properties, as CloudFormation passes them (numbers arrive as strings). */
export interface AcceleratorProperties {
  readonly Name: string;
  readonly ListenerFromPort: string | number;
  readonly ListenerToPort: string | number;
  readonly DestinationFromPort: string | number;
  readonly DestinationToPort: string | number;
  readonly EndpointGroupRegion: string;
  readonly SubnetIds: readonly string[];
  /** Tags put on the accelerator (the only taggable custom routing resource). */
  readonly Tags?: readonly { Key: string; Value: string }[];
}

/** A provider framework request: CloudFormation's, with the physical id once there is one. */
export interface AcceleratorEvent {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly RequestId: string;
  readonly PhysicalResourceId?: string;
  readonly ResourceProperties: AcceleratorProperties;
  readonly OldResourceProperties?: AcceleratorProperties;
}

/** What the stack reads back (`Fn::GetAtt`). */
export interface AcceleratorData {
  readonly AcceleratorArn: string;
  readonly ListenerArn: string;
  readonly EndpointGroupArn: string;
  /** The static addresses players dial, comma-separated. */
  readonly IpAddresses: string;
  readonly DnsName: string;
}

/** Destinations of both transports: a game server port may be TCP, UDP or both. */
const PROTOCOLS = ['TCP', 'UDP'] as const;

const number = (value: string | number) => Number(value);

/** Whether the accelerator behind `arn` must be a new one: the destination range cannot change in place. */
function replaced(props: AcceleratorProperties, old: AcceleratorProperties | undefined): boolean {
  return (
    old === undefined ||
    number(old.DestinationFromPort) !== number(props.DestinationFromPort) ||
    number(old.DestinationToPort) !== number(props.DestinationToPort)
  );
}

async function createAccelerator(
  client: GlobalAcceleratorClient,
  event: AcceleratorEvent,
): Promise<string> {
  const { Accelerator } = await client.send(
    new CreateCustomRoutingAcceleratorCommand({
      Name: event.ResourceProperties.Name,
      IpAddressType: 'IPV4',
      Enabled: true,
      IdempotencyToken: event.RequestId,
      Tags: event.ResourceProperties.Tags?.map(({ Key, Value }) => ({ Key, Value })),
    }),
  );
  if (!Accelerator?.AcceleratorArn) throw new Error('CreateCustomRoutingAccelerator gave no ARN');
  return Accelerator.AcceleratorArn;
}

/** A physical id this provider gave: the accelerator's ARN (a failed create has another). */
const isAcceleratorArn = (id: string | undefined): id is string =>
  id?.startsWith('arn:') === true && id.includes(':globalaccelerator::');

const notFound = (error: unknown) =>
  (error as { name?: string }).name === 'AcceleratorNotFoundException';

/** Errors that mean "not yet": the accelerator is still settling from the last change. */
const NOT_YET = new Set([
  'AcceleratorNotDisabledException',
  'AssociatedListenerFoundException',
  'AssociatedEndpointGroupFoundException',
  'ConflictException',
  'TransactionInProgressException',
]);

/** The provider's `onEvent`. */
export async function onEvent(
  client: GlobalAcceleratorClient,
  event: AcceleratorEvent,
): Promise<{ PhysicalResourceId: string }> {
  switch (event.RequestType) {
    case 'Create':
      return { PhysicalResourceId: await createAccelerator(client, event) };
    case 'Update':
      // A new destination range is a new accelerator (new addresses and mappings): CloudFormation
      // deletes the old one once the stack update succeeds.
      if (
        !isAcceleratorArn(event.PhysicalResourceId) ||
        replaced(event.ResourceProperties, event.OldResourceProperties)
      ) {
        return { PhysicalResourceId: await createAccelerator(client, event) };
      }
      return { PhysicalResourceId: event.PhysicalResourceId };
    case 'Delete':
      if (isAcceleratorArn(event.PhysicalResourceId)) {
        await disable(client, event.PhysicalResourceId);
      }
      return { PhysicalResourceId: event.PhysicalResourceId ?? event.RequestId };
  }
}

async function disable(client: GlobalAcceleratorClient, arn: string): Promise<void> {
  try {
    await client.send(
      new UpdateCustomRoutingAcceleratorCommand({ AcceleratorArn: arn, Enabled: false }),
    );
  } catch (error) {
    if (notFound(error)) return;
    if (NOT_YET.has((error as { name?: string }).name ?? '')) return;
    throw error;
  }
}

/** The provider's `isComplete` for the request `onEvent` answered with `physicalId`. */
export async function isComplete(
  client: GlobalAcceleratorClient,
  event: AcceleratorEvent & { readonly PhysicalResourceId: string },
): Promise<{ IsComplete: boolean; Data?: AcceleratorData }> {
  if (event.RequestType === 'Delete') {
    return { IsComplete: await deleteStep(client, event.PhysicalResourceId) };
  }
  try {
    return await ensureStep(client, event.PhysicalResourceId, event.ResourceProperties);
  } catch (error) {
    if (NOT_YET.has((error as { name?: string }).name ?? '')) return { IsComplete: false };
    throw error;
  }
}

/** One step towards the accelerator `props` describe; complete with its data once there. */
async function ensureStep(
  client: GlobalAcceleratorClient,
  arn: string,
  props: AcceleratorProperties,
): Promise<{ IsComplete: boolean; Data?: AcceleratorData }> {
  const { Accelerator } = await client.send(
    new DescribeCustomRoutingAcceleratorCommand({ AcceleratorArn: arn }),
  );
  // Tokens per accelerator: a create repeated after a lost answer returns the same resource.
  const token = arn.slice(arn.lastIndexOf('/') + 1);
  // Each change puts the accelerator IN_PROGRESS; the next waits for DEPLOYED.
  if (Accelerator?.Status !== 'DEPLOYED') return { IsComplete: false };
  const portRange = {
    FromPort: number(props.ListenerFromPort),
    ToPort: number(props.ListenerToPort),
  };
  const { Listeners = [] } = await client.send(
    new ListCustomRoutingListenersCommand({ AcceleratorArn: arn }),
  );
  const listener = Listeners[0];
  if (!listener?.ListenerArn) {
    await client.send(
      new CreateCustomRoutingListenerCommand({
        AcceleratorArn: arn,
        PortRanges: [portRange],
        IdempotencyToken: `${token}-listener`,
      }),
    );
    return { IsComplete: false };
  }
  const ranges = listener.PortRanges ?? [];
  if (
    ranges.length !== 1 ||
    ranges[0]?.FromPort !== portRange.FromPort ||
    ranges[0]?.ToPort !== portRange.ToPort
  ) {
    await client.send(
      new UpdateCustomRoutingListenerCommand({
        ListenerArn: listener.ListenerArn,
        PortRanges: [portRange],
      }),
    );
    return { IsComplete: false };
  }
  const { EndpointGroups = [] } = await client.send(
    new ListCustomRoutingEndpointGroupsCommand({ ListenerArn: listener.ListenerArn }),
  );
  const group: CustomRoutingEndpointGroup | undefined = EndpointGroups[0];
  if (!group?.EndpointGroupArn) {
    await client.send(
      new CreateCustomRoutingEndpointGroupCommand({
        ListenerArn: listener.ListenerArn,
        EndpointGroupRegion: props.EndpointGroupRegion,
        DestinationConfigurations: [
          {
            FromPort: number(props.DestinationFromPort),
            ToPort: number(props.DestinationToPort),
            Protocols: [...PROTOCOLS],
          },
        ],
        IdempotencyToken: `${token}-endpoint-group`,
      }),
    );
    return { IsComplete: false };
  }
  const present = (group.EndpointDescriptions ?? []).flatMap((d) =>
    d.EndpointId ? [d.EndpointId] : [],
  );
  const missing = props.SubnetIds.filter((subnet) => !present.includes(subnet));
  const extra = present.filter((subnet) => !props.SubnetIds.includes(subnet));
  if (missing.length > 0) {
    await client.send(
      new AddCustomRoutingEndpointsCommand({
        EndpointGroupArn: group.EndpointGroupArn,
        EndpointConfigurations: missing.map((EndpointId) => ({ EndpointId })),
      }),
    );
    return { IsComplete: false };
  }
  if (extra.length > 0) {
    await client.send(
      new RemoveCustomRoutingEndpointsCommand({
        EndpointGroupArn: group.EndpointGroupArn,
        EndpointIds: extra,
      }),
    );
    return { IsComplete: false };
  }
  return {
    IsComplete: true,
    Data: {
      AcceleratorArn: arn,
      ListenerArn: listener.ListenerArn,
      EndpointGroupArn: group.EndpointGroupArn,
      IpAddresses: (Accelerator.IpSets ?? []).flatMap((set) => set.IpAddresses ?? []).join(','),
      DnsName: Accelerator.DnsName ?? '',
    },
  };
}

/** One step of taking the accelerator down; true once it is gone. */
async function deleteStep(client: GlobalAcceleratorClient, arn: string): Promise<boolean> {
  if (!isAcceleratorArn(arn)) return true;
  try {
    const { Accelerator } = await client.send(
      new DescribeCustomRoutingAcceleratorCommand({ AcceleratorArn: arn }),
    );
    if (Accelerator?.Enabled) {
      await disable(client, arn);
      return false;
    }
    if (Accelerator?.Status !== 'DEPLOYED') return false;
    const { Listeners = [] } = await client.send(
      new ListCustomRoutingListenersCommand({ AcceleratorArn: arn }),
    );
    for (const listener of Listeners) {
      const { EndpointGroups = [] } = await client.send(
        new ListCustomRoutingEndpointGroupsCommand({ ListenerArn: listener.ListenerArn }),
      );
      for (const group of EndpointGroups) {
        await client.send(
          new DeleteCustomRoutingEndpointGroupCommand({ EndpointGroupArn: group.EndpointGroupArn }),
        );
      }
      await client.send(
        new DeleteCustomRoutingListenerCommand({ ListenerArn: listener.ListenerArn }),
      );
    }
    if (Listeners.length > 0) return false;
    await client.send(new DeleteCustomRoutingAcceleratorCommand({ AcceleratorArn: arn }));
    return true;
  } catch (error) {
    if (notFound(error)) return true;
    if (NOT_YET.has((error as { name?: string }).name ?? '')) return false;
    throw error;
  }
}

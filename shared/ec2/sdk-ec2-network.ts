/**
 * The `Ec2Network` adapter over `@aws-sdk/client-ec2`: SDK shapes in, berth's shapes out. It
 * neither retries nor rate-limits (wrap it in `BudgetedEc2Network`); build the client with
 * `ec2Client()` so the SDK's own retries do not spend the budget behind berth's back.
 */
import {
  type _InstanceType,
  AssignPrivateIpAddressesCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  CreateTagsCommand,
  DeleteNetworkInterfaceCommand,
  DescribeInstancesCommand,
  type DescribeInstancesCommandOutput,
  DescribeInstanceTypesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  DetachNetworkInterfaceCommand,
  EC2Client,
  type Instance,
  type InstanceNetworkInterface,
  ModifyNetworkInterfaceAttributeCommand,
  type NetworkInterface,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import {
  type CreateNetworkInterfaceInput,
  type Ec2Attachment,
  type Ec2Instance,
  type Ec2InstanceInterface,
  type Ec2Network,
  type Ec2NetworkInterface,
  type Ec2Subnet,
  type Ec2Tag,
  type InstanceTypeLimits,
  isInstanceState,
  type NetworkInterfacePage,
  type NetworkInterfaceQuery,
} from './network.js';

/** DescribeNetworkInterfaces page size: EC2's maximum, so one tick is usually one page. */
const ENI_PAGE_SIZE = 1000;
/** Values per filter and ids per DescribeInstanceTypes/DescribeSubnets call. */
const IDS_PER_CALL = 100;

/**
 * An EC2 client for berth: one SDK attempt per call, because `BudgetedEc2Network` retries
 * throttling itself, paying each attempt from the shared budget.
 */
export function ec2Client(region?: string): EC2Client {
  return new EC2Client({ ...(region ? { region } : {}), maxAttempts: 1 });
}

/** `Ec2Network` over the AWS SDK. */
export class SdkEc2Network implements Ec2Network {
  readonly #client: EC2Client;

  constructor(client: EC2Client) {
    this.#client = client;
  }

  async describeInstances(instanceIds: readonly string[]): Promise<readonly Ec2Instance[]> {
    const found: Ec2Instance[] = [];
    // A filter, not InstanceIds: an unknown id then drops out instead of failing the whole call.
    for (const ids of chunks(instanceIds, IDS_PER_CALL)) {
      let nextToken: string | undefined;
      do {
        const out: DescribeInstancesCommandOutput = await this.#client.send(
          new DescribeInstancesCommand({
            Filters: [{ Name: 'instance-id', Values: [...ids] }],
            MaxResults: 1000,
            NextToken: nextToken,
          }),
        );
        for (const reservation of out.Reservations ?? []) {
          for (const instance of reservation.Instances ?? []) found.push(toInstance(instance));
        }
        nextToken = out.NextToken;
      } while (nextToken);
    }
    return found;
  }

  async describeInstanceTypes(
    instanceTypes: readonly string[],
  ): Promise<readonly InstanceTypeLimits[]> {
    const found: InstanceTypeLimits[] = [];
    for (const types of chunks(instanceTypes, IDS_PER_CALL)) {
      const out = await this.#client.send(
        // EC2 answers for any type name it knows; the SDK's union lags new types, so widen to it.
        new DescribeInstanceTypesCommand({ InstanceTypes: types as _InstanceType[] }),
      );
      for (const info of out.InstanceTypes ?? []) {
        found.push({
          instanceType: String(info.InstanceType ?? ''),
          maxNetworkInterfaces: info.NetworkInfo?.MaximumNetworkInterfaces ?? 1,
          ipv4PerInterface: info.NetworkInfo?.Ipv4AddressesPerInterface ?? 1,
          // Prefix delegation is a Nitro feature; EC2 says so only through the hypervisor.
          prefixDelegation: info.Hypervisor === 'nitro',
        });
      }
    }
    return found;
  }

  async describeSubnets(subnetIds: readonly string[]): Promise<readonly Ec2Subnet[]> {
    const found: Ec2Subnet[] = [];
    for (const ids of chunks(subnetIds, IDS_PER_CALL)) {
      const out = await this.#client.send(
        new DescribeSubnetsCommand({ Filters: [{ Name: 'subnet-id', Values: [...ids] }] }),
      );
      for (const subnet of out.Subnets ?? []) {
        found.push({
          subnetId: subnet.SubnetId ?? '',
          cidr: subnet.CidrBlock ?? '',
          availabilityZone: subnet.AvailabilityZone ?? '',
          availableIpCount: subnet.AvailableIpAddressCount ?? 0,
        });
      }
    }
    return found;
  }

  async describeNetworkInterfaces(query: NetworkInterfaceQuery): Promise<NetworkInterfacePage> {
    const out = await this.#client.send(
      new DescribeNetworkInterfacesCommand({
        Filters: Object.entries(query.filters).map(([Name, values]) => ({
          Name,
          Values: [...values],
        })),
        MaxResults: query.pageSize ?? ENI_PAGE_SIZE,
        NextToken: query.nextToken,
      }),
    );
    return {
      interfaces: (out.NetworkInterfaces ?? []).map(toNetworkInterface),
      ...(out.NextToken ? { nextToken: out.NextToken } : {}),
    };
  }

  async createNetworkInterface(input: CreateNetworkInterfaceInput): Promise<Ec2NetworkInterface> {
    const out = await this.#client.send(
      new CreateNetworkInterfaceCommand({
        SubnetId: input.subnetId,
        Groups: [...input.securityGroupIds],
        Description: input.description,
        ...(input.secondaryIpCount > 0
          ? { SecondaryPrivateIpAddressCount: input.secondaryIpCount }
          : {}),
        ...(input.ipv4PrefixCount ? { Ipv4PrefixCount: input.ipv4PrefixCount } : {}),
        TagSpecifications: [{ ResourceType: 'network-interface', Tags: toSdkTags(input.tags) }],
        ClientToken: input.clientToken,
      }),
    );
    if (!out.NetworkInterface) throw new Error('CreateNetworkInterface returned no interface');
    return toNetworkInterface(out.NetworkInterface);
  }

  async attachNetworkInterface(input: {
    eniId: string;
    instanceId: string;
    deviceIndex: number;
  }): Promise<{ attachmentId: string }> {
    const out = await this.#client.send(
      new AttachNetworkInterfaceCommand({
        NetworkInterfaceId: input.eniId,
        InstanceId: input.instanceId,
        DeviceIndex: input.deviceIndex,
      }),
    );
    return { attachmentId: out.AttachmentId ?? '' };
  }

  async setDeleteOnTermination(input: { eniId: string; attachmentId: string }): Promise<void> {
    await this.#client.send(
      new ModifyNetworkInterfaceAttributeCommand({
        NetworkInterfaceId: input.eniId,
        Attachment: { AttachmentId: input.attachmentId, DeleteOnTermination: true },
      }),
    );
  }

  async assignPrivateIpAddresses(input: {
    eniId: string;
    count: number;
  }): Promise<readonly string[]> {
    const out = await this.#client.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: input.eniId,
        SecondaryPrivateIpAddressCount: input.count,
      }),
    );
    return (out.AssignedPrivateIpAddresses ?? []).flatMap((a) =>
      a.PrivateIpAddress ? [a.PrivateIpAddress] : [],
    );
  }

  async unassignPrivateIpAddresses(input: {
    eniId: string;
    ips: readonly string[];
  }): Promise<void> {
    await this.#client.send(
      new UnassignPrivateIpAddressesCommand({
        NetworkInterfaceId: input.eniId,
        PrivateIpAddresses: [...input.ips],
      }),
    );
  }

  async assignIpv4Prefixes(input: { eniId: string; count: number }): Promise<readonly string[]> {
    const out = await this.#client.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: input.eniId,
        Ipv4PrefixCount: input.count,
      }),
    );
    return (out.AssignedIpv4Prefixes ?? []).flatMap((p) => (p.Ipv4Prefix ? [p.Ipv4Prefix] : []));
  }

  async unassignIpv4Prefixes(input: { eniId: string; prefixes: readonly string[] }): Promise<void> {
    await this.#client.send(
      new UnassignPrivateIpAddressesCommand({
        NetworkInterfaceId: input.eniId,
        Ipv4Prefixes: [...input.prefixes],
      }),
    );
  }

  async detachNetworkInterface(input: { attachmentId: string }): Promise<void> {
    await this.#client.send(
      new DetachNetworkInterfaceCommand({ AttachmentId: input.attachmentId }),
    );
  }

  async deleteNetworkInterface(input: { eniId: string }): Promise<void> {
    await this.#client.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: input.eniId }));
  }

  async createTags(input: {
    resourceIds: readonly string[];
    tags: readonly Ec2Tag[];
  }): Promise<void> {
    await this.#client.send(
      new CreateTagsCommand({ Resources: [...input.resourceIds], Tags: toSdkTags(input.tags) }),
    );
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function toSdkTags(tags: readonly Ec2Tag[]): { Key: string; Value: string }[] {
  return tags.map((tag) => ({ Key: tag.key, Value: tag.value }));
}

function toInstance(instance: Instance): Ec2Instance {
  const state = instance.State?.Name ?? 'pending';
  return {
    instanceId: instance.InstanceId ?? '',
    instanceType: String(instance.InstanceType ?? ''),
    state: isInstanceState(state) ? state : 'pending',
    subnetId: instance.SubnetId ?? '',
    availabilityZone: instance.Placement?.AvailabilityZone ?? '',
    securityGroupIds: (instance.SecurityGroups ?? []).flatMap((g) =>
      g.GroupId ? [g.GroupId] : [],
    ),
    networkInterfaces: (instance.NetworkInterfaces ?? []).flatMap(toInstanceInterface),
  };
}

/**
 * One attached ENI of a DescribeInstances answer. An entry without a device index is left out
 * rather than read as the primary ENI (index 0), which berth assigns to.
 */
function toInstanceInterface(eni: InstanceNetworkInterface): Ec2InstanceInterface[] {
  const deviceIndex = eni.Attachment?.DeviceIndex;
  if (!eni.NetworkInterfaceId || deviceIndex === undefined) return [];
  return [
    {
      eniId: eni.NetworkInterfaceId,
      deviceIndex,
      attachmentId: eni.Attachment?.AttachmentId ?? '',
      subnetId: eni.SubnetId ?? '',
      macAddress: eni.MacAddress ?? '',
      ...addressesOf(eni),
    },
  ];
}

/**
 * An ENI's IPv4 addresses, as DescribeNetworkInterfaces and DescribeInstances both list them:
 * the primary, the secondaries (every other address) and the delegated prefixes.
 */
function addressesOf(eni: {
  readonly PrivateIpAddress?: string;
  readonly PrivateIpAddresses?: readonly {
    readonly PrivateIpAddress?: string;
    readonly Primary?: boolean;
  }[];
  readonly Ipv4Prefixes?: readonly { readonly Ipv4Prefix?: string }[];
}): Pick<Ec2NetworkInterface, 'primaryIp' | 'secondaryIps' | 'ipv4Prefixes'> {
  const addresses = eni.PrivateIpAddresses ?? [];
  const primaryIp =
    eni.PrivateIpAddress ?? addresses.find((a) => a.Primary)?.PrivateIpAddress ?? '';
  return {
    primaryIp,
    secondaryIps: addresses.flatMap((a) =>
      !a.Primary && a.PrivateIpAddress && a.PrivateIpAddress !== primaryIp
        ? [a.PrivateIpAddress]
        : [],
    ),
    ipv4Prefixes: (eni.Ipv4Prefixes ?? []).flatMap((p) => (p.Ipv4Prefix ? [p.Ipv4Prefix] : [])),
  };
}

const ENI_STATUSES: ReadonlySet<string> = new Set([
  'available',
  'in-use',
  'attaching',
  'detaching',
  'associated',
]);
const ATTACHMENT_STATUSES: ReadonlySet<string> = new Set([
  'attaching',
  'attached',
  'detaching',
  'detached',
]);

function toNetworkInterface(eni: NetworkInterface): Ec2NetworkInterface {
  const status = String(eni.Status ?? 'available');
  const attachment: Ec2Attachment | undefined =
    eni.Attachment?.AttachmentId && eni.Attachment.InstanceId
      ? {
          attachmentId: eni.Attachment.AttachmentId,
          instanceId: eni.Attachment.InstanceId,
          deviceIndex: eni.Attachment.DeviceIndex ?? 0,
          status: (ATTACHMENT_STATUSES.has(String(eni.Attachment.Status))
            ? eni.Attachment.Status
            : 'attaching') as Ec2Attachment['status'],
          deleteOnTermination: eni.Attachment.DeleteOnTermination ?? false,
        }
      : undefined;
  return {
    eniId: eni.NetworkInterfaceId ?? '',
    subnetId: eni.SubnetId ?? '',
    status: (ENI_STATUSES.has(status) ? status : 'available') as Ec2NetworkInterface['status'],
    macAddress: eni.MacAddress ?? '',
    ...addressesOf(eni),
    ...(attachment ? { attachment } : {}),
    tags: (eni.TagSet ?? []).map((tag) => ({ key: tag.Key ?? '', value: tag.Value ?? '' })),
    securityGroupIds: (eni.Groups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : [])),
  };
}

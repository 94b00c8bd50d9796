/**
 * The accelerator provider's steps against an in-memory Global Accelerator behind
 * aws-sdk-client-mock: every change puts the accelerator IN_PROGRESS until the test lets it
 * deploy, a listener or endpoint group blocks the delete, an enabled accelerator cannot be
 * deleted, as the API reference says of DeleteCustomRoutingAccelerator.
 */
import {
  AddCustomRoutingEndpointsCommand,
  CreateCustomRoutingAcceleratorCommand,
  CreateCustomRoutingEndpointGroupCommand,
  CreateCustomRoutingListenerCommand,
  DeleteCustomRoutingAcceleratorCommand,
  DeleteCustomRoutingEndpointGroupCommand,
  DeleteCustomRoutingListenerCommand,
  DescribeCustomRoutingAcceleratorCommand,
  GlobalAcceleratorClient,
  ListCustomRoutingEndpointGroupsCommand,
  ListCustomRoutingListenersCommand,
  RemoveCustomRoutingEndpointsCommand,
  UpdateCustomRoutingAcceleratorCommand,
  UpdateCustomRoutingListenerCommand,
} from '@aws-sdk/client-global-accelerator';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type AcceleratorEvent,
  type AcceleratorProperties,
  isComplete,
  onEvent,
} from '../../infra/custom-routing/lifecycle.js';

interface Group {
  arn: string;
  from: number;
  to: number;
  protocols: string[];
  endpoints: string[];
}
interface Listener {
  arn: string;
  from: number;
  to: number;
  groups: Group[];
}
interface Accelerator {
  arn: string;
  enabled: boolean;
  status: 'DEPLOYED' | 'IN_PROGRESS';
  tokens: Set<string>;
  listeners: Listener[];
}

const ga = mockClient(GlobalAcceleratorClient);
const client = new GlobalAcceleratorClient({ region: 'us-west-2' });
let accelerators: Map<string, Accelerator>;
let serial: number;

function named(name: string, message: string): Error {
  return Object.assign(new Error(message), { name });
}

function accelerator(arn: string | undefined): Accelerator {
  const found = arn === undefined ? undefined : accelerators.get(arn);
  if (!found) throw named('AcceleratorNotFoundException', `no accelerator ${arn}`);
  return found;
}

function listenerOf(arn: string | undefined): [Accelerator, Listener] {
  for (const acc of accelerators.values()) {
    const listener = acc.listeners.find((l) => l.arn === arn);
    if (listener) return [acc, listener];
  }
  throw named('ListenerNotFoundException', `no listener ${arn}`);
}

function groupOf(arn: string | undefined): [Accelerator, Listener, Group] {
  for (const acc of accelerators.values()) {
    for (const listener of acc.listeners) {
      const group = listener.groups.find((g) => g.arn === arn);
      if (group) return [acc, listener, group];
    }
  }
  throw named('EndpointGroupNotFoundException', `no endpoint group ${arn}`);
}

/** A change: the accelerator is IN_PROGRESS until `deploy()`. */
function changed(acc: Accelerator): void {
  acc.status = 'IN_PROGRESS';
}

function deploy(): void {
  for (const acc of accelerators.values()) acc.status = 'DEPLOYED';
}

beforeEach(() => {
  accelerators = new Map();
  serial = 0;
  ga.on(CreateCustomRoutingAcceleratorCommand).callsFake((input) => {
    const existing = [...accelerators.values()].find((a) => a.tokens.has(input.IdempotencyToken));
    const acc = existing ?? {
      arn: `arn:aws:globalaccelerator::123456789012:accelerator/acc-${++serial}`,
      enabled: input.Enabled ?? true,
      status: 'IN_PROGRESS' as const,
      tokens: new Set([input.IdempotencyToken]),
      listeners: [],
    };
    accelerators.set(acc.arn, acc);
    return { Accelerator: { AcceleratorArn: acc.arn, Status: acc.status } };
  });
  ga.on(DescribeCustomRoutingAcceleratorCommand).callsFake((input) => {
    const acc = accelerator(input.AcceleratorArn);
    return {
      Accelerator: {
        AcceleratorArn: acc.arn,
        Enabled: acc.enabled,
        Status: acc.status,
        DnsName: 'a1234.awsglobalaccelerator.com',
        IpSets: [{ IpAddresses: ['192.0.2.10', '198.51.100.20'] }],
      },
    };
  });
  ga.on(UpdateCustomRoutingAcceleratorCommand).callsFake((input) => {
    const acc = accelerator(input.AcceleratorArn);
    acc.enabled = input.Enabled ?? acc.enabled;
    changed(acc);
    return {};
  });
  ga.on(DeleteCustomRoutingAcceleratorCommand).callsFake((input) => {
    const acc = accelerator(input.AcceleratorArn);
    if (acc.enabled) throw named('AcceleratorNotDisabledException', 'disable it first');
    if (acc.listeners.length > 0) throw named('AssociatedListenerFoundException', 'listeners');
    accelerators.delete(acc.arn);
    return {};
  });
  ga.on(ListCustomRoutingListenersCommand).callsFake((input) => ({
    Listeners: accelerator(input.AcceleratorArn).listeners.map((l) => ({
      ListenerArn: l.arn,
      PortRanges: [{ FromPort: l.from, ToPort: l.to }],
    })),
  }));
  ga.on(CreateCustomRoutingListenerCommand).callsFake((input) => {
    const acc = accelerator(input.AcceleratorArn);
    const range = input.PortRanges?.[0];
    const listener = {
      arn: `${acc.arn}/listener/l-${++serial}`,
      from: range?.FromPort ?? 0,
      to: range?.ToPort ?? 0,
      groups: [],
    };
    acc.listeners.push(listener);
    changed(acc);
    return { Listener: { ListenerArn: listener.arn } };
  });
  ga.on(UpdateCustomRoutingListenerCommand).callsFake((input) => {
    const [acc, listener] = listenerOf(input.ListenerArn);
    listener.from = input.PortRanges?.[0]?.FromPort ?? listener.from;
    listener.to = input.PortRanges?.[0]?.ToPort ?? listener.to;
    changed(acc);
    return {};
  });
  ga.on(DeleteCustomRoutingListenerCommand).callsFake((input) => {
    const [acc, listener] = listenerOf(input.ListenerArn);
    if (listener.groups.length > 0) throw named('AssociatedEndpointGroupFoundException', 'groups');
    acc.listeners = acc.listeners.filter((l) => l !== listener);
    changed(acc);
    return {};
  });
  ga.on(ListCustomRoutingEndpointGroupsCommand).callsFake((input) => ({
    EndpointGroups: listenerOf(input.ListenerArn)[1].groups.map((g) => ({
      EndpointGroupArn: g.arn,
      DestinationDescriptions: [{ FromPort: g.from, ToPort: g.to, Protocols: g.protocols }],
      EndpointDescriptions: g.endpoints.map((EndpointId) => ({ EndpointId })),
    })),
  }));
  ga.on(CreateCustomRoutingEndpointGroupCommand).callsFake((input) => {
    const [acc, listener] = listenerOf(input.ListenerArn);
    const destination = input.DestinationConfigurations?.[0];
    const group = {
      arn: `${listener.arn}/endpoint-group/g-${++serial}`,
      from: destination?.FromPort ?? 0,
      to: destination?.ToPort ?? 0,
      protocols: [...(destination?.Protocols ?? [])],
      endpoints: [],
    };
    listener.groups.push(group);
    changed(acc);
    return { EndpointGroup: { EndpointGroupArn: group.arn } };
  });
  ga.on(DeleteCustomRoutingEndpointGroupCommand).callsFake((input) => {
    const [acc, listener, group] = groupOf(input.EndpointGroupArn);
    listener.groups = listener.groups.filter((g) => g !== group);
    changed(acc);
    return {};
  });
  ga.on(AddCustomRoutingEndpointsCommand).callsFake((input) => {
    const [acc, , group] = groupOf(input.EndpointGroupArn);
    group.endpoints.push(
      ...(input.EndpointConfigurations ?? []).map(
        (e: { EndpointId?: string }) => e.EndpointId ?? '',
      ),
    );
    changed(acc);
    return {};
  });
  ga.on(RemoveCustomRoutingEndpointsCommand).callsFake((input) => {
    const [acc, , group] = groupOf(input.EndpointGroupArn);
    group.endpoints = group.endpoints.filter((e) => !input.EndpointIds?.includes(e));
    changed(acc);
    return {};
  });
});
afterEach(() => ga.reset());

const PROPS: AcceleratorProperties = {
  Name: 'berth-games',
  // CloudFormation hands numbers to a custom resource as strings.
  ListenerFromPort: '1024',
  ListenerToPort: '65535',
  DestinationFromPort: '9000',
  DestinationToPort: '9099',
  EndpointGroupRegion: 'eu-west-1',
  SubnetIds: ['subnet-0a1b', 'subnet-0c2d'],
  Tags: [{ Key: 'berth.dev/stack', Value: 'berth-games' }],
};

/** Polls `isComplete` as the provider's waiter does, deploying between polls; the polls taken. */
async function pollUntilComplete(event: AcceleratorEvent & { PhysicalResourceId: string }) {
  for (let poll = 1; poll <= 20; poll++) {
    const answer = await isComplete(client, event);
    if (answer.IsComplete) return { ...answer, polls: poll };
    deploy();
  }
  throw new Error('never complete');
}

async function created() {
  const event: AcceleratorEvent = {
    RequestType: 'Create',
    RequestId: 'req-1',
    ResourceProperties: PROPS,
  };
  const { PhysicalResourceId } = await onEvent(client, event);
  const done = await pollUntilComplete({ ...event, PhysicalResourceId });
  return { arn: PhysicalResourceId, done };
}

describe('the custom routing accelerator provider', () => {
  it('creates the accelerator in onEvent and nothing else, so CloudFormation knows its id before anything can fail', async () => {
    const { PhysicalResourceId } = await onEvent(client, {
      RequestType: 'Create',
      RequestId: 'req-1',
      ResourceProperties: PROPS,
    });
    expect(PhysicalResourceId).toMatch(/^arn:aws:globalaccelerator::123456789012:accelerator\//);
    expect(ga.commandCalls(CreateCustomRoutingAcceleratorCommand)[0]?.args[0].input).toEqual({
      Name: 'berth-games',
      IpAddressType: 'IPV4',
      Enabled: true,
      IdempotencyToken: 'req-1',
      Tags: [{ Key: 'berth.dev/stack', Value: 'berth-games' }],
    });
    expect(ga.commandCalls(CreateCustomRoutingListenerCommand)).toHaveLength(0);
  });

  it('adds listener, endpoint group and subnets one change at a time, each once DEPLOYED, then answers its ARNs and addresses', async () => {
    const { arn, done } = await created();
    const acc = accelerator(arn);
    expect(acc.listeners).toHaveLength(1);
    const [listener] = acc.listeners;
    expect(listener).toMatchObject({ from: 1024, to: 65535 });
    expect(listener?.groups).toEqual([
      {
        arn: expect.any(String),
        from: 9000,
        to: 9099,
        protocols: ['TCP', 'UDP'],
        endpoints: ['subnet-0a1b', 'subnet-0c2d'],
      },
    ]);
    expect(
      ga.commandCalls(CreateCustomRoutingEndpointGroupCommand)[0]?.args[0].input,
    ).toMatchObject({ EndpointGroupRegion: 'eu-west-1' });
    expect(done.Data).toEqual({
      AcceleratorArn: arn,
      ListenerArn: listener?.arn,
      EndpointGroupArn: listener?.groups[0]?.arn,
      IpAddresses: '192.0.2.10,198.51.100.20',
      DnsName: 'a1234.awsglobalaccelerator.com',
    });
    // IN_PROGRESS after the create, then one poll per change (listener, group, subnets) and the last.
    expect(done.polls).toBe(5);
    // Never a change while IN_PROGRESS: each mutating call followed a DEPLOYED describe.
    expect(ga.commandCalls(CreateCustomRoutingListenerCommand)).toHaveLength(1);
    expect(ga.commandCalls(AddCustomRoutingEndpointsCommand)).toHaveLength(1);
  });

  it('changes subnets and public ports in place on update, keeping the accelerator and its addresses', async () => {
    const { arn } = await created();
    const props = {
      ...PROPS,
      ListenerFromPort: '2048',
      SubnetIds: ['subnet-0c2d', 'subnet-0e3f'],
    };
    const update: AcceleratorEvent = {
      RequestType: 'Update',
      RequestId: 'req-2',
      PhysicalResourceId: arn,
      ResourceProperties: props,
      OldResourceProperties: PROPS,
    };
    const { PhysicalResourceId } = await onEvent(client, update);
    expect(PhysicalResourceId).toBe(arn);
    await pollUntilComplete({ ...update, PhysicalResourceId });
    const [listener] = accelerator(arn).listeners;
    expect(listener).toMatchObject({ from: 2048, to: 65535 });
    expect(listener?.groups[0]?.endpoints.sort()).toEqual(['subnet-0c2d', 'subnet-0e3f']);
    expect(ga.commandCalls(CreateCustomRoutingAcceleratorCommand)).toHaveLength(1);
  });

  it('makes a new accelerator when the destination range changes (mappings cannot change in place)', async () => {
    const { arn } = await created();
    const { PhysicalResourceId } = await onEvent(client, {
      RequestType: 'Update',
      RequestId: 'req-3',
      PhysicalResourceId: arn,
      ResourceProperties: { ...PROPS, DestinationToPort: '9199' },
      OldResourceProperties: PROPS,
    });
    expect(PhysicalResourceId).not.toBe(arn);
    expect(accelerators.size).toBe(2);
  });

  it('deletes by disabling, waiting, removing endpoint group and listener, then the accelerator', async () => {
    const { arn } = await created();
    const del: AcceleratorEvent = {
      RequestType: 'Delete',
      RequestId: 'req-4',
      PhysicalResourceId: arn,
      ResourceProperties: PROPS,
    };
    await onEvent(client, del);
    expect(accelerator(arn).enabled).toBe(false);
    // Still IN_PROGRESS from the disable: nothing removed yet.
    expect(await isComplete(client, { ...del, PhysicalResourceId: arn })).toEqual({
      IsComplete: false,
    });
    expect(ga.commandCalls(DeleteCustomRoutingEndpointGroupCommand)).toHaveLength(0);
    await pollUntilComplete({ ...del, PhysicalResourceId: arn });
    expect(accelerators.has(arn)).toBe(false);
    expect(ga.commandCalls(DeleteCustomRoutingListenerCommand)).toHaveLength(1);
  });

  it('answers a delete of an accelerator already gone, or of a create that failed before one existed, as done', async () => {
    const gone = 'arn:aws:globalaccelerator::123456789012:accelerator/acc-404';
    const del = (id: string): AcceleratorEvent & { PhysicalResourceId: string } => ({
      RequestType: 'Delete',
      RequestId: 'req-5',
      PhysicalResourceId: id,
      ResourceProperties: PROPS,
    });
    await expect(onEvent(client, del(gone))).resolves.toEqual({ PhysicalResourceId: gone });
    expect(await isComplete(client, del(gone))).toEqual({ IsComplete: true });
    expect(await isComplete(client, del('2026/11/27/[$LATEST]abc'))).toEqual({ IsComplete: true });
    expect(ga.commandCalls(DescribeCustomRoutingAcceleratorCommand)).toHaveLength(1);
  });
});

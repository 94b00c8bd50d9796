import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isThrottled } from '../../shared/aws/error-codes.js';
import type { CustomRoutingApi, PortMapping } from '../../shared/fronts/accelerator.js';
import {
  FakeCustomRoutingAccelerator,
  type FakeSubnetEndpoint,
} from '../../sim/fakes/accelerator.js';
import { seededRandom } from '../../sim/random.js';

// Buckets big enough that only the throttling tests meet them.
const roomy = { capacity: 1e9, refillPerSecond: 1e9 };

function setup(
  options: {
    deployDelayMs?: number;
    mappingOrder?: 'sequential' | 'shuffled';
    listenerPortRange?: [number, number];
    fromPort?: number;
    toPort?: number;
    subnets?: FakeSubnetEndpoint[];
  } = {},
) {
  const clock = { now: 1_000_000 };
  const ga = new FakeCustomRoutingAccelerator({
    now: () => clock.now,
    random: seededRandom(7),
    buckets: { read: roomy, mutate: roomy },
    ...options,
  });
  const accelerator = ga.createAccelerator({
    listenerPortRange: options.listenerPortRange ?? [10_000, 20_000],
  });
  const group = ga.addEndpointGroup({
    fromPort: options.fromPort ?? 7000,
    toPort: options.toPort ?? 7009,
    protocols: ['UDP', 'TCP'],
    subnets: options.subnets ?? [{ subnetId: 'subnet-a', cidr: '10.0.1.0/24' }],
  });
  return { clock, ga, accelerator, group };
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (e: unknown) => (e as { name: string }).name,
  );

async function allMappings(ga: CustomRoutingApi, acceleratorArn: string, groupArn: string) {
  const mappings: PortMapping[] = [];
  const sizes: number[] = [];
  let token: string | undefined;
  do {
    const page = await ga.listPortMappings(acceleratorArn, groupArn, token);
    sizes.push(page.mappings.length);
    mappings.push(...page.mappings);
    token = page.nextToken;
  } while (token !== undefined);
  return { mappings, sizes };
}

describe('FakeCustomRoutingAccelerator', () => {
  it('maps each usable address of a subnet times each destination port onto the next listener port', async () => {
    const { ga, accelerator, group } = setup();
    const { mappings } = await allMappings(ga, accelerator.arn, group.arn);
    // A /24 maps 251 addresses (five are AWS's), times 10 ports.
    expect(mappings).toHaveLength(2_510);
    expect(mappings[0]).toEqual({
      acceleratorPort: 10_000,
      endpointGroupArn: group.arn,
      endpointId: 'subnet-a',
      destinationAddress: '10.0.1.4',
      destinationPort: 7000,
      protocols: ['UDP', 'TCP'],
      trafficState: 'DENY',
    });
    expect(mappings[1]).toMatchObject({ destinationAddress: '10.0.1.4', destinationPort: 7001 });
    expect(mappings[10]).toMatchObject({ acceleratorPort: 10_010, destinationAddress: '10.0.1.5' });
    expect(mappings.at(-1)).toMatchObject({
      acceleratorPort: 12_509,
      destinationAddress: '10.0.1.254',
      destinationPort: 7009,
    });
  });

  it('gives a second subnet the listener ports after the first', () => {
    const { ga } = setup({
      subnets: [
        { subnetId: 'subnet-a', cidr: '10.0.1.0/28' },
        { subnetId: 'subnet-b', cidr: '10.0.2.0/28' },
      ],
    });
    // A /28 maps 11 addresses × 10 ports = 110 listener ports.
    expect(ga.acceleratorPortOf('subnet-a', '10.0.1.14', 7009)).toBe(10_109);
    expect(ga.acceleratorPortOf('subnet-b', '10.0.2.4', 7000)).toBe(10_110);
    expect(ga.destinationOf(10_110)).toMatchObject({ subnetId: 'subnet-b', address: '10.0.2.4' });
    expect(ga.destinationOf(10_220)).toBeUndefined();
  });

  it('maps a subnet added later onto the next listener ports, leaving the first mappings as they were', async () => {
    const { ga, accelerator, group } = setup({
      mappingOrder: 'shuffled',
      subnets: [{ subnetId: 'subnet-a', cidr: '10.0.1.0/28' }],
    });
    const before = (await allMappings(ga, accelerator.arn, group.arn)).mappings;
    ga.addEndpoints(group.arn, [{ subnetId: 'subnet-b', cidr: '10.0.2.0/28' }]);
    const after = (await allMappings(ga, accelerator.arn, group.arn)).mappings;
    expect(after.slice(0, 110)).toEqual(before);
    expect(after.slice(110).every((m) => m.endpointId === 'subnet-b')).toBe(true);
    expect((await ga.describeEndpointGroup(group.arn)).subnetIds).toEqual(['subnet-a', 'subnet-b']);
    expect(() =>
      ga.addEndpoints(group.arn, [{ subnetId: 'subnet-b', cidr: '10.0.2.0/28' }]),
    ).toThrow(expect.objectContaining({ name: 'EndpointAlreadyExistsException' }));
  });

  it('reclaims the mappings of a subnet removed', async () => {
    const { ga, accelerator, group } = setup({
      subnets: [
        { subnetId: 'subnet-a', cidr: '10.0.1.0/28' },
        { subnetId: 'subnet-b', cidr: '10.0.2.0/28' },
      ],
    });
    ga.removeEndpoint('subnet-a');
    const { mappings } = await allMappings(ga, accelerator.arn, group.arn);
    expect(mappings).toHaveLength(110);
    expect(mappings[0]).toMatchObject({ acceleratorPort: 10_110, endpointId: 'subnet-b' });
    expect(ga.destinationOf(10_000)).toBeUndefined();
    expect(await codeOf(ga.listPortMappingsByDestination('subnet-a', '10.0.1.4'))).toBe(
      'EndpointNotFoundException',
    );
    expect((await ga.describeEndpointGroup(group.arn)).subnetIds).toEqual(['subnet-b']);
  });

  it('refuses subnets whose destinations the listener range cannot hold, and subnets outside /28 to /17', () => {
    const ga = new FakeCustomRoutingAccelerator({ now: () => 0 });
    ga.createAccelerator({ listenerPortRange: [10_000, 10_109] });
    const add =
      (cidr: string, subnetId = 'subnet-x') =>
      () =>
        ga.addEndpointGroup({
          fromPort: 7000,
          toPort: 7009,
          protocols: ['UDP'],
          subnets: [{ subnetId, cidr }],
        });
    expect(add('10.0.1.0/29')).toThrow(
      expect.objectContaining({ name: 'InvalidArgumentException' }),
    );
    expect(add('10.0.0.0/16')).toThrow(
      expect.objectContaining({ name: 'InvalidArgumentException' }),
    );
    expect(add('10.0.1.0/27')).toThrow(expect.objectContaining({ name: 'LimitExceededException' }));
    expect(add('10.0.1.0/28')).not.toThrow();
    // The range is now full: not one more destination.
    expect(add('10.0.2.0/28', 'subnet-y')).toThrow(
      expect.objectContaining({ name: 'LimitExceededException' }),
    );
  });

  it('maps every destination to exactly one listener port and back, in either mapping order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 25, max: 28 }),
        fc.integer({ min: 25, max: 28 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.constantFrom('sequential' as const, 'shuffled' as const),
        async (prefixA, prefixB, ports, fromListener, mappingOrder) => {
          const subnets = [
            { subnetId: 'subnet-a', cidr: `10.0.0.0/${prefixA}` },
            { subnetId: 'subnet-b', cidr: `10.0.8.0/${prefixB}` },
          ];
          const { ga, accelerator, group } = setup({
            mappingOrder,
            subnets,
            listenerPortRange: [fromListener, 65_535],
            fromPort: 3000,
            toPort: 3000 + ports - 1,
          });
          const { mappings } = await allMappings(ga, accelerator.arn, group.arn);
          const usable = 2 ** (32 - prefixA) - 5 + 2 ** (32 - prefixB) - 5;
          expect(mappings).toHaveLength(usable * ports);
          const listenerPorts = mappings.map((m) => m.acceleratorPort);
          expect(new Set(listenerPorts).size).toBe(mappings.length);
          expect(listenerPorts).toEqual([...listenerPorts].sort((a, b) => a - b));
          const destinations = new Set(
            mappings.map((m) => `${m.endpointId}/${m.destinationAddress}:${m.destinationPort}`),
          );
          expect(destinations.size).toBe(mappings.length);
          for (const m of mappings) {
            expect(
              ga.acceleratorPortOf(m.endpointId, m.destinationAddress, m.destinationPort),
            ).toBe(m.acceleratorPort);
            expect(ga.destinationOf(m.acceleratorPort)).toEqual({
              endpointGroupArn: group.arn,
              subnetId: m.endpointId,
              address: m.destinationAddress,
              port: m.destinationPort,
            });
          }
        },
      ),
      { numRuns: 20 },
    );
  });

  it('shuffles mappings within the subnet block when asked', () => {
    const { ga } = setup({ mappingOrder: 'shuffled' });
    const ports = Array.from({ length: 10 }, (_, i) =>
      ga.acceleratorPortOf('subnet-a', '10.0.1.4', 7000 + i),
    );
    expect(ports).not.toEqual(Array.from({ length: 10 }, (_, i) => 10_000 + i));
    expect(Math.min(...ports)).toBeGreaterThanOrEqual(10_000);
    expect(Math.max(...ports)).toBeLessThan(12_510);
  });

  it('pages listings at 20,000 mappings in listener port order', async () => {
    const { ga, accelerator, group } = setup({
      listenerPortRange: [1, 65_535],
      subnets: [{ subnetId: 'subnet-a', cidr: '10.0.0.0/20' }],
      toPort: 7014,
    });
    // 4,091 addresses × 15 ports = 61,365 mappings.
    const { mappings, sizes } = await allMappings(ga, accelerator.arn, group.arn);
    expect(sizes).toEqual([20_000, 20_000, 20_000, 1_365]);
    expect(mappings.map((m) => m.acceleratorPort)).toEqual(
      Array.from({ length: 61_365 }, (_, i) => i + 1),
    );
    expect(await codeOf(ga.listPortMappings(accelerator.arn, group.arn, 'bogus'))).toBe(
      'InvalidNextTokenException',
    );
  });

  it('allows and denies rectangles of addresses times ports', async () => {
    const { ga, group } = setup();
    await ga.allowTraffic({
      endpointGroupArn: group.arn,
      endpointId: 'subnet-a',
      addresses: ['10.0.1.10', '10.0.1.11'],
      ports: [7001, 7003],
    });
    const allowed: string[] = [];
    for (const address of ['10.0.1.9', '10.0.1.10', '10.0.1.11', '10.0.1.12']) {
      for (let port = 7000; port <= 7009; port++) {
        if (ga.destinationState('subnet-a', address, port) === 'ALLOW') {
          allowed.push(`${address}:${port}`);
        }
      }
    }
    expect(allowed).toEqual([
      '10.0.1.10:7001',
      '10.0.1.10:7003',
      '10.0.1.11:7001',
      '10.0.1.11:7003',
    ]);
    // No ports: the whole destination range.
    await ga.allowTraffic({
      endpointGroupArn: group.arn,
      endpointId: 'subnet-a',
      addresses: ['10.0.1.12'],
    });
    expect(ga.allowedCount()).toBe(14);
    await ga.denyTraffic({
      endpointGroupArn: group.arn,
      endpointId: 'subnet-a',
      addresses: ['10.0.1.10', '10.0.1.12'],
      ports: [7001],
    });
    expect(ga.destinationState('subnet-a', '10.0.1.10', 7001)).toBe('DENY');
    expect(ga.destinationState('subnet-a', '10.0.1.10', 7003)).toBe('ALLOW');
    expect(ga.allowedCount()).toBe(12);
    const byDestination = await ga.listPortMappingsByDestination('subnet-a', '10.0.1.11');
    expect(byDestination.mappings.map((m) => `${m.destinationPort}:${m.trafficState}`)).toEqual([
      '7000:DENY',
      '7001:ALLOW',
      '7002:DENY',
      '7003:ALLOW',
      '7004:DENY',
      '7005:DENY',
      '7006:DENY',
      '7007:DENY',
      '7008:DENY',
      '7009:DENY',
    ]);
    expect(byDestination.mappings[1]?.acceleratorPort).toBe(
      ga.acceleratorPortOf('subnet-a', '10.0.1.11', 7001),
    );
  });

  it('refuses batches over 100 addresses or ports, or outside the group, with InvalidArgumentException', async () => {
    const { ga, group } = setup({ toPort: 7200, listenerPortRange: [1, 65_535] });
    const batch = { endpointGroupArn: group.arn, endpointId: 'subnet-a' };
    const hundred = Array.from({ length: 100 }, (_, i) => `10.0.1.${i + 4}`);
    const ports = Array.from({ length: 100 }, (_, i) => 7000 + i);
    expect(await codeOf(ga.allowTraffic({ ...batch, addresses: hundred, ports }))).toBe('ok');
    const refusals = [
      { addresses: [...hundred, '10.0.1.104'], ports },
      { addresses: hundred, ports: [...ports, 7100] },
      { addresses: [] },
      { addresses: ['10.0.1.1'] }, // reserved by AWS: not mapped
      { addresses: ['10.0.1.255'] },
      { addresses: ['10.0.2.4'] },
      { addresses: ['10.0.1.4'], ports: [6999] },
      { addresses: ['10.0.1.4'], ports: [7201] },
    ];
    for (const refusal of refusals) {
      expect(await codeOf(ga.denyTraffic({ ...batch, ...refusal }))).toBe(
        'InvalidArgumentException',
      );
    }
    expect(
      await codeOf(ga.allowTraffic({ ...batch, endpointId: 'subnet-z', addresses: ['10.0.1.4'] })),
    ).toBe('InvalidArgumentException');
    expect(
      await codeOf(
        ga.allowTraffic({ ...batch, endpointGroupArn: `${group.arn}0`, addresses: ['10.0.1.4'] }),
      ),
    ).toBe('EndpointGroupNotFoundException');
    // Nothing refused changed anything.
    expect(ga.allowedCount()).toBe(10_000);
  });

  it('is IN_PROGRESS for the deploy delay after a change, and traffic follows the change once deployed', async () => {
    const { clock, ga, accelerator, group } = setup({ deployDelayMs: 3_000 });
    const batch = { endpointGroupArn: group.arn, endpointId: 'subnet-a', addresses: ['10.0.1.20'] };
    expect((await ga.describeAccelerator(accelerator.arn)).status).toBe('DEPLOYED');
    await ga.allowTraffic({ ...batch, ports: [7005] });
    expect((await ga.describeAccelerator(accelerator.arn)).status).toBe('IN_PROGRESS');
    expect(ga.destinationState('subnet-a', '10.0.1.20', 7005)).toBe('ALLOW');
    expect(ga.reachable('subnet-a', '10.0.1.20', 7005)).toBe(false);
    clock.now += 3_000;
    expect((await ga.describeAccelerator(accelerator.arn)).status).toBe('DEPLOYED');
    expect(ga.reachable('subnet-a', '10.0.1.20', 7005)).toBe(true);
    await ga.denyTraffic({ ...batch, ports: [7005] });
    expect(ga.reachable('subnet-a', '10.0.1.20', 7005)).toBe(true);
    clock.now += 1_000;
    // Allowed again before the deny deployed: traffic never stopped.
    await ga.allowTraffic({ ...batch, ports: [7005] });
    clock.now += 2_000;
    expect(ga.reachable('subnet-a', '10.0.1.20', 7005)).toBe(true);
    expect((await ga.describeAccelerator(accelerator.arn)).status).toBe('IN_PROGRESS');
    clock.now += 1_000;
    expect((await ga.describeAccelerator(accelerator.arn)).status).toBe('DEPLOYED');
  });

  it('describes the accelerator and endpoint group, and answers unknown ones with their not-found codes', async () => {
    const { ga, accelerator, group } = setup();
    expect(accelerator.arn).toMatch(
      /^arn:aws:globalaccelerator::123456789012:accelerator\/[0-9a-f-]{36}$/,
    );
    expect(group.arn).toMatch(/\/listener\/[0-9a-f]{8}\/endpoint-group\/[0-9a-f]{12}$/);
    expect(accelerator.ipAddresses).toHaveLength(2);
    expect(await ga.describeEndpointGroup(group.arn)).toEqual({
      arn: group.arn,
      fromPort: 7000,
      toPort: 7009,
      protocols: ['UDP', 'TCP'],
      subnetIds: ['subnet-a'],
    });
    expect(await codeOf(ga.describeAccelerator(`${accelerator.arn}x`))).toBe(
      'AcceleratorNotFoundException',
    );
    expect(await codeOf(ga.describeEndpointGroup(`${group.arn}x`))).toBe(
      'EndpointGroupNotFoundException',
    );
    expect(await codeOf(ga.listPortMappings(`${accelerator.arn}x`, group.arn))).toBe(
      'AcceleratorNotFoundException',
    );
    expect(await codeOf(ga.listPortMappingsByDestination('subnet-z', '10.0.1.4'))).toBe(
      'EndpointNotFoundException',
    );
    expect(await codeOf(ga.listPortMappingsByDestination('subnet-a', '10.0.1.3'))).toBe(
      'InvalidArgumentException',
    );
  });

  it('throttles with ThrottlingException from a bucket per action class, then refills', async () => {
    const clock = { now: 0 };
    const ga = new FakeCustomRoutingAccelerator({ now: () => clock.now });
    const accelerator = ga.createAccelerator({ listenerPortRange: [10_000, 20_000] });
    const group = ga.addEndpointGroup({
      fromPort: 7000,
      toPort: 7009,
      protocols: ['UDP'],
      subnets: [{ subnetId: 'subnet-a', cidr: '10.0.1.0/24' }],
    });
    const batch = { endpointGroupArn: group.arn, endpointId: 'subnet-a', addresses: ['10.0.1.4'] };
    for (let i = 0; i < 5; i++) await ga.allowTraffic(batch);
    const refused = await ga.denyTraffic(batch).catch((e: unknown) => e);
    expect(isThrottled(refused)).toBe(true);
    expect(refused).toMatchObject({ name: 'ThrottlingException', message: 'Rate exceeded' });
    // Reads have their own bucket.
    expect(await codeOf(ga.describeAccelerator(accelerator.arn))).toBe('ok');
    clock.now += 1_000;
    expect(await codeOf(ga.denyTraffic(batch))).toBe('ok');
    expect(ga.destinationState('subnet-a', '10.0.1.4', 7000)).toBe('DENY');
    expect(ga.throttled).toBe(1);
    expect(ga.mutatingCalls()).toBe(7);
  });

  it('fails the next call of an action as injected, throttles at the injected rate, and logs every call', async () => {
    const { clock, ga, accelerator, group } = setup();
    ga.failNext('AllowCustomRoutingTraffic', 'InternalServiceErrorException');
    const batch = { endpointGroupArn: group.arn, endpointId: 'subnet-a', addresses: ['10.0.1.4'] };
    const failed = await ga.allowTraffic(batch).catch((e: unknown) => e);
    expect(failed).toMatchObject({
      name: 'InternalServiceErrorException',
      $metadata: { httpStatusCode: 500 },
    });
    expect(ga.allowedCount()).toBe(0);
    clock.now += 1;
    await ga.allowTraffic(batch);
    ga.throttleRate = 1;
    expect(await codeOf(ga.describeAccelerator(accelerator.arn))).toBe('ThrottlingException');
    expect(ga.calls).toEqual([
      {
        action: 'AllowCustomRoutingTraffic',
        at: 1_000_000,
        outcome: 'error',
        code: 'InternalServiceErrorException',
      },
      { action: 'AllowCustomRoutingTraffic', at: 1_000_001, outcome: 'ok' },
      {
        action: 'DescribeCustomRoutingAccelerator',
        at: 1_000_001,
        outcome: 'error',
        code: 'ThrottlingException',
      },
    ]);
  });
});

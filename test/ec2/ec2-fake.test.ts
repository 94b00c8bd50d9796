import { describe, expect, it } from 'vitest';
import { isInUse, isLimitExceeded, isNotFound } from '../../shared/aws/error-codes.js';
import { FakeEc2 } from '../../sim/fakes/ec2.js';

function account(options: { describeLagMs?: number } = {}) {
  const clock = { now: 1_000_000 };
  const ec2 = new FakeEc2({ now: () => clock.now, ...options });
  ec2.addSubnet('subnet-1', '10.0.0.0/28');
  return { clock, ec2 };
}

const create = (ec2: FakeEc2, token: string, secondaryIpCount = 2) =>
  ec2.createNetworkInterface({
    subnetId: 'subnet-1',
    securityGroupIds: ['sg-1'],
    secondaryIpCount,
    description: 'd',
    tags: [{ key: 'berth.dev/cluster', value: 'c' }],
    clientToken: token,
  });

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (e: unknown) => (e as { name: string }).name,
  );

describe('FakeEc2', () => {
  it('hands out the addresses of a subnet minus the five AWS reserves, then refuses', async () => {
    const { ec2 } = account();
    expect(ec2.freeAddresses('subnet-1')).toBe(11);
    const eni = await create(ec2, 't1', 4);
    expect(eni.primaryIp).toBe('10.0.0.4');
    expect(ec2.freeAddresses('subnet-1')).toBe(6);
    expect(await codeOf(create(ec2, 't2', 6))).toBe('InsufficientFreeAddressesInSubnet');
    expect(await codeOf(ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 7 }))).toBe(
      'InsufficientFreeAddressesInSubnet',
    );
  });

  it('answers a repeated ClientToken with the same ENI, and a changed request with a mismatch', async () => {
    const { ec2 } = account();
    const first = await create(ec2, 'tok');
    const again = await create(ec2, 'tok');
    expect(again.eniId).toBe(first.eniId);
    expect(ec2.allInterfaces()).toHaveLength(1);
    expect(await codeOf(create(ec2, 'tok', 3))).toBe('IdempotentParameterMismatch');
  });

  it('refuses to tag an ENI that does not exist, as AWS does and moto does not', async () => {
    const { ec2 } = account();
    const eni = await create(ec2, 'tok');
    await ec2.deleteNetworkInterface({ eniId: eni.eniId });
    const tagging = ec2.createTags({ resourceIds: [eni.eniId], tags: [{ key: 'k', value: 'v' }] });
    expect(await codeOf(tagging)).toBe('InvalidNetworkInterfaceID.NotFound');
  });

  it('enforces ENIs per instance and IPv4 per ENI from the instance type', async () => {
    const clock = { now: 0 };
    const ec2 = new FakeEc2({ now: () => clock.now });
    ec2.addSubnet('subnet-1', '10.0.0.0/24');
    const instanceId = ec2.launchInstance({ instanceType: 't3.medium', subnetId: 'subnet-1' });
    const a = await create(ec2, 'a', 0);
    const b = await create(ec2, 'b', 0);
    const c = await create(ec2, 'c', 0);
    await ec2.attachNetworkInterface({ eniId: a.eniId, instanceId, deviceIndex: 1 });
    expect(
      await codeOf(ec2.attachNetworkInterface({ eniId: b.eniId, instanceId, deviceIndex: 1 })),
    ).toBe('InvalidParameterValue');
    await ec2.attachNetworkInterface({ eniId: b.eniId, instanceId, deviceIndex: 2 });
    // Attaching an attached interface again: EC2's own code, which berth classifies as in use.
    const again = await ec2
      .attachNetworkInterface({ eniId: b.eniId, instanceId, deviceIndex: 3 })
      .catch((error: unknown) => error);
    expect(isInUse(again)).toBe(true);
    expect(isLimitExceeded(again) || isNotFound(again)).toBe(false);
    expect(
      await codeOf(ec2.attachNetworkInterface({ eniId: c.eniId, instanceId, deviceIndex: 3 })),
    ).toBe('AttachmentLimitExceeded');
    // t3.medium: 6 IPv4 per ENI, the primary included.
    await ec2.assignPrivateIpAddresses({ eniId: a.eniId, count: 5 });
    expect(await codeOf(ec2.assignPrivateIpAddresses({ eniId: a.eniId, count: 1 }))).toBe(
      'PrivateIpAddressLimitExceeded',
    );
  });

  it('models the primary ENI: device 0 with its addresses, its primary counted in the limit, never detached or deleted', async () => {
    const ec2 = new FakeEc2({ now: () => 0 });
    ec2.addSubnet('subnet-1', '10.0.0.0/24');
    // t3.small: 4 IPv4 per ENI, the primary's own address among them (AvailableIpPerENI.html).
    const instanceId = ec2.launchInstance({ instanceType: 't3.small', subnetId: 'subnet-1' });
    const [described] = await ec2.describeInstances([instanceId]);
    const primary = described?.networkInterfaces.find((eni) => eni.deviceIndex === 0);
    expect(primary).toMatchObject({ subnetId: 'subnet-1', secondaryIps: [], ipv4Prefixes: [] });
    const eniId = primary?.eniId ?? '';
    const [prefix] = await ec2.assignIpv4Prefixes({ eniId, count: 1 });
    const ips = await ec2.assignPrivateIpAddresses({ eniId, count: 2 });
    expect(await codeOf(ec2.assignPrivateIpAddresses({ eniId, count: 1 }))).toBe(
      'PrivateIpAddressLimitExceeded',
    );
    const [after] = await ec2.describeInstances([instanceId]);
    expect(after?.networkInterfaces).toEqual([
      { ...primary, secondaryIps: ips, ipv4Prefixes: [prefix] },
    ]);
    expect(
      await codeOf(ec2.detachNetworkInterface({ attachmentId: primary?.attachmentId ?? '' })),
    ).toBe('OperationNotPermitted');
    expect(await codeOf(ec2.deleteNetworkInterface({ eniId }))).toBe('InvalidParameterValue');
    await ec2.unassignIpv4Prefixes({ eniId, prefixes: [prefix ?? ''] });
    expect(ec2.networkInterface(eniId)?.ipv4Prefixes).toEqual([]);
  });

  it('throttles each action by its own bucket with EC2 refill rates', async () => {
    const { clock, ec2 } = account();
    const outcomes: string[] = [];
    for (let i = 0; i < 51; i++) {
      outcomes.push(await codeOf(ec2.detachNetworkInterface({ attachmentId: 'none' })));
    }
    // AttachNetworkInterface/Detach: 50 max, 5 per second.
    expect(outcomes.filter((o) => o === 'RequestLimitExceeded')).toHaveLength(1);
    expect(await codeOf(ec2.describeSubnets(['subnet-1']))).toBe('ok');
    clock.now += 1_000;
    const refilled: string[] = [];
    for (let i = 0; i < 6; i++) {
      refilled.push(await codeOf(ec2.detachNetworkInterface({ attachmentId: 'none' })));
    }
    expect(refilled.filter((o) => o === 'RequestLimitExceeded')).toHaveLength(1);
  });

  it('refuses to delete an ENI until its detach has completed', async () => {
    const clock = { now: 0 };
    const ec2 = new FakeEc2({ now: () => clock.now, detachDelayMs: 1_500 });
    ec2.addSubnet('subnet-1', '10.0.0.0/24');
    const instanceId = ec2.launchInstance({ instanceType: 'c5.large', subnetId: 'subnet-1' });
    const eni = await create(ec2, 'x');
    const { attachmentId } = await ec2.attachNetworkInterface({
      eniId: eni.eniId,
      instanceId,
      deviceIndex: 1,
    });
    await ec2.detachNetworkInterface({ attachmentId });
    expect(ec2.networkInterface(eni.eniId)?.status).toBe('detaching');
    const early = await codeOf(ec2.deleteNetworkInterface({ eniId: eni.eniId }));
    expect(early).toBe('InvalidParameterValue');
    clock.now += 2_000;
    await ec2.deleteNetworkInterface({ eniId: eni.eniId });
    expect(await codeOf(ec2.deleteNetworkInterface({ eniId: eni.eniId }))).toBe(
      'InvalidNetworkInterfaceID.NotFound',
    );
  });

  it('shows mutations to DescribeNetworkInterfaces only after the configured lag', async () => {
    const { clock, ec2 } = account({ describeLagMs: 5_000 });
    const eni = await create(ec2, 'lag', 1);
    const query = { filters: { 'tag:berth.dev/cluster': ['c'] } };
    expect((await ec2.describeNetworkInterfaces(query)).interfaces).toHaveLength(0);
    clock.now += 5_000;
    expect((await ec2.describeNetworkInterfaces(query)).interfaces).toHaveLength(1);
    await ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 2 });
    const stale = (await ec2.describeNetworkInterfaces(query)).interfaces[0];
    expect(stale?.secondaryIps).toHaveLength(1);
    clock.now += 5_000;
    const fresh = (await ec2.describeNetworkInterfaces(query)).interfaces[0];
    expect(fresh?.secondaryIps).toHaveLength(3);
    await ec2.deleteNetworkInterface({ eniId: eni.eniId });
    expect((await ec2.describeNetworkInterfaces(query)).interfaces).toHaveLength(1);
    clock.now += 5_000;
    expect((await ec2.describeNetworkInterfaces(query)).interfaces).toHaveLength(0);
  });

  it('paginates DescribeNetworkInterfaces and rejects a page size outside 5..1000', async () => {
    const clock = { now: 0 };
    const ec2 = new FakeEc2({ now: () => clock.now });
    ec2.addSubnet('subnet-1', '10.0.0.0/24');
    for (let i = 0; i < 12; i++) await create(ec2, `p${i}`, 0);
    const first = await ec2.describeNetworkInterfaces({ filters: {}, pageSize: 5 });
    expect(first.interfaces).toHaveLength(5);
    const second = await ec2.describeNetworkInterfaces({
      filters: {},
      pageSize: 5,
      nextToken: first.nextToken,
    });
    const third = await ec2.describeNetworkInterfaces({
      filters: {},
      pageSize: 5,
      nextToken: second.nextToken,
    });
    expect(third.interfaces).toHaveLength(2);
    expect(third.nextToken).toBeUndefined();
    expect(await codeOf(ec2.describeNetworkInterfaces({ filters: {}, pageSize: 2 }))).toBe(
      'InvalidParameterValue',
    );
  });

  it('deletes ENIs marked DeleteOnTermination with their instance and frees the rest', async () => {
    const clock = { now: 0 };
    const ec2 = new FakeEc2({ now: () => clock.now });
    ec2.addSubnet('subnet-1', '10.0.0.0/24');
    const instanceId = ec2.launchInstance({ instanceType: 'c5.large', subnetId: 'subnet-1' });
    const kept = await create(ec2, 'kept');
    const gone = await create(ec2, 'gone');
    await ec2.attachNetworkInterface({ eniId: kept.eniId, instanceId, deviceIndex: 1 });
    const { attachmentId } = await ec2.attachNetworkInterface({
      eniId: gone.eniId,
      instanceId,
      deviceIndex: 2,
    });
    await ec2.setDeleteOnTermination({ eniId: gone.eniId, attachmentId });
    ec2.terminateInstance(instanceId);
    expect(ec2.networkInterface(gone.eniId)).toBeUndefined();
    expect(ec2.networkInterface(kept.eniId)?.status).toBe('available');
    expect((await ec2.describeInstances([instanceId]))[0]?.state).toBe('terminated');
  });

  it('fails injected calls once, with the code asked for', async () => {
    const { ec2 } = account();
    ec2.failNext('DescribeSubnets', 'InternalError');
    expect(await codeOf(ec2.describeSubnets(['subnet-1']))).toBe('InternalError');
    expect(await codeOf(ec2.describeSubnets(['subnet-1']))).toBe('ok');
  });

  describe('prefix delegation', () => {
    /** A /26 (4 blocks of 16: the first holds AWS's four reserves, the last its broadcast). */
    function prefixAccount(instanceType = 'm5.large') {
      const ec2 = new FakeEc2({ now: () => 0 });
      ec2.addSubnet('subnet-1', '10.0.0.0/26');
      const instanceId = ec2.launchInstance({ instanceType, subnetId: 'subnet-1' });
      return { ec2, instanceId };
    }
    const attached = async (ec2: FakeEc2, instanceId: string) => {
      const eni = await create(ec2, `t-${Math.random()}`, 0);
      await ec2.attachNetworkInterface({ eniId: eni.eniId, instanceId, deviceIndex: 1 });
      return eni;
    };

    it('delegates aligned /28s of free addresses, never one holding a reserved address', async () => {
      const { ec2, instanceId } = prefixAccount();
      const eni = await attached(ec2, instanceId);
      // Primary of the instance .4 and of the ENI .5 sit in block 0, with the reserves.
      expect(ec2.freePrefixes('subnet-1')).toBe(2);
      expect(await ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 2 })).toEqual([
        '10.0.0.16/28',
        '10.0.0.32/28',
      ]);
      expect(ec2.freeAddresses('subnet-1')).toBe(64 - 5 - 2 - 32);
      expect(ec2.networkInterface(eni.eniId)?.ipv4Prefixes).toEqual([
        '10.0.0.16/28',
        '10.0.0.32/28',
      ]);
      // Single addresses go around the prefixes.
      const single = await ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 1 });
      expect(single).toEqual(['10.0.0.6']);
    });

    it('refuses InsufficientCidrBlocks when free addresses are scattered, and changes nothing', async () => {
      const ec2 = new FakeEc2({ now: () => 0 });
      ec2.addSubnet('subnet-1', '10.0.0.0/24');
      const instanceId = ec2.launchInstance({ instanceType: 'm5.large', subnetId: 'subnet-1' });
      const eni = await attached(ec2, instanceId);
      let seed = 7;
      const random = () => {
        seed = (seed * 48271) % 2147483647;
        return seed / 2147483647;
      };
      const foreign = ec2.scatterForeign('subnet-1', 1, random);
      expect(foreign).toHaveLength(14); // every block not already touched
      expect(ec2.freePrefixes('subnet-1')).toBe(0);
      const before = ec2.freeAddresses('subnet-1');
      expect(before).toBeGreaterThan(200);
      expect(await codeOf(ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 1 }))).toBe(
        'InsufficientCidrBlocks',
      );
      expect(
        await codeOf(
          ec2.createNetworkInterface({
            subnetId: 'subnet-1',
            securityGroupIds: ['sg-1'],
            secondaryIpCount: 0,
            ipv4PrefixCount: 1,
            description: 'd',
            tags: [],
            clientToken: 'p',
          }),
        ),
      ).toBe('InsufficientCidrBlocks');
      expect(ec2.freeAddresses('subnet-1')).toBe(before);
      // Single addresses are still there: the fallback berth takes.
      expect(await ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 3 })).toHaveLength(3);
      // Once the other tenant leaves a block whole, prefixes are back.
      ec2.releaseForeign('subnet-1', foreign.slice(-1));
      expect(await ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 1 })).toHaveLength(1);
    });

    it('delegates prefixes from a prefix reservation first and never puts single addresses in it', async () => {
      const ec2 = new FakeEc2({ now: () => 0 });
      ec2.addSubnet('subnet-1', '10.0.0.0/24');
      ec2.reservePrefixes('subnet-1', '10.0.0.192/26');
      const instanceId = ec2.launchInstance({ instanceType: 'm5.large', subnetId: 'subnet-1' });
      const eni = await attached(ec2, instanceId);
      expect(await ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 2 })).toEqual([
        '10.0.0.192/28',
        '10.0.0.208/28',
      ]);
      // Other tenants and single addresses stay outside the reservation.
      const foreign = ec2.occupyAtRandom('subnet-1', 0.5, () => 0.999);
      expect(foreign).toHaveLength(Math.round(0.5 * 251));
      expect(foreign.every((ip) => Number(ip.split('.')[3]) < 192)).toBe(true);
      const singles = await ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 5 });
      expect(singles.every((ip) => Number(ip.split('.')[3]) < 192)).toBe(true);
      // The reservation's two last /28s are still whole (the last holds the broadcast address).
      expect(await ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 1 })).toEqual([
        '10.0.0.224/28',
      ]);
    });

    it('refuses single addresses when only reserved ones are free, taking none', async () => {
      const ec2 = new FakeEc2({ now: () => 0 });
      ec2.addSubnet('subnet-1', '10.0.0.0/27');
      ec2.reservePrefixes('subnet-1', '10.0.0.16/28');
      const instanceId = ec2.launchInstance({ instanceType: 'm5.24xlarge', subnetId: 'subnet-1' });
      const eni = await attached(ec2, instanceId);
      // Block 0 holds the four reserves and two primaries: 10 single addresses are left.
      const free = ec2.freeAddresses('subnet-1');
      expect(await codeOf(ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 11 }))).toBe(
        'InsufficientFreeAddressesInSubnet',
      );
      expect(ec2.freeAddresses('subnet-1')).toBe(free);
      expect(await ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 10 })).toHaveLength(10);
    });

    it('counts a prefix as one of the ENI slots, with the addresses, against the type limit', async () => {
      const ec2 = new FakeEc2({ now: () => 0 });
      ec2.addSubnet('subnet-1', '10.0.0.0/20');
      const instanceId = ec2.launchInstance({ instanceType: 't3.medium', subnetId: 'subnet-1' });
      const eni = await attached(ec2, instanceId);
      // t3.medium: 6 IPv4 per ENI, so 5 slots: 3 prefixes + 2 addresses.
      await ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 3 });
      await ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 2 });
      expect(await codeOf(ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 1 }))).toBe(
        'PrivateIpAddressLimitExceeded',
      );
      expect(await codeOf(ec2.assignPrivateIpAddresses({ eniId: eni.eniId, count: 1 }))).toBe(
        'PrivateIpAddressLimitExceeded',
      );
    });

    it('gives a prefix back whole, refuses one the ENI does not hold, and refuses non-Nitro types', async () => {
      const { ec2, instanceId } = prefixAccount();
      const eni = await attached(ec2, instanceId);
      const [prefix] = await ec2.assignIpv4Prefixes({ eniId: eni.eniId, count: 1 });
      expect(
        await codeOf(ec2.unassignIpv4Prefixes({ eniId: eni.eniId, prefixes: ['10.0.0.48/28'] })),
      ).toBe('InvalidParameterValue');
      await ec2.unassignIpv4Prefixes({ eniId: eni.eniId, prefixes: [prefix ?? ''] });
      expect(ec2.freePrefixes('subnet-1')).toBe(2);
      expect(ec2.networkInterface(eni.eniId)?.ipv4Prefixes).toEqual([]);

      const xen = prefixAccount('c4.large');
      const other = await attached(xen.ec2, xen.instanceId);
      expect(await codeOf(xen.ec2.assignIpv4Prefixes({ eniId: other.eniId, count: 1 }))).toBe(
        'InvalidParameterValue',
      );
    });

    it('refuses an ENI asking for both addresses and prefixes, and frees prefixes with the ENI', async () => {
      const { ec2 } = prefixAccount();
      const input = {
        subnetId: 'subnet-1',
        securityGroupIds: ['sg-1'],
        description: 'd',
        tags: [],
      };
      expect(
        await codeOf(
          ec2.createNetworkInterface({
            ...input,
            secondaryIpCount: 1,
            ipv4PrefixCount: 1,
            clientToken: 'x',
          }),
        ),
      ).toBe('InvalidParameterCombination');
      const eni = await ec2.createNetworkInterface({
        ...input,
        secondaryIpCount: 0,
        ipv4PrefixCount: 2,
        clientToken: 'y',
      });
      expect(eni.ipv4Prefixes).toHaveLength(2);
      expect(ec2.freePrefixes('subnet-1')).toBe(0);
      await ec2.deleteNetworkInterface({ eniId: eni.eniId });
      expect(ec2.freePrefixes('subnet-1')).toBe(2);
    });
  });
});

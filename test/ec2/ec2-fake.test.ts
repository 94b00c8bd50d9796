import { describe, expect, it } from 'vitest';
import { isInUse, isLimitExceeded, isNotFound } from '../../shared/aws/error-codes.js';
import { FakeEc2 } from '../fakes/ec2-fake.js';

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
});

import { describe, expect, it } from 'vitest';
import { DaySubnets } from '../../bench/eni/day.js';
import { FakeEc2 } from '../../sim/fakes/ec2.js';

describe('DaySubnets.fragmentedNow', () => {
  it('is true while no /28 is free although a /28 worth of addresses is, scattered', () => {
    const ec2 = new FakeEc2({ now: () => 0 });
    const subnets = new DaySubnets(ec2, 'fragmented-90');
    expect(ec2.freePrefixes('subnet-a')).toBe(0);
    expect(ec2.freeAddresses('subnet-a')).toBeGreaterThanOrEqual(16);
    expect(subnets.fragmentedNow('subnet-a')).toBe(true);
  });

  it('is false once fewer addresses are free than a /28 holds: that is exhaustion', () => {
    const ec2 = new FakeEc2({ now: () => 0 });
    const subnets = new DaySubnets(ec2, 'fragmented-90');
    ec2.occupyForeign('subnet-a', 15);
    expect(ec2.freeAddresses('subnet-a')).toBe(15);
    expect(subnets.fragmentedNow('subnet-a')).toBe(false);
  });

  it('is false on the clean day, whose subnets have /28s free', () => {
    const ec2 = new FakeEc2({ now: () => 0 });
    const subnets = new DaySubnets(ec2, 'clean');
    expect(subnets.fragmentedNow('subnet-a')).toBe(false);
  });
});

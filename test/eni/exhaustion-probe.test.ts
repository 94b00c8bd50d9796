import { describe, expect, it } from 'vitest';
import { recheckDue } from '../../shared/eni/exhaustion-probe.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { refillPool } from '../../shared/eni/refill.js';
import { assignIp } from '../../shared/eni/service.js';
import { eniWorld, SUBNET_ID } from '../../sim/eni-world.js';

const { subnetExhaustedMs, exhaustedRecheckMs } = ENI_TIMINGS;

describe('recheckDue', () => {
  it('holds a fresh mark, lets a waiting pod look again once the mark is a recheck interval old', () => {
    const setAt = 1_000_000;
    const until = setAt + subnetExhaustedMs;
    expect(recheckDue(until, setAt)).toBe(false);
    expect(recheckDue(until, setAt + exhaustedRecheckMs - 1)).toBe(false);
    expect(recheckDue(until, setAt + exhaustedRecheckMs)).toBe(true);
    // A lapsed mark is no mark: nothing to look at again.
    expect(recheckDue(until, until)).toBe(false);
  });
});

/** A pool on a node with a few pods, its subnet then marked out of addresses by a refused refill. */
async function markedWorld() {
  const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 }, fake: { recordCalls: true } });
  world.addNode('node-a', 'c5.4xlarge');
  for (let pod = 0; pod < 9; pod++) {
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
  }
  world.ec2.failNext('AssignPrivateIpAddresses', 'InsufficientFreeAddressesInSubnet');
  const pool = await world.store.getPool('node-a');
  if (!pool) throw new Error('no pool');
  expect((await refillPool(world.deps, pool, 1)).outcome).toBe('failed');
  const markedUntil = await world.store.subnetShortUntil(SUBNET_ID, 'addresses');
  expect(markedUntil).toBeGreaterThan(world.clock.now);
  const calls = (action: string) => world.ec2.calls.filter((c) => c.action === action).length;
  return { world, pool, markedUntil, calls };
}

describe('a subnet marked exhausted, for a waiting pod', () => {
  it('is not read again within the recheck interval, nor by a refill no pod waits for', async () => {
    const { world, pool, calls } = await markedWorld();
    const before = { describe: calls('DescribeSubnets'), mutating: world.ec2.mutatingCalls() };
    world.clock.now += exhaustedRecheckMs - 1;
    expect((await refillPool(world.deps, pool, 1)).outcome).toBe('not-needed');
    world.clock.now += 1;
    expect((await refillPool(world.deps, pool, 0)).outcome).toBe('not-needed');
    expect(calls('DescribeSubnets')).toBe(before.describe);
    expect(world.ec2.mutatingCalls()).toBe(before.mutating);
  });

  it('grows the pool once EC2 counts free addresses again, before the mark lapses', async () => {
    const { world, pool, markedUntil, calls } = await markedWorld();
    const describes = calls('DescribeSubnets');
    world.clock.now += exhaustedRecheckMs;
    expect(world.clock.now).toBeLessThan(markedUntil);
    expect((await refillPool(world.deps, pool, 1)).outcome).toBe('grown');
    expect(calls('DescribeSubnets')).toBe(describes + 1);
  });

  it('renews the mark when the subnet is still empty, so it is read once per interval', async () => {
    const { world, pool, markedUntil, calls } = await markedWorld();
    const taken = world.ec2.occupyForeign(SUBNET_ID, 0);
    expect(taken.length).toBeGreaterThan(0);
    const before = { describe: calls('DescribeSubnets'), mutating: world.ec2.mutatingCalls() };
    world.clock.now += exhaustedRecheckMs;
    expect((await refillPool(world.deps, pool, 1)).outcome).toBe('not-needed');
    expect(calls('DescribeSubnets')).toBe(before.describe + 1);
    expect(world.ec2.mutatingCalls()).toBe(before.mutating);
    const renewed = await world.store.subnetShortUntil(SUBNET_ID, 'addresses');
    expect(renewed).toBe(world.clock.now + subnetExhaustedMs);
    expect(renewed).toBeGreaterThan(markedUntil);
    // A second waiting pod right after finds the renewed mark fresh: no second read.
    expect((await refillPool(world.deps, pool, 1)).outcome).toBe('not-needed');
    expect(calls('DescribeSubnets')).toBe(before.describe + 1);
    // Once the other tenant leaves, the next look a recheck interval on grows the pool.
    world.ec2.releaseForeign(SUBNET_ID, taken);
    world.clock.now += exhaustedRecheckMs;
    expect((await refillPool(world.deps, pool, 1)).outcome).toBe('grown');
  });
});

import { describe, expect, it } from 'vitest';
import { poolStats, surgeOf } from '../../shared/eni/policy.js';
import { InProcessRefills, refillAhead } from '../../shared/eni/refill.js';
import { assignIp } from '../../shared/eni/service.js';
import { eniWorld, SUBNET_ID } from '../../sim/eni-world.js';

async function readiness(world: ReturnType<typeof eniWorld>, node: string) {
  const pool = await world.store.getPool(node);
  if (!pool) throw new Error(`no pool for ${node}`);
  const state = await world.store.loadNode(node);
  const now = world.clock.now;
  return {
    ready: poolStats(pool, state.ips, now, world.deps.policy.cooldownMs, world.deps.policy.mode)
      .ready,
    surge: surgeOf(state.ips, now),
  };
}

describe('refill ahead of demand', () => {
  it('asks for a background refill once an assign leaves fewer ready than minIdle + surge', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    world.addNode('node-a', 'c5.4xlarge');
    // The first pod refills on demand: maxIdle + 1 addresses, one of them its own.
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    for (let pod = 1; pod <= 2; pod++) {
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
      // 8 - pod ready against a threshold of minIdle + surge = 2 + (pod + 1): not yet.
      expect(world.refillRequests).toEqual([]);
    }
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p3' });
    expect(await readiness(world, 'node-a')).toEqual({ ready: 5, surge: 4 });
    expect(world.refillRequests).toEqual(['node-a']);
  });

  it('grows the pool in one call to maxIdle + surge, and answers not-needed when it is there', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    world.addNode('node-a', 'c5.4xlarge');
    for (let pod = 0; pod < 5; pod++) {
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
    }
    const before = world.ec2.mutatingCalls();
    expect((await refillAhead(world.deps, 'node-a')).outcome).toBe('grown');
    expect(world.ec2.mutatingCalls()).toBe(before + 1);
    expect(await readiness(world, 'node-a')).toEqual({ ready: 13, surge: 5 });
    expect((await refillAhead(world.deps, 'node-a')).outcome).toBe('not-needed');
    expect(world.ec2.mutatingCalls()).toBe(before + 1);
  });

  it('leaves a pool alone while another writer holds its lease, and ignores unknown nodes', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    world.addNode('node-a', 'c5.4xlarge');
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    const now = world.clock.now;
    expect(await world.store.tryLease('node-a', 'the-pass', now, now + 60_000)).toBe(true);
    const before = world.ec2.mutatingCalls();
    expect((await refillAhead(world.deps, 'node-a')).outcome).toBe('busy');
    expect(world.ec2.mutatingCalls()).toBe(before);
    expect((await refillAhead(world.deps, 'node-zz')).outcome).toBe('gone');
  });

  it('reports a refill EC2 refused as failed, with the failure, and marks the subnet', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    world.addNode('node-a', 'c5.4xlarge');
    for (let pod = 0; pod < 5; pod++) {
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
    }
    world.ec2.failNext('AssignPrivateIpAddresses', 'InsufficientFreeAddressesInSubnet');
    const result = await refillAhead(world.deps, 'node-a');
    expect(result.outcome).toBe('failed');
    expect(result.failures).toEqual([
      expect.objectContaining({
        action: 'AssignPrivateIpAddresses',
        code: 'InsufficientFreeAddressesInSubnet',
      }),
    ]);
    expect(await world.store.subnetShortUntil(SUBNET_ID, 'addresses')).toBeGreaterThan(
      world.clock.now,
    );
    // While the subnet is marked, the next refill does not ask EC2 again.
    const calls = world.ec2.mutatingCalls();
    expect((await refillAhead(world.deps, 'node-a')).outcome).toBe('not-needed');
    expect(world.ec2.mutatingCalls()).toBe(calls);
  });
});

describe('InProcessRefills', () => {
  it('runs one refill per node at a time, off the request path, and reports failures', async () => {
    const runs: string[] = [];
    const failures: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const refills = new InProcessRefills(
      async (node) => {
        runs.push(node);
        await gate;
        if (node === 'bad') throw new Error('EC2 said no');
      },
      (node, error) => failures.push(`${node}: ${(error as Error).message}`),
    );
    await refills.request('a');
    await refills.request('a');
    await refills.request('bad');
    // The requests returned while both refills were still running.
    expect(runs).toEqual(['a', 'bad']);
    expect(failures).toEqual([]);
    release();
    await refills.settled();
    expect(runs).toEqual(['a', 'bad']);
    expect(failures).toEqual(['bad: EC2 said no']);
    // Once one has ended, the node can be refilled again.
    await refills.request('a');
    await refills.settled();
    expect(runs).toEqual(['a', 'bad', 'a']);
  });
});

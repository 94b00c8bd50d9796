/**
 * Prefix mode end to end on the EC2 fake: /28s assigned and given back whole, the single-address
 * fallback on a fragmented subnet and the way back to prefixes, maxPods, and reconciliation of
 * prefixes berth does not know.
 */

import { describe, expect, it } from 'vitest';
import { prefixAddresses } from '../../shared/ec2/network.js';
import { BudgetedEc2Network, type RateBudget } from '../../shared/ec2/rate-budget.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { refillPool } from '../../shared/eni/refill.js';
import { assignIp, releaseIp } from '../../shared/eni/service.js';
import { eniWorld, SUBNET_ID } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';

/** A deterministic uniform source for the fake's scattering. */
function lcg(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 48271) % 2147483647;
    return state / 2147483647;
  };
}

const PREFIX_MODE = { mode: 'prefix', minIdle: 2, maxIdle: 8 };

async function berthEnis(world: ReturnType<typeof eniWorld>, node: string) {
  const state = await world.store.loadNode(node);
  return state.enis.map((eni) => world.ec2.networkInterface(eni.eniId));
}

describe('ENI pools in prefix mode', () => {
  it('serves the first pod from a /28 delegated to the primary ENI, 16 addresses for one call', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    world.addNode('node-a', 'm5.large');
    const answer = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    const [eni] = await berthEnis(world, 'node-a');
    expect(eni?.attachment?.deviceIndex).toBe(0);
    expect(world.ec2.mutatingCalls()).toBe(1);
    expect(eni?.ipv4Prefixes).toHaveLength(1);
    expect(eni?.secondaryIps).toEqual([]);
    expect(prefixAddresses(eni?.ipv4Prefixes[0] ?? '')).toContain(answer.ip);
    const state = await world.store.loadNode('node-a');
    expect(state.ips).toHaveLength(16);
    expect(new Set(state.ips.map((ip) => ip.prefix))).toEqual(new Set(eni?.ipv4Prefixes));
    // The next 15 pods need no EC2 call beyond one top-up ahead of demand.
    const before = world.ec2.mutatingCalls();
    for (let pod = 1; pod < 16; pod++) {
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
    }
    expect(world.ec2.mutatingCalls() - before).toBeLessThanOrEqual(1);
  });

  it('falls back to single addresses on a fragmented subnet, and returns to prefixes once it can', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    const foreign = world.ec2.scatterForeign(SUBNET_ID, 1, lcg(11));
    expect(world.ec2.freePrefixes(SUBNET_ID)).toBe(0);
    world.addNode('node-a', 'm5.large');
    // No /28 anywhere: the pod is still served at once, from single addresses.
    const answer = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    const state = await world.store.loadNode('node-a');
    expect(state.ips.find((ip) => ip.ip === answer.ip)?.prefix).toBeUndefined();
    expect(await world.store.subnetShortUntil(SUBNET_ID, 'prefixes')).toBeGreaterThan(
      world.clock.now,
    );
    expect(world.ec2.calls.some((c) => c.code === 'InsufficientCidrBlocks')).toBe(true);

    // Other tenants leave; once the mark lapses, growth asks for prefixes again.
    world.ec2.releaseForeign(SUBNET_ID, foreign);
    world.clock.now += ENI_TIMINGS.prefixFallbackMs + 1_000;
    for (let pod = 1; pod < 30; pod++) {
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
    }
    const enis = await berthEnis(world, 'node-a');
    expect(enis.flatMap((eni) => eni?.ipv4Prefixes ?? []).length).toBeGreaterThan(0);
  });

  it('falls back within the same refill when the subnet runs out of /28s under an ENI it already has', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    world.addNode('node-a', 'm5.large');
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    // The node's ENI has its /28; now other tenants leave no whole /28 in the subnet.
    world.ec2.scatterForeign(SUBNET_ID, 1, lcg(5));
    expect(world.ec2.freePrefixes(SUBNET_ID)).toBe(0);
    const pool = await world.store.getPool('node-a');
    if (!pool) throw new Error('node-a has no pool');
    const before = (await world.store.loadNode('node-a')).ips.length;
    // Pods waiting beyond the /28: the prefix assign on the ENI is refused, and single addresses
    // on that same ENI must follow in this refill, on the records as the refused assign left them.
    const result = await refillPool(world.deps, pool, 20);
    expect(result.failures.map((f) => f.code)).toEqual(['InsufficientCidrBlocks']);
    expect(result.outcome).toBe('grown');
    const after = await world.store.loadNode('node-a');
    const singles = after.ips.filter((ip) => ip.prefix === undefined);
    expect(singles.length).toBeGreaterThan(0);
    expect(after.ips.length).toBe(before + singles.length);
    // The fallback read the marked ENI back, found nothing unseen, and cleared the mark.
    expect(after.enis.every((eni) => eni.mutatingAt === 0)).toBe(true);
  });

  it('gives an ENI its mark back when the budget refused the assign before sending it', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    world.addNode('node-a', 'm5.large');
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    const pool = await world.store.getPool('node-a');
    if (!pool) throw new Error('node-a has no pool');
    // A budget with nothing left for the next minute: every call is refused before it is sent.
    const spent: RateBudget = { take: async () => ({ granted: false, retryAfterMs: 60_000 }) };
    const deps = {
      ...world.deps,
      ec2: new BudgetedEc2Network(world.ec2, {
        budget: spent,
        now: () => world.clock.now,
        sleep: async (ms) => {
          world.clock.now += ms;
        },
        random: () => 0,
      }),
    };
    const before = world.ec2.calls.length;
    await expect(refillPool(deps, pool, 20)).rejects.toThrow(/budget/);
    expect(world.ec2.calls.length).toBe(before);
    // Nothing was sent, so nothing can have landed: no later assign need read the ENI back.
    const { enis } = await world.store.loadNode('node-a');
    expect(enis.map((eni) => eni.mutatingAt)).toEqual([0]);
  });

  it('never grows a pool past the node maxPods, rounded up to a whole prefix', async () => {
    const world = eniWorld({
      eni: { mode: 'prefix', minIdle: 4, maxIdle: 40 },
      subnetCidr: '10.0.0.0/22',
    });
    world.addNode('node-a', 'm5.large', 20);
    for (let pod = 0; pod < 20; pod++) {
      await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
      await runEniPass(world.deps);
    }
    const state = await world.store.loadNode('node-a');
    expect(state.ips.length).toBe(32);
    expect((await world.store.getPool('node-a'))?.maxPods).toBe(20);
  });

  it('gives an idle prefix back whole, and never one with an address a pod holds', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    world.addNode('node-a', 'm5.large');
    const held: { ip: string; pod: string }[] = [];
    for (let pod = 0; pod < 40; pod++) {
      const answer = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${pod}` });
      held.push({ ip: answer.ip, pod: `p${pod}` });
    }
    // All but one pod leave; the one left keeps its prefix whatever the pass trims.
    const [keeper, ...leaving] = held;
    world.cluster.withPods(boundPod('g', keeper?.pod ?? '', 'node-a'));
    for (const { ip, pod } of leaving) {
      await releaseIp(world.deps, 'node-a', ip, { namespace: 'g', pod });
    }
    world.clock.now += ENI_TIMINGS.trimIdleAfterMs + 60_000;
    await runEniPass(world.deps);
    await runEniPass(world.deps);
    const state = await world.store.loadNode('node-a');
    const prefixes = new Set(state.ips.map((ip) => ip.prefix));
    const keeperPrefix = state.ips.find((ip) => ip.ip === keeper?.ip)?.prefix;
    expect(keeperPrefix).toBeDefined();
    expect(prefixes.has(keeperPrefix)).toBe(true);
    expect(state.ips.find((ip) => ip.ip === keeper?.ip)?.state).toBe('assigned');
    // Trimmed to whole prefixes within the idle band: every recorded prefix is whole in EC2.
    const inEc2 = (await berthEnis(world, 'node-a')).flatMap((eni) => eni?.ipv4Prefixes ?? []);
    expect(new Set(inEc2)).toEqual(prefixes);
    for (const prefix of prefixes) {
      expect(state.ips.filter((ip) => ip.prefix === prefix)).toHaveLength(16);
    }
    expect(state.ips.length).toBeLessThan(40);
  });

  it('gives back a prefix on a berth ENI that berth has no record of, and keeps its own', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    world.ec2.occupyPrimary(world.addNode('node-a', 'm5.large'));
    world.cluster.withPods(boundPod('g', 'p0', 'node-a'));
    const answer = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    const eni = (await berthEnis(world, 'node-a')).find((e) => e?.attachment?.deviceIndex !== 0);
    const own = eni?.ipv4Prefixes[0];
    const [stray] = await world.ec2.assignIpv4Prefixes({ eniId: eni?.eniId ?? '', count: 1 });
    world.clock.now += ENI_TIMINGS.reconcileGraceMs + 1_000;
    const summary = await runEniPass(world.deps);
    expect(world.ec2.networkInterface(eni?.eniId ?? '')?.ipv4Prefixes).toEqual([own]);
    expect(summary.reconcile.unknownIpsUnassigned).toBe(16);
    const state = await world.store.loadNode('node-a');
    expect(state.ips.some((ip) => prefixAddresses(stray ?? '').includes(ip.ip))).toBe(false);
    expect(state.ips.find((ip) => ip.ip === answer.ip)?.state).toBe('assigned');
  });

  it('keeps a prefix another owner put on the primary ENI: never given back, never handed out', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    world.addNode('node-a', 'm5.large');
    world.cluster.withPods(boundPod('g', 'p0', 'node-a'));
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p0' });
    const [primary] = await berthEnis(world, 'node-a');
    const [theirs] = await world.ec2.assignIpv4Prefixes({ eniId: primary?.eniId ?? '', count: 1 });
    world.clock.now += ENI_TIMINGS.reconcileGraceMs + 1_000;
    const summary = await runEniPass(world.deps);
    expect(summary.reconcile.unknownIpsUnassigned).toBe(0);
    expect(world.ec2.networkInterface(primary?.eniId ?? '')?.ipv4Prefixes).toContain(theirs);
    const state = await world.store.loadNode('node-a');
    expect(state.enis.find((eni) => eni.primary)?.foreign).toEqual([theirs]);
    expect(state.ips.some((ip) => prefixAddresses(theirs ?? '').includes(ip.ip))).toBe(false);
  });

  it('uses single addresses on a node whose type takes no prefixes', async () => {
    const world = eniWorld({ eni: PREFIX_MODE, subnetCidr: '10.0.0.0/22' });
    world.addNode('node-x', 'c4.large');
    await assignIp(world.deps, 'node-x', { namespace: 'g', pod: 'p0' });
    const state = await world.store.loadNode('node-x');
    expect(state.ips.length).toBeGreaterThan(0);
    expect(state.ips.every((ip) => ip.prefix === undefined)).toBe(true);
    expect(world.ec2.calls.filter((c) => c.outcome === 'error')).toEqual([]);
  });
});

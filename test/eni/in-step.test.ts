import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BERTH_TAGS, primaryInterfaceOf, tagValue } from '../../shared/ec2/network.js';
import type { EniDeps } from '../../shared/eni/deps.js';
import { type PoolLook, poolInStep } from '../../shared/eni/in-step.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { applyPlan, newTally } from '../../shared/eni/pool-actions.js';
import { newReconcileTally, reconcilePool } from '../../shared/eni/reconcile.js';
import { planStoredPool } from '../../shared/eni/refill.js';
import { assignIp, releaseIp } from '../../shared/eni/service.js';
import type { NodeWrite } from '../../shared/eni/store.js';
import { type EniWorld, eniWorld } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';

/** The in-memory store, counting every write (pool or node item). */
class WriteCountingStore extends InMemoryEniStore {
  writes = 0;
  override async commit(node: string, writes: readonly NodeWrite[]) {
    this.writes++;
    return super.commit(node, writes);
  }
  override async putPool(...args: Parameters<InMemoryEniStore['putPool']>) {
    this.writes++;
    return super.putPool(...args);
  }
  override async deletePool(node: string) {
    this.writes++;
    return super.deletePool(node);
  }
}

/** What the pass would see of node-a right now. */
async function lookAt(world: EniWorld, deps: EniDeps = world.deps): Promise<PoolLook> {
  const pool = await world.store.getPool('node-a');
  if (!pool) throw new Error('node-a has no pool');
  const state = await world.store.loadNode('node-a');
  const livePods = new Set(
    [...world.cluster.pods.values()]
      .filter((pod) => pod.spec?.nodeName === 'node-a')
      .map((pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`),
  );
  const instance = world.ec2.instance(pool.instanceId);
  const primary = instance && primaryInterfaceOf(instance);
  return {
    pool,
    state,
    // The primary ENI as DescribeInstances shows it; berth's own ENIs as DescribeNetworkInterfaces
    // filtered by berth's tags does.
    ...(primary ? { primary } : {}),
    interfaces: world.ec2
      .allInterfaces()
      .filter(
        (eni) =>
          tagValue(eni.tags, BERTH_TAGS.cluster) === 'test' &&
          eni.attachment?.instanceId === pool.instanceId,
      ),
    livePods,
    plan: await planStoredPool(deps, pool, state, world.clock.now),
  };
}

/**
 * A pool the pass has just brought in step: three pods hold addresses, the rest idle, on the
 * primary ENI (beside the 25 addresses another owner put there) and on one ENI berth made.
 */
async function steadyWorld(store = new InMemoryEniStore()) {
  const world = eniWorld({ eni: { minIdle: 2, maxIdle: 6 }, store });
  const instanceId = world.addNode('node-a', 'c5.4xlarge');
  world.ec2.occupyPrimary(instanceId, 25);
  await runEniPass(world.deps);
  for (let i = 0; i < 3; i++) {
    world.cluster.withPods(boundPod('g', `p${i}`, 'node-a'));
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` });
  }
  world.clock.now += 60_000;
  await runEniPass(world.deps);
  return world;
}

describe('poolInStep', () => {
  it('says a pool the pass just refilled is in step', async () => {
    expect(poolInStep(await lookAt(await steadyWorld()))).toBe(true);
  });

  it('says out of step when the records and EC2 disagree, or work is in flight', async () => {
    const world = await steadyWorld();
    const look = await lookAt(world);
    const [first] = look.state.ips;
    const [eni] = look.state.enis;
    if (!first || !eni) throw new Error('the steady pool has no addresses');
    const outOfStep: [string, PoolLook][] = [
      ['a draining pool', { ...look, pool: { ...look.pool, draining: true } }],
      [
        'an address EC2 no longer has',
        {
          ...look,
          state: { ...look.state, ips: [...look.state.ips, { ...first, ip: '10.0.0.250' }] },
        },
      ],
      [
        'an address EC2 has that the store lacks',
        { ...look, state: { ...look.state, ips: look.state.ips.slice(1) } },
      ],
      [
        'an address being drained',
        {
          ...look,
          state: {
            ...look.state,
            ips: look.state.ips.map((ip) =>
              ip === first ? { ...ip, state: 'draining' as const } : ip,
            ),
          },
        },
      ],
      ['an address held by a pod that left', { ...look, livePods: new Set(['g/p0', 'g/p1']) }],
      ['an ENI EC2 does not show attached', { ...look, interfaces: [] }],
      [
        'a primary ENI the pool has not taken in',
        { ...look, state: { ...look.state, enis: look.state.enis.filter((e) => !e.primary) } },
      ],
      [
        "another owner's address gone from the primary ENI",
        {
          ...look,
          ...(look.primary
            ? { primary: { ...look.primary, secondaryIps: look.primary.secondaryIps.slice(1) } }
            : {}),
        },
      ],
      [
        'an assign on its way',
        { ...look, state: { ...look.state, enis: [{ ...eni, mutatingAt: world.clock.now }] } },
      ],
      [
        'an ENI creation on its way',
        {
          ...look,
          state: {
            ...look.state,
            intents: [
              {
                kind: 'intent',
                clientToken: 't',
                subnetId: 'subnet-0a',
                securityGroupIds: [],
                secondaryIpCount: 4,
                createdAt: world.clock.now,
                version: 1,
              },
            ],
          },
        },
      ],
      [
        'a plan with growth',
        { ...look, plan: { ...look.plan, create: [{ unit: 'ip', count: 1 }] } },
      ],
    ];
    for (const [why, changed] of outOfStep) {
      expect({ why, inStep: poolInStep(changed) }).toEqual({ why, inStep: false });
    }
  });

  it('never says in step where the leased pass would write or call EC2', async () => {
    let looked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant('assign' as const), pod: fc.nat(7) }),
            fc.record({ op: fc.constant('release' as const), pod: fc.nat(7) }),
            fc.record({ op: fc.constant('leave' as const), pod: fc.nat(7) }),
            fc.record({
              op: fc.constant('wait' as const),
              ms: fc.integer({ min: 0, max: 200_000 }),
            }),
            fc.record({ op: fc.constant('pass' as const) }),
            fc.record({ op: fc.constant('unassignBehindBerth' as const), pick: fc.nat() }),
          ),
          { maxLength: 25 },
        ),
        async (ops) => {
          const store = new WriteCountingStore();
          const world = await steadyWorld(store);
          for (const step of ops) {
            const pod = 'pod' in step ? `p${step.pod}` : '';
            if (step.op === 'assign') {
              world.cluster.withPods(boundPod('g', pod, 'node-a'));
              await assignIp(world.deps, 'node-a', { namespace: 'g', pod }).catch(() => undefined);
            } else if (step.op === 'release') {
              const held = (await world.store.loadNode('node-a')).ips.find(
                (ip) => ip.pod === `g/${pod}`,
              );
              if (held) await releaseIp(world.deps, 'node-a', held.ip, { namespace: 'g', pod });
            } else if (step.op === 'leave') {
              world.cluster.pods.delete(`g/${pod}`);
            } else if (step.op === 'wait') {
              world.clock.now += step.ms;
            } else if (step.op === 'pass') {
              await runEniPass(world.deps);
            } else {
              const eni = world.ec2.allInterfaces().find((e) => e.secondaryIps.length > 0);
              const ip = eni?.secondaryIps[step.pick % eni.secondaryIps.length];
              if (eni && ip)
                await world.ec2.unassignPrivateIpAddresses({ eniId: eni.eniId, ips: [ip] });
            }
            const look = await lookAt(world);
            if (!poolInStep(look)) continue;
            looked++;
            // What the pass does under the lease, on the same state: it must do nothing.
            const writes = store.writes;
            const calls = world.ec2.mutatingCalls();
            const actions = newTally();
            const deps = world.deps;
            await reconcilePool(
              deps,
              look.pool,
              look.state,
              {
                interfaces: look.interfaces ?? [],
                ...(look.primary ? { primary: look.primary } : {}),
                livePods: look.livePods,
              },
              actions,
              newReconcileTally(),
            );
            await applyPlan(deps, look.pool, look.state, look.plan, actions);
            expect(store.writes - writes).toBe(0);
            expect(world.ec2.mutatingCalls() - calls).toBe(0);
          }
        },
      ),
      { numRuns: 60 },
    );
    // The property held where it matters: many steps found the pool in step.
    expect(looked).toBeGreaterThan(60);
  });
});

import { describe, expect, it } from 'vitest';
import { targetGroupName } from '../../shared/fronts/nlb-front.js';
import { MAX_HEALTH_READS_PER_PASS, tellReady } from '../../shared/fronts/readiness.js';
import type { ListenerSlotRecord } from '../../shared/fronts/store.js';
import { FakeElbv2, NLB_REGISTRATION_DELAY_MS } from '../../sim/fakes/elbv2.js';

const NLB =
  'arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/games/0123456789abcdef';

/** `count` bound slots of live owners, each with its target group and registered target. */
async function boundSlots(count: number) {
  let now = 1_000_000;
  // Room for the setup's calls: the buckets are not what this test is about.
  const roomy = { capacity: 1_000, refillPerSecond: 1_000 };
  const elbv2 = new FakeElbv2({
    now: () => now,
    healthCheck: () => true,
    buckets: { describe: roomy, registration: roomy, mutating: roomy },
    accountBucket: roomy,
  });
  elbv2.addVpc('vpc-1', '10.0.0.0/16');
  const records: ListenerSlotRecord[] = [];
  for (let i = 0; i < count; i++) {
    const allocationId = `a${String(i).padStart(19, '0')}`;
    const target = { ip: `10.0.${Math.floor(i / 200)}.${(i % 200) + 10}`, port: 7000 };
    const record: ListenerSlotRecord = {
      slot: { loadBalancerArn: NLB, port: 10_000 + i },
      owner: { allocationId, namespace: 'games', pod: `gs-${i}` },
      portName: 'game',
      protocol: 'UDP',
      claimedAt: now,
      state: 'bound',
      target,
      boundAt: now + i,
    };
    records.push(record);
    const group = await elbv2.createTargetGroup({
      name: targetGroupName('prod', allocationId, 'game'),
      protocol: 'UDP',
      port: 7000,
      vpcId: 'vpc-1',
      tags: [],
    });
    await elbv2.registerTargets(group.arn, [target]);
  }
  now += NLB_REGISTRATION_DELAY_MS;
  const owners = new Map(
    records.map((r) => [
      r.owner.allocationId,
      { pods: [{ metadata: { name: r.owner.pod, namespace: 'games' } }] },
    ]),
  );
  return { elbv2, records, owners, now: () => now };
}

describe('fronts readiness', () => {
  it('reads the health of at most a bounded number of target groups a pass, newest first', async () => {
    const t = await boundSlots(MAX_HEALTH_READS_PER_PASS + 5);
    const before = t.elbv2.counts.get('DescribeTargetHealth') ?? 0;
    const serving: string[] = [];
    const told = await tellReady(
      {
        cluster: 'prod',
        store: {
          markServing: async (_slot, allocationId) => {
            serving.push(allocationId);
            return true;
          },
        },
        // The pods carry no fronted ports: none is told, which this test does not look at.
        kube: { patchPod: async () => ({}) },
        elbv2: t.elbv2,
        now: t.now,
      },
      { owners: t.owners, slots: t.records, destinations: new Map() },
    );
    expect(told).toEqual({ told: 0, failed: 0 });
    expect((t.elbv2.counts.get('DescribeTargetHealth') ?? 0) - before).toBe(
      MAX_HEALTH_READS_PER_PASS,
    );
    // The five bound first wait for a later pass.
    const newest = t.records.slice(5).map((r) => r.owner.allocationId);
    expect(serving.sort()).toEqual(newest.sort());
  });
});

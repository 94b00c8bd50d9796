import { describe, expect, it } from 'vitest';
import {
  goMapRange,
  guideMinimumIpTargets,
  runVpcCni,
  vpcCniSweep,
  WARM_IP_TARGETS,
} from '../../bench/eni/vpc-cni.js';
import { type PodEvent, peakPodsByType } from '../../bench/eni/workload.js';
import { seededRandom } from '../../sim/random.js';
import { calls, node, pods } from './eni-events.js';

/** The guide's own advice for c5.large nodes peaking at 8 pods and m5.xlarge at 16. */
const GUIDE = vpcCniSweep({ 'c5.large': 8, 'm5.xlarge': 16 })[0]?.settings;
if (!GUIDE) throw new Error('no sweep');

describe('VPC CNI ipamd model', () => {
  it("tags the primary ENI once per node at start, and fills it to its node group's minimum", async () => {
    const nodes = [node('a', 'c5.large'), node('b', 'm5.xlarge')];
    const run = await runVpcCni('prefix', GUIDE, 'clean', nodes, [], { untilSecond: 60 });

    expect(calls(run, 'CreateTags')).toBe(2);
    // One AssignPrivateIpAddresses per primary ENI: MINIMUM_IP_TARGET=10 is one /28 on the
    // c5.large, 18 two on the m5.xlarge (ceil(18 / 16), `datastoreTargetState`).
    expect(calls(run, 'AssignPrivateIpAddresses')).toBe(2);
    expect(calls(run, 'CreateNetworkInterface')).toBe(0);
    expect(run.idleByInstanceType).toMatchObject({ 'c5.large': 16, 'm5.xlarge': 32 });
  });

  it('frees prefixes over the IP targets once pods leave, down to the minimum', async () => {
    // 20 pods on a c5.large (MINIMUM_IP_TARGET=10, WARM_IP_TARGET=2) take a second /28; once
    // they leave and their addresses cool, one UnassignPrivateIpAddresses frees the prefixes
    // beyond ceil((0 + 2) / 16) and ceil(10 / 16): one /28 stays.
    const run = await runVpcCni(
      'prefix',
      GUIDE,
      'clean',
      [node('a', 'c5.large')],
      pods(20, 10, 100),
      {
        untilSecond: 241,
      },
    );

    expect(run.podsPerNode['c5.large']?.peak).toBe(20);
    expect(run.waitingPods).toBe(0);
    // The minimum's /28, then one more at 15 pods (2 - 1 available short of WARM_IP_TARGET).
    expect(calls(run, 'AssignPrivateIpAddresses')).toBe(2);
    // One /28 freed, not both: freeing both would leave the pool short and assign again.
    expect(calls(run, 'UnassignPrivateIpAddresses')).toBe(1);
  });

  it('on a subnet with no free /28 retries with one prefix, then tries to create an ENI, then pauses 120 s', async () => {
    const run = await runVpcCni('prefix', GUIDE, 'fragmented-80', [node('a', 'c5.large')], [], {
      untilSecond: 100,
    });

    expect(calls(run, 'AssignPrivateIpAddresses')).toBe(2);
    expect(calls(run, 'DescribeSubnets')).toBe(1);
    expect(calls(run, 'CreateNetworkInterface')).toBe(1);

    const later = await runVpcCni('prefix', GUIDE, 'fragmented-80', [node('a', 'c5.large')], [], {
      untilSecond: 130,
    });
    expect(calls(later, 'AssignPrivateIpAddresses')).toBe(4);
    expect(calls(later, 'CreateNetworkInterface')).toBe(2);
  });

  it('grows prefixes from a reservation on the same fragmented subnet', async () => {
    const run = await runVpcCni(
      'prefix',
      GUIDE,
      'fragmented-80',
      [node('a', 'c5.large')],
      pods(20, 30),
      { reservation: true, untilSecond: 300 },
    );

    expect(calls(run, 'CreateNetworkInterface')).toBe(0);
    expect(run.podsPerNode['c5.large']?.peak).toBe(20);
  });

  it('walks a Go map from a random start: every key once per range, starts spread over the keys', () => {
    const keys = ['a', 'b', 'c', 'd'];
    const random = seededRandom(1);
    const starts = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const order = [...goMapRange(keys, random)];
      expect([...order].sort()).toEqual(keys);
      starts.add(order[0] ?? '');
    }
    expect(starts.size).toBe(keys.length);
  });

  it('sweeps every WARM_IP_TARGET with both minimums, prefix mode and WARM_PREFIX_TARGET=1', () => {
    const sweep = vpcCniSweep({ 't3.medium': 8, 'c5.4xlarge': 64 });

    expect(sweep).toHaveLength(WARM_IP_TARGETS.length * 2);
    expect(sweep[0]?.name).toBe('vpc-cni prefix WARM_IP_TARGET=2 MINIMUM_IP_TARGET=peak+2');
    expect(sweep[0]?.settings).toMatchObject({
      warmIpTarget: 2,
      minimumIpTargetByType: { 't3.medium': 10, 'c5.4xlarge': 66 },
      prefixDelegation: true,
      warmPrefixTarget: 1,
    });
    expect(sweep.map((run) => run.settings.warmIpTarget)).toEqual([
      ...WARM_IP_TARGETS,
      ...WARM_IP_TARGETS,
    ]);
    expect(new Set(sweep.map((run) => run.name)).size).toBe(sweep.length);
  });

  it("sets each node group's MINIMUM_IP_TARGET to its type's peak pods + 2, and twice that", () => {
    expect(guideMinimumIpTargets({ 'c5.large': 8, 'm5.xlarge': 16 })).toEqual([
      { label: 'peak+2', byType: { 'c5.large': 10, 'm5.xlarge': 18 } },
      { label: '2x(peak+2)', byType: { 'c5.large': 20, 'm5.xlarge': 36 } },
    ]);
  });

  it("reads each type's peak pods off the events: the most one node runs at once, departures first", () => {
    const nodes = [node('a', 'm5.xlarge'), node('b', 'c5.large'), node('c', 'c5.large')];
    const at = (t: number, kind: PodEvent['kind'], n: number, pod: string): PodEvent => ({
      at: t,
      kind,
      node: n,
      pod,
    });
    const events = [
      // Node 1 runs 2 at once, node 2 runs 3, never all on one node: c5.large peaks at 3.
      at(1, 'arrive', 1, 'p1'),
      at(2, 'arrive', 1, 'p2'),
      at(2, 'arrive', 2, 'q1'),
      at(3, 'arrive', 2, 'q2'),
      at(4, 'depart', 1, 'p1'),
      at(4, 'arrive', 2, 'q3'),
      // Node 0: one leaves as the next arrives at the same second, so 1 at once.
      at(5, 'arrive', 0, 'r1'),
      at(6, 'depart', 0, 'r1'),
      at(6, 'arrive', 0, 'r2'),
    ];

    const peaks = peakPodsByType(nodes, events);

    // FLEET order: c5.large before m5.xlarge.
    expect(Object.entries(peaks)).toEqual([
      ['c5.large', 3],
      ['m5.xlarge', 1],
    ]);
    expect(guideMinimumIpTargets(peaks)[0]?.byType).toEqual({ 'c5.large': 5, 'm5.xlarge': 3 });
  });
});

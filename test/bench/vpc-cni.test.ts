import { describe, expect, it } from 'vitest';
import { goMapRange, runVpcCni, VPC_CNI_RUNS } from '../../bench/eni/vpc-cni.js';
import { seededRandom } from '../../sim/random.js';
import { calls, node, pods } from './eni-events.js';

describe('VPC CNI ipamd model', () => {
  it('tags the primary ENI once per node at start, and fills it before creating an ENI', async () => {
    const nodes = [node('a', 'c5.large'), node('b', 'm5.xlarge')];
    const run = await runVpcCni('prefix', VPC_CNI_RUNS.prefixWarmIp, 'clean', nodes, [], {
      untilSecond: 60,
    });

    expect(calls(run, 'CreateTags')).toBe(2);
    // MINIMUM_IP_TARGET=10 takes one /28 on each primary ENI.
    expect(calls(run, 'AssignPrivateIpAddresses')).toBe(2);
    expect(calls(run, 'CreateNetworkInterface')).toBe(0);
  });

  it('on a subnet with no free /28 retries with one prefix, then tries to create an ENI, then pauses 120 s', async () => {
    const run = await runVpcCni(
      'prefix',
      VPC_CNI_RUNS.prefixWarmIp,
      'fragmented-80',
      [node('a', 'c5.large')],
      [],
      { untilSecond: 100 },
    );

    expect(calls(run, 'AssignPrivateIpAddresses')).toBe(2);
    expect(calls(run, 'DescribeSubnets')).toBe(1);
    expect(calls(run, 'CreateNetworkInterface')).toBe(1);

    const later = await runVpcCni(
      'prefix',
      VPC_CNI_RUNS.prefixWarmIp,
      'fragmented-80',
      [node('a', 'c5.large')],
      [],
      { untilSecond: 130 },
    );
    expect(calls(later, 'AssignPrivateIpAddresses')).toBe(4);
    expect(calls(later, 'CreateNetworkInterface')).toBe(2);
  });

  it('grows prefixes from a reservation on the same fragmented subnet', async () => {
    const run = await runVpcCni(
      'prefix',
      VPC_CNI_RUNS.prefixWarmIp,
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
});

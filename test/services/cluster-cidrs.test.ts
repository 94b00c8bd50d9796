import { describe, expect, it } from 'vitest';
import { overlappingServiceCidrs } from '../../shared/clusters/cluster-set.js';
import type { ClusterServiceCidr } from '../../shared/k8s/service-cidrs.js';
import { type CidrBlock, parseCidr } from '../../shared/net/ip.js';
import { clusterIpRange } from '../../shared/net/value-range.js';
import { keepFresh, ServiceCidrGate } from '../../shared/services/cidr-gate.js';
import {
  ipAddressDrift,
  reconcileServiceCidrs,
  refusalFor,
  withHolders,
} from '../../shared/services/cluster-cidrs.js';

const block = (text: string): CidrBlock => {
  const parsed = parseCidr(text);
  if (!parsed) throw new Error(`bad test CIDR ${text}`);
  return parsed;
};
const serviceCidr = (
  name: string,
  cidrs: readonly string[],
  state: { ready?: boolean; terminating?: boolean } = {},
): ClusterServiceCidr => ({
  name,
  cidrs: cidrs.map(block),
  ready: state.ready ?? true,
  terminating: state.terminating ?? false,
});
const names = (ranges: readonly { name: string }[]) => ranges.map((range) => range.name);

describe('reconcileServiceCidrs', () => {
  it('keeps the configured ranges as they are on a cluster without ServiceCIDRs', () => {
    const state = reconcileServiceCidrs({
      configured: [block('10.100.0.0/16')],
      follow: true,
      cluster: undefined,
    });
    expect(state.source).toBe('flags');
    expect(names(state.allocatable)).toEqual(['10.100.0.0/16']);
    expect(state.refused.size).toBe(0);
  });

  it('allocates from a configured range a ready ServiceCIDR covers, a wider one included', () => {
    const state = reconcileServiceCidrs({
      configured: [block('10.100.0.0/24')],
      follow: false,
      cluster: [serviceCidr('kubernetes', ['10.100.0.0/16'])],
    });
    expect(names(state.allocatable)).toEqual(['10.100.0.0/24']);
    expect(state.refused.size).toBe(0);
  });

  it('refuses a configured range no ServiceCIDR covers, naming it and the cluster CIDRs', () => {
    const state = reconcileServiceCidrs({
      configured: [block('10.100.0.0/16')],
      follow: false,
      cluster: [
        serviceCidr('kubernetes', ['10.96.0.0/16']),
        serviceCidr('small', ['10.100.0.0/24']),
      ],
    });
    expect(state.allocatable).toEqual([]);
    expect(state.refused.get('10.100.0.0/16')).toMatchObject({ reason: 'missing' });
    expect(state.refused.get('10.100.0.0/16')?.message).toBe(
      "serviceCIDRs: 10.100.0.0/16 is not a Service CIDR of this cluster (its ServiceCIDRs: 10.96.0.0/16 (kubernetes), 10.100.0.0/24 (small)): the apiserver refuses cluster IPs outside them; set serviceCIDRs to the cluster's, or create a ServiceCIDR for 10.100.0.0/16",
    );
  });

  it('stops allocating from a range whose only ServiceCIDR is terminating, or not ready', () => {
    const terminating = reconcileServiceCidrs({
      configured: [block('10.100.0.0/16')],
      follow: false,
      cluster: [serviceCidr('kubernetes', ['10.100.0.0/16'], { terminating: true, ready: false })],
    });
    expect(terminating.refused.get('10.100.0.0/16')?.reason).toBe('terminating');
    expect(terminating.terminating).toEqual([
      { serviceCidr: 'kubernetes', cidr: '10.100.0.0/16', holders: [] },
    ]);
    const unready = reconcileServiceCidrs({
      configured: [block('10.100.0.0/16')],
      follow: false,
      cluster: [serviceCidr('kubernetes', ['10.100.0.0/16'], { ready: false })],
    });
    expect(unready.refused.get('10.100.0.0/16')?.reason).toBe('notReady');
    // Another ready ServiceCIDR covering it keeps it allocatable.
    const covered = reconcileServiceCidrs({
      configured: [block('10.100.0.0/24')],
      follow: false,
      cluster: [
        serviceCidr('old', ['10.100.0.0/24'], { terminating: true }),
        serviceCidr('kubernetes', ['10.100.0.0/16']),
      ],
    });
    expect(names(covered.allocatable)).toEqual(['10.100.0.0/24']);
  });

  it('follows a ServiceCIDR of a configured family clear of berth ranges, only when asked', () => {
    const cluster = [
      serviceCidr('kubernetes', ['10.100.0.0/16', 'fd00::/108']),
      serviceCidr('extra', ['10.101.0.0/24']),
      serviceCidr('nested', ['10.100.5.0/24']),
      serviceCidr('huge', ['10.0.0.0/8']),
      serviceCidr('leaving', ['10.102.0.0/24'], { terminating: true }),
    ];
    const followed = reconcileServiceCidrs({
      configured: [block('10.100.0.0/16')],
      follow: true,
      cluster,
    });
    expect(followed.followed).toEqual(['10.101.0.0/24']);
    expect(names(followed.allocatable)).toEqual(['10.100.0.0/16', '10.101.0.0/24']);
    // The terminating one is kept (what it holds stays its holders'), never allocated from.
    expect(names(followed.ranges)).toEqual(['10.100.0.0/16', '10.101.0.0/24', '10.102.0.0/24']);
    expect(followed.notes.join('\n')).toContain(
      'fd00::/108 (ServiceCIDR kubernetes) is not followed: IPv6',
    );
    const fixed = reconcileServiceCidrs({
      configured: [block('10.100.0.0/16')],
      follow: false,
      cluster,
    });
    expect(fixed.followed).toEqual([]);
    expect(names(fixed.allocatable)).toEqual(['10.100.0.0/16']);
  });
});

describe('reconcileServiceCidrs on a followed ServiceCIDR going away', () => {
  it('keeps it as a range, so what Services hold there stays theirs, and gives nothing new from it', () => {
    const state = reconcileServiceCidrs({
      configured: [block('10.100.0.0/16')],
      follow: true,
      cluster: [
        serviceCidr('kubernetes', ['10.100.0.0/16']),
        serviceCidr('extra', ['10.101.0.0/24'], { terminating: true }),
      ],
    });
    expect(names(state.ranges)).toEqual(['10.100.0.0/16', '10.101.0.0/24']);
    expect(names(state.allocatable)).toEqual(['10.100.0.0/16']);
    const range = clusterIpRange(block('10.100.0.0/16'));
    expect(refusalFor(state, range, '10.101.0.9')?.message).toMatch(
      /^services\.followClusterCIDRs: 10\.101\.0\.0\/24 is being deleted from this cluster/,
    );
  });
});

describe('refusalFor', () => {
  it('refuses a requested IP in a refused range and a dynamic pick from one', () => {
    const state = reconcileServiceCidrs({
      configured: [block('10.100.0.0/24')],
      follow: false,
      cluster: [serviceCidr('kubernetes', ['10.96.0.0/24'])],
    });
    const range = clusterIpRange(block('10.100.0.0/24'));
    expect(refusalFor(state, range, '10.100.0.9')?.reason).toBe('missing');
    expect(refusalFor(state, range, undefined)?.reason).toBe('missing');
    // An IP outside every range berth keeps is the allocator's to refuse (not in range).
    expect(refusalFor(state, range, '10.200.0.9')).toBeUndefined();
  });
});

describe('withHolders', () => {
  it('names what holds addresses only the terminating ServiceCIDR covers', () => {
    const cluster = [
      serviceCidr('leaving', ['10.101.0.0/24'], { terminating: true }),
      serviceCidr('wide', ['10.101.0.128/25']),
    ];
    const state = reconcileServiceCidrs({
      configured: [block('10.101.0.0/24')],
      follow: false,
      cluster,
    });
    const held = withHolders(state, cluster, [
      { ip: '10.101.0.9', service: 'games/lobby' },
      { ip: '10.101.0.200', service: 'games/covered' },
      { ip: '10.9.0.1', service: 'default/elsewhere' },
    ]);
    expect(held.terminating).toEqual([
      { serviceCidr: 'leaving', cidr: '10.101.0.0/24', holders: ['games/lobby (10.101.0.9)'] },
    ]);
  });
});

describe('ipAddressDrift', () => {
  const ranges = [clusterIpRange(block('10.100.0.0/24'))];
  it('reports IPs held on one side only, within berth ranges', () => {
    const drift = ipAddressDrift(
      ranges,
      [
        { ip: '10.100.0.5', service: 'default/both' },
        { ip: '10.100.0.6', service: 'default/apiserver-only', createdAt: 0 },
        { ip: '10.9.0.1', service: 'default/not-ours' },
      ],
      new Map([
        ['10.100.0.5', 'Service default/both'],
        ['10.100.0.7', 'Service default/berth-only'],
      ]),
      1000,
    );
    expect(drift).toEqual([
      { ip: '10.100.0.6', heldBy: 'apiserver', holder: 'default/apiserver-only' },
      { ip: '10.100.0.7', heldBy: 'berth', holder: 'Service default/berth-only' },
    ]);
  });

  it('skips IPAddresses created after berth read its store', () => {
    const drift = ipAddressDrift(
      ranges,
      [{ ip: '10.100.0.6', service: 'default/new', createdAt: 2000 }],
      new Map(),
      1000,
    );
    expect(drift).toEqual([]);
  });
});

describe('ServiceCidrGate', () => {
  it('says once that the cluster has no ServiceCIDRs, and warns of each new refusal', () => {
    const lines: string[] = [];
    const gate = new ServiceCidrGate({
      configured: [block('10.100.0.0/16')],
      follow: false,
      log: { info: (l) => lines.push(l), warn: (l) => lines.push(`WARN ${l}`) },
    });
    gate.apply(undefined);
    gate.apply(undefined);
    expect(lines.filter((l) => l.includes('no ServiceCIDR objects'))).toHaveLength(1);
    gate.apply([serviceCidr('kubernetes', ['10.96.0.0/16'])]);
    gate.apply([serviceCidr('kubernetes', ['10.96.0.0/16'])]);
    expect(lines.filter((l) => l.startsWith('WARN serviceCIDRs: 10.100.0.0/16'))).toHaveLength(1);
    expect(gate.current.refused.size).toBe(1);
  });
});

describe('overlappingServiceCidrs', () => {
  it('finds every pair of clusters whose Service CIDRs share addresses', () => {
    const overlaps = overlappingServiceCidrs([
      { cluster: 'a', cidrs: [block('10.100.0.0/16')] },
      { cluster: 'b', cidrs: [block('10.101.0.0/16')] },
      { cluster: 'c', cidrs: [block('10.100.8.0/24')] },
    ]);
    expect(overlaps.map((o) => [o.clusters, o.cidrs])).toEqual([
      [
        ['a', 'c'],
        ['10.100.0.0/16', '10.100.8.0/24'],
      ],
    ]);
  });
});

describe('keepFresh', () => {
  it('reads once per age, shares a read in flight, and keeps the last state when a read fails', async () => {
    const gate = new ServiceCidrGate({ configured: [block('10.100.0.0/16')], follow: false });
    let now = 0;
    let reads = 0;
    let answer: () => Promise<ClusterServiceCidr[]> = async () => [
      serviceCidr('kubernetes', ['10.100.0.0/16']),
    ];
    const failures: unknown[] = [];
    const fresh = keepFresh(gate, {
      read: () => {
        reads++;
        return answer();
      },
      maxAgeMs: 1000,
      now: () => now,
      failed: (error) => failures.push(error),
      patienceMs: 60_000,
    });
    await Promise.all([fresh(), fresh()]);
    expect(reads).toBe(1);
    expect(gate.current.source).toBe('cluster');
    now = 999;
    await fresh();
    expect(reads).toBe(1);
    now = 1000;
    answer = async () => {
      throw new Error('apiserver down');
    };
    await fresh();
    expect(reads).toBe(2);
    expect(failures).toHaveLength(1);
    expect(gate.current.source).toBe('cluster');
    // A failed read is tried again at the next write.
    answer = async () => [serviceCidr('kubernetes', ['10.96.0.0/16'])];
    await fresh();
    expect(reads).toBe(3);
    expect(gate.current.refused.size).toBe(1);
  });

  it('holds a write no longer than its patience when a read hangs, and applies the read when it lands', async () => {
    const gate = new ServiceCidrGate({ configured: [block('10.100.0.0/16')], follow: false });
    let land: (cidrs: ClusterServiceCidr[]) => void = () => {};
    let reads = 0;
    const fresh = keepFresh(gate, {
      read: () => {
        reads++;
        return new Promise((resolve) => {
          land = resolve;
        });
      },
      maxAgeMs: 1000,
      now: () => 0,
      failed: () => {},
      patienceMs: 5,
    });
    await fresh();
    await fresh();
    // Both writes went on by the configured ranges, sharing the one read still under way.
    expect(reads).toBe(1);
    expect(gate.current.source).toBe('flags');
    land([serviceCidr('kubernetes', ['10.96.0.0/16'])]);
    await fresh();
    expect(gate.current.source).toBe('cluster');
    expect(gate.current.refused.size).toBe(1);
    expect(reads).toBe(1);
  });
});

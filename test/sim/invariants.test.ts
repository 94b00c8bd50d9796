import { describe, expect, it } from 'vitest';
import type { UiState } from '../../shared/ui/state.js';
import type { SimPod } from '../../sim/cluster.js';
import {
  exclusiveUsageMismatches,
  hostPortClashes,
  hostPortCountMismatches,
  sharedServiceValues,
} from '../../sim/invariants.js';

const service = (clusterIP: string, nodePort?: number) => ({
  spec: { clusterIPs: [clusterIP], ports: [{ port: 80, ...(nodePort ? { nodePort } : {}) }] },
});
const pod = (name: string, node: string | undefined, port: number): SimPod => ({
  name,
  object: {},
  cpuMillis: 500,
  hostPorts: [{ port, protocol: 'UDP' }],
  ...(node ? { node } : {}),
});
const state = (counts: number[], used: { clusterIP: number; nodePort: number }): UiState => ({
  cluster: 'sim',
  at: 0,
  pools: [],
  ranges: [
    { name: '10.0.0.0/24', kind: 'clusterIP', size: 254, used: used.clusterIP },
    { name: '30000-32767', kind: 'nodePort', size: 2768, used: used.nodePort },
  ],
  hostPorts: [{ name: 'default', first: 7000, counts }],
});

describe('the invariants of a simulated day', () => {
  it('flag a cluster IP or node port carried by two live Services', () => {
    const services = new Map([
      ['a', service('10.0.0.5', 30001)],
      ['b', service('10.0.0.5')],
      ['c', service('10.0.0.6', 30001)],
    ]);
    expect(sharedServiceValues(services)).toEqual([
      'cluster IP 10.0.0.5 is carried by Services a and b',
      'node port 30001 is carried by Services a and c',
    ]);
    expect(sharedServiceValues(new Map([['a', service('10.0.0.5', 30001)]]))).toEqual([]);
  });

  it('flag two pods of one node on one host port, and nothing for pods still Pending', () => {
    expect(
      hostPortClashes([pod('x', 'n1', 7000), pod('y', 'n1', 7000), pod('z', 'n2', 7000)]),
    ).toEqual(['host port n1 7000/UDP is bound by pods x and y']);
    expect(hostPortClashes([pod('x', undefined, 7000), pod('y', undefined, 7000)])).toEqual([]);
  });

  it("flag berth's host port counts that differ from the live pods holding each port", () => {
    const pods = [pod('x', 'n1', 7000), pod('y', undefined, 7000), pod('z', 'n2', 7001)];
    expect(hostPortCountMismatches(state([2, 1, 0], { clusterIP: 0, nodePort: 0 }), pods)).toEqual(
      [],
    );
    expect(hostPortCountMismatches(state([2, 0, 1], { clusterIP: 0, nodePort: 0 }), pods)).toEqual([
      'host port 7001: berth counts 0 uses, 1 live pods hold it',
      'host port 7002: berth counts 1 uses, 0 live pods hold it',
    ]);
  });

  it('flag held cluster IPs or node ports that live Services do not carry', () => {
    const services = new Map([['a', service('10.0.0.5', 30001)]]);
    expect(exclusiveUsageMismatches(state([], { clusterIP: 1, nodePort: 1 }), services)).toEqual(
      [],
    );
    expect(exclusiveUsageMismatches(state([], { clusterIP: 2, nodePort: 1 }), services)).toEqual([
      'berth holds 2 clusterIP values, live Services carry 1',
    ]);
  });
});

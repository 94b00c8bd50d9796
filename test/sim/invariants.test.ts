import { describe, expect, it } from 'vitest';
import type { Ec2NetworkInterface } from '../../shared/ec2/network.js';
import type { UiState } from '../../shared/ui/state.js';
import type { SimNode, SimPod } from '../../sim/cluster.js';
import {
  exclusiveUsageMismatches,
  hostPortClashes,
  hostPortCountMismatches,
  podIpsOffTheirNode,
  sharedPodIps,
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

  it('flag a pod address held by two live pods', () => {
    const pods = [
      { ...pod('a', 'n1', 7000), ip: '10.0.0.10' },
      { ...pod('b', 'n2', 7001), ip: '10.0.0.10' },
      { ...pod('c', 'n2', 7002), ip: '10.0.0.11' },
      pod('d', 'n2', 7003),
    ];
    expect(sharedPodIps(pods)).toEqual(['pod IP 10.0.0.10 is held by pods a and b']);
  });

  it("flag a pod address that no ENI of its node's instance holds, secondary or in a prefix", () => {
    const node = (name: string, instance: string): SimNode => ({
      name,
      cpuMillis: 16_000,
      usedCpuMillis: 0,
      boundPorts: new Set(),
      cordoned: false,
      draining: false,
      providerId: `aws:///us-east-1a/${instance}`,
    });
    const nodes = new Map([
      ['n1', node('n1', 'i-0000000000000000a')],
      ['n2', node('n2', 'i-0000000000000000b')],
    ]);
    const eni = (instanceId: string, secondaryIps: string[], ipv4Prefixes: string[]) =>
      ({
        eniId: `eni-${instanceId}`,
        subnetId: 'subnet-1',
        status: 'in-use',
        primaryIp: '10.0.0.4',
        macAddress: '02:00:00:00:00:01',
        secondaryIps,
        ipv4Prefixes,
        attachment: {
          attachmentId: 'a',
          instanceId,
          deviceIndex: 1,
          status: 'attached',
          deleteOnTermination: false,
        },
        tags: [],
        securityGroupIds: [],
      }) satisfies Ec2NetworkInterface;
    const interfaces = [
      eni('i-0000000000000000a', ['10.0.0.20'], ['10.0.1.0/28']),
      eni('i-0000000000000000b', ['10.0.0.30'], []),
    ];
    const pods = [
      { ...pod('secondary', 'n1', 7000), ip: '10.0.0.20' },
      { ...pod('in-prefix', 'n1', 7001), ip: '10.0.1.15' },
      { ...pod('past-prefix', 'n1', 7002), ip: '10.0.1.16' },
      { ...pod('other-node', 'n2', 7003), ip: '10.0.0.20' },
    ];
    expect(podIpsOffTheirNode(pods, nodes, interfaces)).toEqual([
      "pod past-prefix has 10.0.1.16, which no ENI of node n1's instance i-0000000000000000a holds",
      "pod other-node has 10.0.0.20, which no ENI of node n2's instance i-0000000000000000b holds",
    ]);
  });
});

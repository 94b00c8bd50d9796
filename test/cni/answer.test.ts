import { describe, expect, it } from 'vitest';
import { CniError } from '../../cni/errors.js';
import type { HostNetwork } from '../../cni/host-network.js';
import type { NodeIpClient } from '../../cni/node-ip-client.js';
import { runCommand } from '../../cni/plugin.js';
import { networkConfig } from '../../sim/cni-runtime.js';
import { lockedOn } from './locked-on.js';
import { podInvocation } from './pod-invocation.js';
import { earlierWay, releasedInMemory } from './released-memory.js';

const good = {
  ip: '10.0.0.17',
  eniId: 'eni-1',
  subnetCidr: '10.0.0.0/24',
  gateway: '10.0.0.1',
  deviceIndex: 1,
  macAddress: '0a:00:00:00:00:01',
};

const invocation = podInvocation;

/** A node that records every touch of its network; the API answers `answer` to every call. */
function node(answer: unknown) {
  const touched: string[] = [];
  const released: string[] = [];
  const host: HostNetwork = {
    view: async () => {
      touched.push('view');
      return { links: [{ ifname: 'eth1', address: good.macAddress }], rules: [] };
    },
    routes: async () => {
      touched.push('routes');
      return [];
    },
    run: async (commands) => {
      touched.push(...commands.map((c) => c.join(' ')));
    },
  };
  const client = {
    assign: async () => answer,
    lookUp: async () => answer,
    release: async (ip: string) => {
      released.push(ip);
      return 'released';
    },
  } as unknown as NodeIpClient;
  const deps = {
    client: () => client,
    host,
    locked: lockedOn(host),
    released: releasedInMemory(),
    ...earlierWay,
  };
  return { deps, touched, released };
}

async function failure(promise: Promise<unknown>): Promise<CniError> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(CniError);
  return outcome as CniError;
}

const stdin = (ipam: Record<string, unknown> = {}) =>
  networkConfig({ endpoint: 'http://berth', node: 'node-a', ...ipam });

describe('berth-cni checks the node IP API’s answer', () => {
  const bad: [string, unknown, RegExp][] = [
    ['an address that is no IP', { ...good, ip: 'not-an-ip' }, /"not-an-ip" is not an IP address/],
    ['an IPv6 address with an IPv4 subnet', { ...good, ip: 'fd00::5' }, /not IPv4/],
    [
      'an IPv6 address in an IPv6 subnet (the pool is IPv4)',
      { ...good, ip: 'fd00::5', subnetCidr: 'fd00::/64', gateway: 'fd00::1' },
      /not IPv4/,
    ],
    [
      'an address outside its subnet',
      { ...good, ip: '10.0.1.17' },
      /outside the subnet 10\.0\.0\.0\/24/,
    ],
    [
      'a /32 subnet',
      { ...good, subnetCidr: '10.0.0.17/32', gateway: '10.0.0.17' },
      /prefix length/,
    ],
    ['a /0 subnet', { ...good, subnetCidr: '0.0.0.0/0' }, /prefix length/],
    ['a subnet that is no CIDR block', { ...good, subnetCidr: '10.0.0.17/24' }, /subnetCidr/],
    ['the subnet’s network address', { ...good, ip: '10.0.0.0' }, /network or broadcast/],
    ['the subnet’s broadcast address', { ...good, ip: '10.0.0.255' }, /network or broadcast/],
    ['a gateway outside the subnet', { ...good, gateway: '10.9.0.1' }, /gateway: "10\.9\.0\.1"/],
    ['a gateway that is the address itself', { ...good, gateway: '10.0.0.17' }, /gateway/],
    ['no gateway', { ...good, gateway: undefined }, /gateway/],
    ['a device index out of range', { ...good, deviceIndex: 2 ** 40 }, /deviceIndex/],
    ['a MAC address that is none', { ...good, macAddress: 'zz' }, /macAddress/],
    ['an address that is an object', { ...good, ip: { v: 4 } }, /ip/],
    ['no object at all', 'ok', /not a JSON object/],
    ['null', null, /not a JSON object/],
  ];

  it.each(bad)(
    'refuses %s with a CNI error, touching nothing on the node',
    async (_, answer, message) => {
      const { deps, touched } = node(answer);
      const error = await failure(runCommand(invocation('ADD'), stdin(), deps));
      expect(error.code).toBe(999);
      expect(error.message).toMatch(message);
      expect(error.message).not.toMatch(/\[object Object\]|TypeError|undefined \(reading/);
      expect(touched).toEqual([]);
    },
  );

  it('gives an address it refused back to berth, keyed by the pod', async () => {
    const { deps, released } = node({ ...good, ip: '10.0.1.17' });
    await failure(runCommand(invocation('ADD'), stdin(), deps));
    expect(released).toEqual(['10.0.1.17']);
  });

  it('refuses a configured pod gateway outside the answered subnet as a configuration error (7)', async () => {
    const { deps, touched } = node(good);
    const error = await failure(
      runCommand(invocation('ADD'), stdin({ podGateway: '192.168.0.1' }), deps),
    );
    expect(error.code).toBe(7);
    expect(error.message).toMatch(
      /ipam\.podGateway: 192\.168\.0\.1 is outside the subnet 10\.0\.0\.0\/24/,
    );
    expect(touched).toEqual([]);
  });

  it('CHECK refuses a malformed answer the same way', async () => {
    const { deps } = node({ ...good, subnetCidr: 'x' });
    const error = await failure(runCommand(invocation('CHECK'), stdin(), deps));
    expect(error.code).toBe(999);
    expect(error.message).toMatch(/subnetCidr/);
  });

  it('takes a sound answer, on a secondary ENI or with the contract’s fields alone', async () => {
    const { ip, eniId, subnetCidr, gateway } = good;
    for (const answer of [good, { ip, eniId, subnetCidr, gateway }]) {
      const { deps } = node(answer);
      const result = await runCommand(invocation('ADD'), stdin({ sourceRouting: false }), deps);
      expect(result).toMatchObject({ ips: [{ address: '10.0.0.17/24', gateway: '10.0.0.3' }] });
    }
  });
});

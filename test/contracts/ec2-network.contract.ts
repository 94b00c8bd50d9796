/**
 * What every `Ec2Network` answers for the ENI calls moto's EC2 models, registered against a
 * factory so the fake EC2 of the ENI tests and benches and `SdkEc2Network` over moto cannot drift
 * apart: subnets, ENIs created tagged with their secondary addresses, filtered listings,
 * addresses assigned and given back, tags, deletion, and not-found as berth classifies it.
 *
 * Left out: throttling, describe lag and detach delays (the fake's to model; moto has none); the
 * calls on instances (attach, detach, delete-on-termination, prefixes), which need a launched
 * instance and are not held here yet; and two places moto departs from AWS: AssignPrivateIpAddresses
 * answers every address of the ENI, not only the new ones (so the contract checks the new ones
 * on the ENI), and CreateTags accepts an ENI that does not exist (the fake, as AWS, answers
 * `InvalidNetworkInterfaceID.NotFound`; test/ec2/ec2-fake.test.ts is where that belongs).
 */
import { describe, expect, it } from 'vitest';
import { isNotFound } from '../../shared/aws/error-codes.js';
import type { CreateNetworkInterfaceInput, Ec2Network } from '../../shared/ec2/network.js';
import { cidrContains, parseCidr, parseIp } from '../../shared/net/ip.js';
import { refusal, sharedWorld } from './world.js';

/** An EC2 with what berth is given: a subnet of 10.0.1.0/24 in us-east-1a and a security group. */
export interface Ec2World {
  readonly api: Ec2Network;
  readonly subnetId: string;
  readonly securityGroupId: string;
  stop(): Promise<void>;
}

export const SUBNET_CIDR = '10.0.1.0/24';

const inSubnet = (ip: string): boolean => {
  const block = parseCidr(SUBNET_CIDR);
  const address = parseIp(ip);
  return block !== undefined && address !== undefined && cidrContains(block, address);
};

/** Registers the contract's cases for the EC2 `make` builds, one for all of them. */
export function ec2NetworkContract(name: string, make: () => Promise<Ec2World>): void {
  describe(`${name} keeps the Ec2Network contract`, () => {
    let world: Ec2World;
    let api: Ec2Network;
    let tokens = 0;
    sharedWorld(make, (started) => {
      world = started;
      api = started.api;
    });

    const eni = (cluster: string, extra: Partial<CreateNetworkInterfaceInput> = {}) => {
      tokens += 1;
      return api.createNetworkInterface({
        subnetId: world.subnetId,
        securityGroupIds: [world.securityGroupId],
        secondaryIpCount: 0,
        description: 'berth pool',
        tags: [{ key: 'berth.dev/cluster', value: cluster }],
        clientToken: `token-${tokens}`,
        ...extra,
      });
    };

    it('describes a subnet with AWS five addresses reserved, and nothing for an unknown one', async () => {
      expect(await api.describeSubnets([world.subnetId])).toEqual([
        {
          subnetId: world.subnetId,
          cidr: SUBNET_CIDR,
          availabilityZone: 'us-east-1a',
          availableIpCount: 251,
        },
      ]);
      expect(await api.describeSubnets(['subnet-0000000000000000f'])).toEqual([]);
    });

    it('creates an available ENI with its tags, groups and secondary addresses', async () => {
      const created = await eni('create', { secondaryIpCount: 3 });
      expect(created).toMatchObject({
        subnetId: world.subnetId,
        status: 'available',
        tags: [{ key: 'berth.dev/cluster', value: 'create' }],
        securityGroupIds: [world.securityGroupId],
        ipv4Prefixes: [],
      });
      expect(created.eniId).toMatch(/^eni-/);
      expect(created.attachment).toBeUndefined();
      expect(inSubnet(created.primaryIp)).toBe(true);
      expect(created.secondaryIps).toHaveLength(3);
      expect(created.secondaryIps.every(inSubnet)).toBe(true);
      expect(new Set([created.primaryIp, ...created.secondaryIps]).size).toBe(4);
      expect(created.macAddress).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    });

    it('lists only the ENIs a filter matches, as they were created', async () => {
      const a = await eni('list-a');
      const b = await eni('list-b');
      const byTag = await api.describeNetworkInterfaces({
        filters: { 'tag:berth.dev/cluster': ['list-a'] },
      });
      expect(byTag.interfaces).toEqual([a]);
      expect(byTag.nextToken).toBeUndefined();
      const byId = await api.describeNetworkInterfaces({
        filters: { 'network-interface-id': [a.eniId, b.eniId], status: ['available'] },
      });
      expect(byId.interfaces.map((i) => i.eniId).sort()).toEqual([a.eniId, b.eniId].sort());
    });

    it('assigns new secondary addresses and gives back only those named', async () => {
      const created = await eni('assign', { secondaryIpCount: 1 });
      const seen = async () =>
        (
          await api.describeNetworkInterfaces({
            filters: { 'network-interface-id': [created.eniId] },
          })
        ).interfaces[0]?.secondaryIps ?? [];
      const assigned = await api.assignPrivateIpAddresses({ eniId: created.eniId, count: 2 });
      const added = (await seen()).filter((ip) => !created.secondaryIps.includes(ip));
      expect(added).toHaveLength(2);
      expect(added.every(inSubnet)).toBe(true);
      expect(added).not.toContain(created.primaryIp);
      // AWS answers the new addresses only; moto answers every address of the ENI.
      expect(assigned).toEqual(expect.arrayContaining(added));
      await api.unassignPrivateIpAddresses({ eniId: created.eniId, ips: [added[0] ?? ''] });
      expect([...(await seen())].sort()).toEqual([...created.secondaryIps, added[1]].sort());
    });

    it('adds a tag and replaces the value of a key it has', async () => {
      const created = await eni('tags');
      await api.createTags({
        resourceIds: [created.eniId],
        tags: [
          { key: 'berth.dev/node', value: 'node-a' },
          { key: 'berth.dev/cluster', value: 'tags-2' },
        ],
      });
      const [seen] = (
        await api.describeNetworkInterfaces({ filters: { 'tag:berth.dev/node': ['node-a'] } })
      ).interfaces;
      expect(seen?.eniId).toBe(created.eniId);
      expect([...(seen?.tags ?? [])].sort((x, y) => x.key.localeCompare(y.key))).toEqual([
        { key: 'berth.dev/cluster', value: 'tags-2' },
        { key: 'berth.dev/node', value: 'node-a' },
      ]);
    });

    it('deletes an ENI, and answers not-found for it afterwards', async () => {
      const created = await eni('delete');
      await api.deleteNetworkInterface({ eniId: created.eniId });
      const listed = await api.describeNetworkInterfaces({
        filters: { 'tag:berth.dev/cluster': ['delete'] },
      });
      expect(listed.interfaces).toEqual([]);
      expect(isNotFound(await refusal(api.deleteNetworkInterface({ eniId: created.eniId })))).toBe(
        true,
      );
      expect(
        isNotFound(await refusal(api.assignPrivateIpAddresses({ eniId: created.eniId, count: 1 }))),
      ).toBe(true);
    });
  });
}

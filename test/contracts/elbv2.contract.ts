/**
 * What every `Elbv2Api` answers, registered against a factory so the fake ELBv2 of the tests and
 * benches and `SdkElbv2Api` over moto's ELBv2 cannot drift apart: the results of every call berth
 * makes, and its not-found, in-use and duplicate-name refusals as berth classifies them.
 *
 * Left out, because moto does not model them: throttling and delays (the fake's token buckets and
 * visibility lag), the 50-listener limit, a repeated create answered with the existing resource
 * (moto answers a duplicate), and pages other than of load balancers. Global Accelerator has no
 * contract: moto 5.2 has no `globalaccelerator` service, so the fake accelerator has nothing real
 * to be held to here.
 */
import { describe, expect, it } from 'vitest';
import {
  isDuplicateTargetGroupName,
  isNotFound,
  isResourceInUse,
} from '../../shared/aws/error-codes.js';
import type { Elbv2Api } from '../../shared/fronts/elbv2.js';
import { refusal, sharedWorld } from './world.js';

export const BERTH_TAG = { key: 'berth.dev/cluster', value: 'games' };

/** An ELBv2 with what berth is given, not what it makes: a VPC with an NLB named `pool-a`. */
export interface Elbv2World {
  readonly api: Elbv2Api;
  /** The VPC, of CIDR 10.0.0.0/16. */
  readonly vpcId: string;
  readonly nlbArn: string;
  stop(): Promise<void>;
}

/** Registers the contract's cases for the ELBv2 `make` builds, one for all of them. */
export function elbv2Contract(name: string, make: () => Promise<Elbv2World>): void {
  describe(`${name} keeps the Elbv2Api contract`, () => {
    let world: Elbv2World;
    let api: Elbv2Api;
    sharedWorld(make, (started) => {
      world = started;
      api = started.api;
    });

    it("describes the pool's load balancers, and fails not-found for a gone one", async () => {
      const [nlb] = await api.describeLoadBalancers([world.nlbArn]);
      expect(nlb).toMatchObject({ arn: world.nlbArn, vpcId: world.vpcId, state: 'active' });
      expect(nlb?.dnsName).toMatch(/^pool-a-.*\.amazonaws\.com$/);
      expect(isNotFound(await refusal(api.describeLoadBalancers([`${world.nlbArn}0`])))).toBe(true);
    });

    it('makes a game port its front, end to end, and takes it down again', async () => {
      const { vpcId, nlbArn } = world;
      const group = await api.createTargetGroup({
        name: 'berth-7f3a9c2e41',
        protocol: 'UDP',
        port: 7777,
        vpcId,
        tags: [BERTH_TAG],
      });
      expect(group).toMatchObject({
        name: 'berth-7f3a9c2e41',
        protocol: 'UDP',
        port: 7777,
        vpcId,
        loadBalancerArns: [],
      });

      await api.registerTargets(group.arn, [{ ip: '10.0.1.17', port: 7777 }]);
      // Its health is one of DescribeTargetHealth's states (moto answers at once; AWS says
      // `initial` for minutes, which the fake's own tests hold it to).
      const [registered, ...more] = await api.describeTargets(group.arn);
      expect(more).toEqual([]);
      expect(registered).toMatchObject({ ip: '10.0.1.17', port: 7777 });
      expect(['initial', 'healthy', 'unhealthy', 'unused']).toContain(registered?.state);

      const listener = await api.createListener({
        loadBalancerArn: nlbArn,
        port: 20_000,
        protocol: 'UDP',
        targetGroupArn: group.arn,
        tags: [BERTH_TAG],
      });
      expect(listener).toEqual({
        arn: expect.stringContaining(':listener/'),
        loadBalancerArn: nlbArn,
        port: 20_000,
        protocol: 'UDP',
        targetGroupArn: group.arn,
      });

      expect((await api.describeListeners(nlbArn)).items).toContainEqual(listener);
      const { items: named } = await api.describeTargetGroups({ names: [group.name] });
      expect(named).toEqual([{ ...group, loadBalancerArns: [nlbArn] }]);
      const tags = await api.describeTags([listener.arn, group.arn]);
      expect(tags.get(listener.arn)).toEqual([BERTH_TAG]);
      expect(tags.get(group.arn)).toEqual([BERTH_TAG]);

      // The release order: the listener first, for ELBv2 keeps a group a listener forwards to.
      expect(isResourceInUse(await refusal(api.deleteTargetGroup(group.arn)))).toBe(true);
      await api.deleteListener(listener.arn);
      expect(isNotFound(await refusal(api.deleteListener(listener.arn)))).toBe(true);
      expect((await api.describeListeners(nlbArn)).items).not.toContainEqual(listener);
      await api.deregisterTargets(group.arn, [{ ip: '10.0.1.17', port: 7777 }]);
      expect(await api.describeTargets(group.arn)).toEqual([]);
      await api.deleteTargetGroup(group.arn);
      expect(isNotFound(await refusal(api.deleteTargetGroup(group.arn)))).toBe(true);
      expect(isNotFound(await refusal(api.describeTargetGroups({ names: [group.name] })))).toBe(
        true,
      );
      expect(isNotFound(await refusal(api.describeTargets(group.arn)))).toBe(true);
    });

    it('carries TCP_UDP through a target group and a listener', async () => {
      const group = await api.createTargetGroup({
        name: 'berth-both',
        protocol: 'TCP_UDP',
        port: 7778,
        vpcId: world.vpcId,
        tags: [],
      });
      const listener = await api.createListener({
        loadBalancerArn: world.nlbArn,
        port: 20_001,
        protocol: 'TCP_UDP',
        targetGroupArn: group.arn,
        tags: [],
      });
      expect([group.protocol, listener.protocol]).toEqual(['TCP_UDP', 'TCP_UDP']);
      expect((await api.describeTags([listener.arn])).get(listener.arn)).toEqual([]);
      await api.deleteListener(listener.arn);
      await api.deleteTargetGroup(group.arn);
    });

    it('refuses a target group name taken with other settings, classified', async () => {
      const { vpcId } = world;
      await api.createTargetGroup({
        name: 'berth-taken',
        protocol: 'UDP',
        port: 1,
        vpcId,
        tags: [],
      });
      const failure = await refusal(
        api.createTargetGroup({ name: 'berth-taken', protocol: 'TCP', port: 2, vpcId, tags: [] }),
      );
      expect(isDuplicateTargetGroupName(failure)).toBe(true);
    });

    it('lists every target group of the account on one page when they fit', async () => {
      const { items, nextMarker } = await api.describeTargetGroups({});
      expect(items.map((g) => g.name)).toContain('berth-taken');
      expect(nextMarker).toBeUndefined();
    });
  });
}

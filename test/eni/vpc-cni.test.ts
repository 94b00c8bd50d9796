import { describe, expect, it } from 'vitest';
import { BERTH_TAGS, tagValue } from '../../shared/ec2/network.js';
import { VpcCniNodeError } from '../../shared/eni/errors.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { assignIp } from '../../shared/eni/service.js';
import { isLiveVpcCniPod } from '../../shared/node-pool/vpc-cni.js';
import { eniWorld } from '../../sim/eni-world.js';
import { boundPod, vpcCniPod } from '../../sim/fakes/cluster-api.js';

const MINUTE = 60_000;

describe('ENI pools beside the VPC CNI', () => {
  it('builds no pool for a node where aws-node runs and counts it, while other nodes get theirs', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 4 } });
    world.addNode('node-a', 'c5.large');
    const shared = world.addNode('node-cni', 'c5.large');
    world.cluster.withPods(vpcCniPod('node-cni'));
    const summary = await runEniPass(world.deps);
    expect(summary).toMatchObject({ pools: 1, poolsCreated: 1, vpcCniNodes: 1 });
    expect(await world.store.getPool('node-a')).toBeDefined();
    expect(await world.store.getPool('node-cni')).toBeUndefined();
    // Nothing went onto the primary ENI ipamd takes for its own.
    const primary = world.ec2.allInterfaces().find((eni) => eni.attachment?.instanceId === shared);
    expect(primary?.secondaryIps).toEqual([]);
    expect(world.ec2.counts.get('AssignPrivateIpAddresses')).toBe(1);
  });

  it('refuses an assign on such a node with a 409 naming the node and why, creating no pool', async () => {
    const world = eniWorld();
    world.addNode('node-cni');
    world.cluster.withPods(vpcCniPod('node-cni'), boundPod('games', 'gs-1', 'node-cni'));
    const error = await assignIp(world.deps, 'node-cni', { namespace: 'games', pod: 'gs-1' }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(VpcCniNodeError);
    expect((error as VpcCniNodeError).statusCode).toBe(409);
    expect((error as Error).message).toMatch(
      /^node node-cni: aws-node runs on this node; berth serves no pool where the VPC CNI does/,
    );
    expect(await world.store.getPool('node-cni')).toBeUndefined();
    expect(world.ec2.mutatingCalls()).toBe(0);
  });

  it("drains a pool once aws-node runs on its node: berth's ENIs go, the primary ENI keeps only what is not berth's", async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 12 } });
    const instanceId = world.addNode('node-a', 'c5.large');
    const theirs = world.ec2.occupyPrimary(instanceId, 1);
    await runEniPass(world.deps);
    world.cluster.withPods(vpcCniPod('node-a'));
    world.clock.now += 2 * MINUTE;
    const summary = await runEniPass(world.deps);
    expect(summary).toMatchObject({ vpcCniNodes: 1, poolsDraining: 1, poolsRemoved: 1 });
    expect(await world.store.getPool('node-a')).toBeUndefined();
    const attached = world.ec2
      .allInterfaces()
      .filter((eni) => eni.attachment?.instanceId === instanceId);
    expect(attached.filter((eni) => tagValue(eni.tags, BERTH_TAGS.cluster))).toEqual([]);
    expect(attached.map((eni) => eni.secondaryIps)).toEqual([theirs]);
  });

  it('counts only a live pod of the aws-node DaemonSet in kube-system', () => {
    const pod = vpcCniPod('node-a');
    expect(isLiveVpcCniPod(pod)).toBe(true);
    expect(isLiveVpcCniPod(vpcCniPod('node-a', 'Succeeded'))).toBe(false);
    expect(isLiveVpcCniPod({ ...pod, metadata: { ...pod.metadata, namespace: 'games' } })).toBe(
      false,
    );
    expect(isLiveVpcCniPod({ ...pod, metadata: { ...pod.metadata, ownerReferences: [] } })).toBe(
      false,
    );
    expect(isLiveVpcCniPod({ ...pod, spec: { containers: [] } })).toBe(false);
  });
});

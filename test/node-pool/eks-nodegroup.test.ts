import {
  AutoScalingClient,
  DescribeAutoScalingInstancesCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import {
  DescribeNodegroupCommand,
  EKSClient,
  ResourceNotFoundException,
  UpdateNodegroupConfigCommand,
} from '@aws-sdk/client-eks';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { EksNodegroupPool } from '../../shared/node-pool/eks-nodegroup.js';
import { InstanceOutsidePoolError, PoolNotFoundError } from '../../shared/node-pool/errors.js';
import { asgInstance } from './fixtures.js';

const eks = mockClient(EKSClient);
const autoScaling = mockClient(AutoScalingClient);
const pool = () =>
  new EksNodegroupPool({
    eks: new EKSClient({ region: 'us-east-1' }),
    autoScaling: new AutoScalingClient({ region: 'us-east-1' }),
    clusterName: 'prod',
    nodegroupName: 'games',
  });
const nodegroup = (desiredSize: number, maxSize = 10) => ({
  nodegroup: {
    nodegroupName: 'games',
    scalingConfig: { minSize: 1, maxSize, desiredSize },
    resources: { autoScalingGroups: [{ name: 'eks-games-1234' }] },
  },
});
const node = { name: 'ip-10-0-0-1', providerId: 'aws:///us-east-1b/i-0123456789abcdef0' };

describe('EksNodegroupPool', () => {
  beforeEach(() => {
    eks.reset();
    autoScaling.reset();
  });

  it('reads the node group size', async () => {
    eks
      .on(DescribeNodegroupCommand, { clusterName: 'prod', nodegroupName: 'games' })
      .resolves(nodegroup(2));
    expect(await pool().describe()).toEqual({ desiredSize: 2, minSize: 1, maxSize: 10 });
  });

  it('names the node group when it does not exist', async () => {
    eks
      .on(DescribeNodegroupCommand)
      .rejects(new ResourceNotFoundException({ message: 'No node group', $metadata: {} }));
    await expect(pool().describe()).rejects.toThrow(PoolNotFoundError);
  });

  it('grows with UpdateNodegroupConfig, capped at the node group maxSize', async () => {
    eks.on(DescribeNodegroupCommand).resolves(nodegroup(2, 6));
    eks.on(UpdateNodegroupConfigCommand).resolves({});
    const change = await pool().growTo(9);
    expect(change).toEqual({
      applied: true,
      description: 'desired size of node group games 2 → 6 (node group maxSize 6)',
    });
    expect(eks.commandCalls(UpdateNodegroupConfigCommand)[0]?.args[0].input).toEqual({
      clusterName: 'prod',
      nodegroupName: 'games',
      scalingConfig: { minSize: 1, maxSize: 6, desiredSize: 6 },
    });
  });

  it('never shrinks the node group', async () => {
    eks.on(DescribeNodegroupCommand).resolves(nodegroup(4));
    expect((await pool().growTo(3)).applied).toBe(false);
    expect(eks.commandCalls(UpdateNodegroupConfigCommand)).toEqual([]);
  });

  it('terminates a chosen node through the node group’s Auto Scaling group', async () => {
    eks.on(DescribeNodegroupCommand).resolves(nodegroup(3));
    autoScaling.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [asgInstance('InService', 'eks-games-1234')],
    });
    autoScaling.on(TerminateInstanceInAutoScalingGroupCommand).resolves({});
    const change = await pool().releaseInstance(node);
    expect(change.description).toContain('eks-games-1234');
    expect(
      autoScaling.commandCalls(TerminateInstanceInAutoScalingGroupCommand)[0]?.args[0].input,
    ).toEqual({
      InstanceId: 'i-0123456789abcdef0',
      ShouldDecrementDesiredCapacity: true,
    });
  });

  it('reads the node group’s Auto Scaling groups once for many released nodes', async () => {
    eks.on(DescribeNodegroupCommand).resolves(nodegroup(3));
    autoScaling.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [asgInstance('InService', 'eks-games-1234')],
    });
    autoScaling.on(TerminateInstanceInAutoScalingGroupCommand).resolves({});
    const games = pool();
    await games.releaseInstance(node);
    await games.releaseInstance({ ...node, name: 'ip-10-0-0-2' });
    await games.releaseInstance({ ...node, name: 'ip-10-0-0-3' });
    expect(eks.commandCalls(DescribeNodegroupCommand)).toHaveLength(1);
    expect(autoScaling.commandCalls(TerminateInstanceInAutoScalingGroupCommand)).toHaveLength(3);
  });

  it('asks again after a failed read of the node group', async () => {
    eks.on(DescribeNodegroupCommand).rejectsOnce(new Error('throttled')).resolves(nodegroup(3));
    autoScaling.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [asgInstance('InService', 'eks-games-1234')],
    });
    autoScaling.on(TerminateInstanceInAutoScalingGroupCommand).resolves({});
    const games = pool();
    await expect(games.releaseInstance(node)).rejects.toThrow('throttled');
    await games.releaseInstance(node);
    expect(eks.commandCalls(DescribeNodegroupCommand)).toHaveLength(2);
  });

  it('refuses an instance outside the node group', async () => {
    eks.on(DescribeNodegroupCommand).resolves(nodegroup(3));
    autoScaling.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [asgInstance('InService', 'eks-system-99')],
    });
    await expect(pool().releaseInstance(node)).rejects.toThrow(InstanceOutsidePoolError);
    expect(autoScaling.commandCalls(TerminateInstanceInAutoScalingGroupCommand)).toEqual([]);
  });
});

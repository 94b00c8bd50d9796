import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  type DescribeAutoScalingGroupsCommandOutput,
  DescribeAutoScalingInstancesCommand,
  type DescribeAutoScalingInstancesCommandOutput,
  SetDesiredCapacityCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { AsgNodePool } from '../../shared/node-pool/asg.js';
import {
  InstanceIdUnknownError,
  InstanceOutsidePoolError,
  PoolNotFoundError,
} from '../../shared/node-pool/errors.js';
import { asgInstance } from './fixtures.js';

const autoScaling = mockClient(AutoScalingClient);
const pool = () =>
  new AsgNodePool({ client: new AutoScalingClient({ region: 'us-east-1' }), groupName: 'games' });
const group = (desired: number, max = 10): DescribeAutoScalingGroupsCommandOutput => ({
  $metadata: {},
  AutoScalingGroups: [
    {
      AutoScalingGroupName: 'games',
      DesiredCapacity: desired,
      MinSize: 1,
      MaxSize: max,
      DefaultCooldown: 300,
      AvailabilityZones: ['us-east-1a'],
      HealthCheckType: 'EC2',
      CreatedTime: new Date(0),
    },
  ],
});
const node = { name: 'ip-10-0-0-1', providerId: 'aws:///us-east-1a/i-0123456789abcdef0' };
const instance = (
  LifecycleState: string,
  AutoScalingGroupName = 'games',
): DescribeAutoScalingInstancesCommandOutput => ({
  $metadata: {},
  AutoScalingInstances: [asgInstance(LifecycleState, AutoScalingGroupName)],
});

describe('AsgNodePool', () => {
  beforeEach(() => autoScaling.reset());

  it('reads the group size', async () => {
    autoScaling
      .on(DescribeAutoScalingGroupsCommand, { AutoScalingGroupNames: ['games'] })
      .resolves(group(3));
    expect(await pool().describe()).toEqual({ desiredSize: 3, minSize: 1, maxSize: 10 });
  });

  it('names the group when it does not exist', async () => {
    autoScaling.on(DescribeAutoScalingGroupsCommand).resolves({ AutoScalingGroups: [] });
    await expect(pool().describe()).rejects.toThrow(PoolNotFoundError);
  });

  it('grows with SetDesiredCapacity', async () => {
    autoScaling.on(DescribeAutoScalingGroupsCommand).resolves(group(3));
    autoScaling.on(SetDesiredCapacityCommand).resolves({});
    const change = await pool().growTo(5);
    expect(change).toEqual({ applied: true, description: 'desired capacity of games 3 → 5' });
    expect(autoScaling.commandCalls(SetDesiredCapacityCommand)[0]?.args[0].input).toEqual({
      AutoScalingGroupName: 'games',
      DesiredCapacity: 5,
      HonorCooldown: false,
    });
  });

  it('never shrinks the group when asked for fewer nodes than it has', async () => {
    autoScaling.on(DescribeAutoScalingGroupsCommand).resolves(group(6));
    const change = await pool().growTo(5);
    expect(change.applied).toBe(false);
    expect(autoScaling.commandCalls(SetDesiredCapacityCommand)).toEqual([]);
  });

  it('stops at the group MaxSize', async () => {
    autoScaling.on(DescribeAutoScalingGroupsCommand).resolves(group(3, 4));
    autoScaling.on(SetDesiredCapacityCommand).resolves({});
    const change = await pool().growTo(8);
    expect(change.description).toContain('(group MaxSize 4)');
    expect(
      autoScaling.commandCalls(SetDesiredCapacityCommand)[0]?.args[0].input.DesiredCapacity,
    ).toBe(4);
  });

  it('terminates the node’s instance and decrements the desired capacity', async () => {
    autoScaling
      .on(DescribeAutoScalingInstancesCommand, { InstanceIds: ['i-0123456789abcdef0'] })
      .resolves(instance('InService'));
    autoScaling.on(TerminateInstanceInAutoScalingGroupCommand).resolves({});
    const change = await pool().releaseInstance(node);
    expect(change.applied).toBe(true);
    expect(
      autoScaling.commandCalls(TerminateInstanceInAutoScalingGroupCommand)[0]?.args[0].input,
    ).toEqual({
      InstanceId: 'i-0123456789abcdef0',
      ShouldDecrementDesiredCapacity: true,
    });
  });

  it('treats an instance already terminating or gone as released, without decrementing again', async () => {
    for (const answer of [
      instance('Terminating:Wait'),
      instance('Terminated'),
      { AutoScalingInstances: [] },
    ]) {
      autoScaling.reset();
      autoScaling.on(DescribeAutoScalingInstancesCommand).resolves(answer);
      const change = await pool().releaseInstance(node);
      expect(change.applied).toBe(false);
      expect(autoScaling.commandCalls(TerminateInstanceInAutoScalingGroupCommand)).toEqual([]);
    }
  });

  it('refuses an instance of another group', async () => {
    autoScaling.on(DescribeAutoScalingInstancesCommand).resolves(instance('InService', 'web'));
    await expect(pool().releaseInstance(node)).rejects.toThrow(InstanceOutsidePoolError);
    expect(autoScaling.commandCalls(TerminateInstanceInAutoScalingGroupCommand)).toEqual([]);
  });

  it('refuses a node without an AWS providerID', async () => {
    for (const providerId of [undefined, 'kind://docker/kind/node', 'aws:///us-east-1a/']) {
      await expect(pool().releaseInstance({ name: 'n', providerId })).rejects.toThrow(
        InstanceIdUnknownError,
      );
    }
    expect(autoScaling.calls()).toEqual([]);
  });
});

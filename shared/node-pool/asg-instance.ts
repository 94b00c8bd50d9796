/**
 * Releasing one instance of an Auto Scaling group: the step the `asg` and `eks-nodegroup` pools
 * share. Described before terminated, so a pass that resumes a half-done removal never
 * decrements the desired capacity a second time.
 */
import {
  type AutoScalingClient,
  DescribeAutoScalingInstancesCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import { InstanceIdUnknownError, InstanceOutsidePoolError } from './errors.js';
import type { PoolChange, PoolNode } from './node-pool.js';
import { instanceIdOf } from './provider-id.js';

/**
 * Terminates the instance behind `node` with `ShouldDecrementDesiredCapacity`, when it is still
 * in service in one of `groups`. `pool` names the pool in errors.
 */
export async function releaseAsgInstance(
  client: AutoScalingClient,
  node: PoolNode,
  groups: ReadonlySet<string>,
  pool: string,
): Promise<PoolChange> {
  const instanceId = instanceIdOf(node.providerId);
  if (instanceId === undefined) throw new InstanceIdUnknownError(node.name, node.providerId);
  const described = await client.send(
    new DescribeAutoScalingInstancesCommand({ InstanceIds: [instanceId] }),
  );
  const instance = described.AutoScalingInstances?.[0];
  if (instance === undefined) {
    return {
      applied: false,
      description: `instance ${instanceId} is no longer in any Auto Scaling group`,
    };
  }
  const group = instance.AutoScalingGroupName ?? '';
  if (!groups.has(group)) throw new InstanceOutsidePoolError(instanceId, group, pool);
  const state = instance.LifecycleState ?? '';
  if (state.startsWith('Terminat')) {
    return { applied: false, description: `instance ${instanceId} is already ${state}` };
  }
  await client.send(
    new TerminateInstanceInAutoScalingGroupCommand({
      InstanceId: instanceId,
      ShouldDecrementDesiredCapacity: true,
    }),
  );
  return {
    applied: true,
    description: `terminated instance ${instanceId} in Auto Scaling group ${group}, desired capacity decremented`,
  };
}

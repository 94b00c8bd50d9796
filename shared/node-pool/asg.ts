/** The `asg` node pool: an EC2 Auto Scaling group berth sizes directly. */
import {
  type AutoScalingClient,
  type AutoScalingGroup,
  DescribeAutoScalingGroupsCommand,
  SetDesiredCapacityCommand,
} from '@aws-sdk/client-auto-scaling';
import { releaseAsgInstance } from './asg-instance.js';
import { PoolNotFoundError } from './errors.js';
import type { NodePool, PoolChange, PoolNode, PoolState } from './node-pool.js';

/** Where the group is. */
export interface AsgNodePoolOptions {
  readonly client: AutoScalingClient;
  readonly groupName: string;
}

/** `NodePool` over one Auto Scaling group. */
export class AsgNodePool implements NodePool {
  readonly type = 'asg';
  readonly #client: AutoScalingClient;
  readonly #groupName: string;

  constructor(options: AsgNodePoolOptions) {
    this.#client = options.client;
    this.#groupName = options.groupName;
  }

  async #group(): Promise<AutoScalingGroup> {
    const out = await this.#client.send(
      new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [this.#groupName] }),
    );
    const group = out.AutoScalingGroups?.find((g) => g.AutoScalingGroupName === this.#groupName);
    if (!group) throw new PoolNotFoundError('Auto Scaling group', this.#groupName);
    return group;
  }

  async describe(): Promise<PoolState> {
    const group = await this.#group();
    return {
      desiredSize: group.DesiredCapacity,
      minSize: group.MinSize,
      maxSize: group.MaxSize,
    };
  }

  async growTo(size: number): Promise<PoolChange> {
    const group = await this.#group();
    const desired = group.DesiredCapacity ?? 0;
    // Read again right before writing: a size computed from an older snapshot must never shrink.
    const target = Math.min(size, group.MaxSize ?? size);
    if (target <= desired) {
      return {
        applied: false,
        description: `desired capacity already ${desired}${target < size ? ` (group MaxSize ${group.MaxSize})` : ''}; not changed`,
      };
    }
    await this.#client.send(
      new SetDesiredCapacityCommand({
        AutoScalingGroupName: this.#groupName,
        DesiredCapacity: target,
        HonorCooldown: false,
      }),
    );
    return {
      applied: true,
      description: `desired capacity of ${this.#groupName} ${desired} → ${target}${target < size ? ` (group MaxSize ${group.MaxSize})` : ''}`,
    };
  }

  releaseInstance(node: PoolNode): Promise<PoolChange> {
    return releaseAsgInstance(this.#client, node, new Set([this.#groupName]), this.#groupName);
  }
}

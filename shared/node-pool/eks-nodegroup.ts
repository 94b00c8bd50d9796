/**
 * The `eks-nodegroup` pool: an EKS managed node group. Its size goes through the EKS API; a
 * chosen node's instance goes through the node group's own Auto Scaling group, since
 * `UpdateNodegroupConfig` cannot say which node leaves.
 */
import type { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import {
  DescribeNodegroupCommand,
  type EKSClient,
  type Nodegroup,
  UpdateNodegroupConfigCommand,
} from '@aws-sdk/client-eks';
import { isNotFound } from '../aws/error-codes.js';
import { releaseAsgInstance } from './asg-instance.js';
import { PoolNotFoundError } from './errors.js';
import type { NodePool, PoolChange, PoolNode, PoolState } from './node-pool.js';

/** Where the node group is. */
export interface EksNodegroupPoolOptions {
  readonly eks: EKSClient;
  readonly autoScaling: AutoScalingClient;
  readonly clusterName: string;
  readonly nodegroupName: string;
}

/** `NodePool` over one EKS managed node group. */
export class EksNodegroupPool implements NodePool {
  readonly type = 'eks-nodegroup';
  readonly #options: EksNodegroupPoolOptions;
  #groups: Promise<ReadonlySet<string>> | undefined;

  constructor(options: EksNodegroupPoolOptions) {
    this.#options = options;
  }

  async #nodegroup(): Promise<Nodegroup> {
    const { eks, clusterName, nodegroupName } = this.#options;
    try {
      const out = await eks.send(new DescribeNodegroupCommand({ clusterName, nodegroupName }));
      if (!out.nodegroup) throw new PoolNotFoundError('EKS node group', nodegroupName);
      return out.nodegroup;
    } catch (error) {
      if (isNotFound(error)) {
        throw new PoolNotFoundError('EKS node group', nodegroupName, { cause: error });
      }
      throw error;
    }
  }

  async describe(): Promise<PoolState> {
    const { scalingConfig } = await this.#nodegroup();
    return {
      desiredSize: scalingConfig?.desiredSize,
      minSize: scalingConfig?.minSize,
      maxSize: scalingConfig?.maxSize,
    };
  }

  async growTo(size: number): Promise<PoolChange> {
    const { clusterName, nodegroupName } = this.#options;
    const { scalingConfig } = await this.#nodegroup();
    const desired = scalingConfig?.desiredSize ?? 0;
    const max = scalingConfig?.maxSize;
    const target = Math.min(size, max ?? size);
    const capped = target < size ? ` (node group maxSize ${max})` : '';
    if (target <= desired) {
      return {
        applied: false,
        description: `desired size already ${desired}${capped}; not changed`,
      };
    }
    await this.#options.eks.send(
      new UpdateNodegroupConfigCommand({
        clusterName,
        nodegroupName,
        scalingConfig: { minSize: scalingConfig?.minSize, maxSize: max, desiredSize: target },
      }),
    );
    return {
      applied: true,
      description: `desired size of node group ${nodegroupName} ${desired} → ${target}${capped}`,
    };
  }

  async releaseInstance(node: PoolNode): Promise<PoolChange> {
    const groups = await this.#autoScalingGroups();
    return releaseAsgInstance(this.#options.autoScaling, node, groups, this.#options.nodegroupName);
  }

  /**
   * The node group's Auto Scaling group names, read once per instance: a scale-in removes many
   * nodes and the names do not change. A failed or empty read (a group still being created) is
   * not kept, so the next call asks again.
   */
  #autoScalingGroups(): Promise<ReadonlySet<string>> {
    if (!this.#groups) {
      const read = this.#nodegroup().then(
        ({ resources }) =>
          new Set((resources?.autoScalingGroups ?? []).flatMap((g) => (g.name ? [g.name] : []))),
      );
      this.#groups = read;
      read.then(
        (names) => {
          if (names.size === 0 && this.#groups === read) this.#groups = undefined;
        },
        () => {
          if (this.#groups === read) this.#groups = undefined;
        },
      );
    }
    return this.#groups;
  }
}

/** Picks the node pool adapter for `scale.nodePool`. */
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { EKSClient } from '@aws-sdk/client-eks';
import type { NodePoolConfig } from '../config/schema.js';
import { AsgNodePool } from './asg.js';
import { EksNodegroupPool } from './eks-nodegroup.js';
import { KarpenterNodePool } from './karpenter.js';
import { KubernetesNodePool } from './kubernetes.js';
import type { NodePool } from './node-pool.js';
import { NoNodePool } from './none.js';

/** Clients and names the adapters need; clients are created when not given. */
export interface NodePoolDeps {
  readonly autoScaling?: AutoScalingClient;
  readonly eks?: EKSClient;
  /** The EKS cluster the node group belongs to (`eks-nodegroup` only). */
  readonly eksClusterName: string;
}

/** The adapter for `config`, built once per composition root. */
export function createNodePool(config: NodePoolConfig, deps: NodePoolDeps): NodePool {
  switch (config.type) {
    case 'none':
      return new NoNodePool();
    case 'kubernetes':
      return new KubernetesNodePool();
    case 'asg':
      return new AsgNodePool({
        client: deps.autoScaling ?? new AutoScalingClient({}),
        groupName: config.name,
      });
    case 'eks-nodegroup':
      return new EksNodegroupPool({
        eks: deps.eks ?? new EKSClient({}),
        autoScaling: deps.autoScaling ?? new AutoScalingClient({}),
        clusterName: deps.eksClusterName,
        nodegroupName: config.name,
      });
    case 'karpenter':
      return new KarpenterNodePool(config.name);
    case 'auto-mode':
      return new KarpenterNodePool(config.name, 'auto-mode');
  }
}

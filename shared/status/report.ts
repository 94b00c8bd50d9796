/** What berth reports of one cluster: its ranges, its pools, and what it read of the cluster. */
import type { RangeUsage } from '../allocation/usage.js';
import type { EniPoolStatus } from '../eni/status.js';
import type { NlbPoolStatus } from '../fronts/pool-directory.js';
import type { HostPortRangeUsage } from '../hostports/allocator.js';
import type { ServiceCidrReport } from '../services/cluster-cidrs.js';
import type { AutoModeNodesReport } from './auto-mode.js';
import type { VpcCniNodesReport } from './vpc-cni.js';

/** `/v1/status` and `berth status --json`. */
export interface StatusReport {
  readonly cluster: string;
  /** Exclusive ranges, then host port ranges (which also tell their busiest and idlest port). */
  readonly ranges: readonly (RangeUsage | HostPortRangeUsage)[];
  /** ENI secondary IP pools, one per node berth manages. */
  readonly pools: readonly EniPoolStatus[];
  /** The EKS Auto Mode nodes left out of the pools, when the cluster's nodes are at hand. */
  readonly autoModeNodes?: AutoModeNodesReport;
  /** The nodes aws-node runs on, which get no pool, when the cluster's pods are at hand. */
  readonly vpcCniNodes?: VpcCniNodesReport;
  /** The cluster's ServiceCIDRs as last read, when it has them (Kubernetes 1.33+). */
  readonly serviceCidrs?: ServiceCidrReport;
  /** The Network Load Balancers of the fronts' pool, where the config has any. */
  readonly nlbPool?: NlbPoolStatus;
}

/** One value and who holds it. */
export interface Holding {
  readonly kind:
    | 'clusterIP'
    | 'nodePort'
    | 'hostPort'
    | 'nlbListener'
    | 'acceleratorDestination'
    | 'publicAddress';
  readonly range: string;
  readonly value: string;
  /** The object that holds it; its name is empty when berth cannot name it (`note` says why). */
  readonly holder: { readonly kind: string; readonly namespace: string; readonly name: string };
  /** Why the holder has no name, and how to find it; absent when it is named. */
  readonly note?: string;
  readonly allocationId: string;
  /** `releasing`: given back, still held until the settle step sees the change committed. */
  readonly state: 'held' | 'releasing';
  /**
   * Where a public front stands: an NLB listener `claimed` (at CREATE), `bound` (in place, its
   * target registering) or `serving` (players reach it); an accelerator destination `wanted` or
   * `allowed`; an NLB slot of the pod's node seat (slots mode) `registering` or `serving`.
   */
  readonly front?: 'claimed' | 'bound' | 'serving' | 'wanted' | 'allowed' | 'registering';
}

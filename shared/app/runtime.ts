/**
 * The composition root shared by the Lambda functions, the local server and the CLI: one place
 * that wires berth's domain to its adapters, so local mode runs exactly what AWS runs.
 */
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { podBindingAdmission } from '../admission/binding.js';
import type { AdmissionHandler, AdmissionHandlers } from '../admission/dispatch.js';
import type { PodAdmissionDeps } from '../admission/pods.js';
import { hostPortRangesOf, type PodFrontsDeps, podAdmission } from '../admission/pods.js';
import { guardPodCreates } from '../admission/removal-guard.js';
import { allow } from '../admission/response.js';
import { serviceAdmission } from '../admission/services.js';
import { ExclusiveAllocator } from '../allocation/allocator.js';
import type { AllocationStore } from '../allocation/store.js';
import { exclusiveRangeUsage } from '../allocation/usage.js';
import type { BerthConfig } from '../config/schema.js';
import { poolPolicy } from '../eni/policy.js';
import { eniPoolStatus } from '../eni/status.js';
import type { BindingFrontsDeps } from '../fronts/binding-fronts.js';
import { hasFronts } from '../fronts/front-spec.js';
import type { NlbPoolStatus } from '../fronts/pool-directory.js';
import { hostPortRangeUsage } from '../hostports/allocator.js';
import { clusterCarriers } from '../k8s/allocation-carriers.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { NodeCache } from '../k8s/node-cache.js';
import { clusterServiceCidrs } from '../k8s/service-cidrs.js';
import { clusterIpRange, nodePortRange, type ValueRange } from '../net/value-range.js';
import { autoModeComputeOf } from '../node-pool/auto-mode.js';
import { AdmissionTrigger, type AdmissionTriggerDeps } from '../scale/admission-trigger.js';
import { admissionsTrigger } from '../scale/trigger.js';
import { type GateLog, keepFresh, ServiceCidrGate } from '../services/cidr-gate.js';
import { serviceCidrReport } from '../services/cluster-cidrs.js';
import { ImmediateSettler, type Settler } from '../settle/settler.js';
import { autoModeNodesReport } from '../status/auto-mode.js';
import { findHolders } from '../status/holders.js';
import type { Holding, StatusReport } from '../status/report.js';
import { vpcCniNodesReport } from '../status/vpc-cni.js';
import type { CapacityMeter } from '../store/capacity.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';
import { DynamoEniStore } from '../store/dynamo-eni-store.js';
import { DynamoFrontStore } from '../store/dynamo-front-store.js';
import { DynamoHostPortStore } from '../store/dynamo-host-port-store.js';
import { DynamoScaleTrigger } from '../store/dynamo-scale-trigger.js';
import { DynamoSlotChainStore } from '../store/dynamo-slot-chain-store.js';
import { type UiState, uiStateOf } from '../ui/state.js';

/** What every runtime is built from. */
export interface RuntimeDeps {
  readonly config: BerthConfig;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  /**
   * The Kubernetes reads of the webhooks (the binding's pod and node, the namespace lists that
   * tell a re-invocation from a copy); without them bindings are allowed untouched, with a warning. The local server passes its full `ClusterApi`; the
   * admission Lambda passes a small HTTPS reader (../k8s/https-node-reader.ts).
   */
  readonly clusterApi?: Pick<ClusterApi, 'getPod' | 'getNode' | 'listPods' | 'listServices'>;
  /**
   * Lists Services, to name the holder of a value whose Service wrote no owner record (`berth
   * status --holder IP`); without it such a holder is given by its allocation id.
   */
  readonly serviceLister?: Pick<ClusterApi, 'listServices'>;
  /** Lists nodes, so status counts the EKS Auto Mode nodes berth leaves out of its ENI pools. */
  readonly nodeLister?: Pick<ClusterApi, 'listNodes'>;
  /** Lists pods, so status names the nodes aws-node runs on, which get no ENI pool. */
  readonly podLister?: Pick<ClusterApi, 'listPods'>;
  /**
   * Where Service admission hands values that wait for the apiserver's commit. Without one,
   * nothing can be read back, so what admission gives back is freed at once.
   */
  readonly settler?: (allocator: ExclusiveAllocator) => Settler;
  readonly now?: () => number;
  readonly random?: () => number;
  readonly randomBytes?: (size: number) => Uint8Array;
  /** Where the Service range gate says what the cluster's ServiceCIDRs changed. */
  readonly log?: GateLog;
  /**
   * Reads the cluster's ServiceCIDRs before a Service write when the last reading is older than
   * a minute: for the admission function, where no repair pass or timer reads them.
   */
  readonly serviceCidrSource?: Required<Pick<ClusterApi, 'listServiceCidrs'>>;
  /** Public fronts of the pod webhooks, when the config has any (./fronts.ts). */
  readonly fronts?: {
    readonly pods: PodFrontsDeps;
    readonly binding: BindingFrontsDeps;
    readonly poolStatus?: () => Promise<NlbPoolStatus>;
  };
  /** Where Services' values are kept: the table, or the admission benchmark's store in memory. */
  readonly allocationStore?: AllocationStore;
  /** Counts the table stores' capacity units (the benchmarks and the cost meter read it). */
  readonly meter?: CapacityMeter;
  /** Hears each pod allocation and the lost races it retried (the host port benchmark). */
  readonly onAllocated?: PodAdmissionDeps['onAllocated'];
  /**
   * How this host asks for a scale-up pass when admitted game servers exhaust the last pass's
   * slack (shared/scale/admission-trigger.ts), while the cluster's scale pass runs on a timer.
   */
  readonly scaleTrigger?: Pick<AdmissionTriggerDeps, 'ask' | 'failed'>;
}

/**
 * The pod webhook with each CREATE and DELETE that is no dry run counted for the scale trigger:
 * the webhook sees only game servers (its match conditions), so their net rise. Counted while the
 * pod is decided, not after it, so the count's write adds nothing to the answer's latency; a
 * CREATE the webhook then refuses (rare: a range exhausted) asks for a pass a little early, which
 * costs one pass at most.
 */
function countedPods(
  handler: AdmissionHandler,
  trigger: AdmissionTrigger | undefined,
): AdmissionHandler {
  if (trigger === undefined) return handler;
  return async (request) => {
    const { operation } = request;
    if (request.dryRun === true || (operation !== 'CREATE' && operation !== 'DELETE')) {
      return handler(request);
    }
    const counting = trigger.counted(operation === 'CREATE' ? 1 : -1);
    try {
      return await handler(request);
    } finally {
      await counting;
    }
  };
}

/** How old a reading of the cluster's ServiceCIDRs a Service write may be decided by. */
export const SERVICE_CIDR_MAX_AGE_MS = 60_000;

/**
 * The most a Service write waits for that reading: well inside the admission function's 4 s, so
 * a cluster API berth cannot reach never turns Service writes into timeouts.
 */
export const SERVICE_CIDR_PATIENCE_MS = 1_000;

/** The exclusive ranges a config declares. */
export interface ServiceRangeSet {
  readonly clusterIps: readonly ValueRange[];
  readonly nodePorts: ValueRange;
}

/** berth, wired. */
export interface BerthRuntime {
  readonly config: BerthConfig;
  readonly ranges: ServiceRangeSet;
  readonly allocationStore: AllocationStore;
  readonly hostPortStore: DynamoHostPortStore;
  readonly allocator: ExclusiveAllocator;
  readonly admission: AdmissionHandlers;
  /** The Service ranges as the cluster's ServiceCIDRs last allowed (start, repair passes). */
  readonly serviceCidrs: ServiceCidrGate;
  /** Whether the table answers. */
  healthy(): Promise<boolean>;
  status(): Promise<StatusReport>;
  /** Who holds a cluster IP, a node port, a host port, or what `namespace/name` holds. */
  holders(query: string): Promise<Holding[]>;
  /** What the web view shows: the status and every host port's use count. */
  uiState(): Promise<UiState>;
}

/** The ranges Services draw from, built once from the validated config. */
function serviceRangesOf(config: BerthConfig): ServiceRangeSet {
  return {
    clusterIps: config.serviceCIDRs.map(clusterIpRange),
    nodePorts: nodePortRange(config.nodePortRange),
  };
}

const NO_CLUSTER_WARNING =
  'berth has no Kubernetes API access (--kubeconfig), so it cannot read the pod: no address annotations';

/** Wires berth for one cluster and one table. */
export function createRuntime(deps: RuntimeDeps): BerthRuntime {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const randomBytes = deps.randomBytes ?? ((size: number) => cryptoRandomBytes(size));
  const { dynamo: client, tableName, meter } = deps;
  const storeOptions = { client, tableName, cluster: config.cluster, meter };
  const allocationStore = deps.allocationStore ?? new DynamoAllocationStore(storeOptions);
  const hostPortStore = new DynamoHostPortStore(storeOptions);
  const allocator = new ExclusiveAllocator({ store: allocationStore, random, now });
  const eniPools = { store: new DynamoEniStore(storeOptions), policy: poolPolicy(config.eni), now };
  const ranges = serviceRangesOf(config);
  const cluster = deps.clusterApi;
  const serviceCidrs = new ServiceCidrGate({
    configured: config.serviceCIDRs,
    follow: config.services.followClusterCIDRs,
    ...(deps.log ? { log: deps.log } : {}),
  });

  // What game servers hold of the public fronts, for `status --holder` (read from the table alone).
  const frontStore =
    deps.fronts?.binding.store ??
    (hasFronts(config) ? new DynamoFrontStore(storeOptions) : undefined);
  const chainStore =
    config.fronts.nlb?.mode === 'slots'
      ? (deps.fronts?.binding.chains ?? new DynamoSlotChainStore(storeOptions))
      : undefined;
  // What tells a re-invocation of a generateName object from a copy: the stored objects.
  const carriers = cluster ? clusterCarriers(cluster) : undefined;
  const pods = podAdmission({
    config,
    ...(carriers ? { carriers } : {}),
    store: hostPortStore,
    random,
    randomBytes,
    now,
    ...(deps.fronts ? { fronts: deps.fronts.pods } : {}),
    onAllocated: deps.onAllocated,
  });
  // One short-lived node cache for both pod webhooks: a burst onto one node reads it once.
  const nodes = cluster
    ? { cached: new NodeCache({ source: cluster, now }), current: cluster }
    : undefined;
  const services = serviceAdmission({
    allocator,
    ranges,
    randomBytes,
    now,
    settler: deps.settler?.(allocator) ?? new ImmediateSettler(allocator),
    cidrs: serviceCidrs,
    ...(carriers ? { carriers } : {}),
  });
  const source = deps.serviceCidrSource;
  const freshCidrs = source
    ? keepFresh(serviceCidrs, {
        read: () => clusterServiceCidrs(source),
        maxAgeMs: SERVICE_CIDR_MAX_AGE_MS,
        patienceMs: SERVICE_CIDR_PATIENCE_MS,
        now,
        failed: (error) =>
          deps.log?.warn(
            `reading the cluster's ServiceCIDRs failed, deciding by the last reading: ${(error as Error).message}`,
          ),
      })
    : undefined;
  const admission: AdmissionHandlers = {
    // A DELETE allocates nothing: only writes wait for a reading of the cluster's ranges.
    services: freshCidrs
      ? async (request) => {
          if (request.operation !== 'DELETE') await freshCidrs();
          return services(request);
        }
      : services,
    // With cluster reads, game servers are refused the nodes berth is removing.
    pods: countedPods(
      nodes ? guardPodCreates(nodes, pods) : pods,
      deps.scaleTrigger && admissionsTrigger(config.scale)
        ? new AdmissionTrigger({
            ...deps.scaleTrigger,
            store: new DynamoScaleTrigger(storeOptions),
            now,
          })
        : undefined,
    ),
    podBinding: nodes
      ? podBindingAdmission({
          cluster: nodes.current,
          nodes: nodes.cached,
          nodeAddressTypes: config.nodeAddressTypes,
          now,
          records: hostPortStore,
          ...(carriers ? { carriers } : {}),
          ...(deps.fronts ? { fronts: deps.fronts.binding } : {}),
        })
      : async () => allow(undefined, [NO_CLUSTER_WARNING]),
  };

  /** The exclusive ranges' use (followed ServiceCIDRs too), every host port count and the ENI pools. */
  const readStatus = async () => {
    const [exclusive, hostPorts, pools] = await Promise.all([
      Promise.all(
        [...serviceCidrs.current.ranges, ranges.nodePorts].map((range) =>
          exclusiveRangeUsage(allocationStore, range),
        ),
      ),
      Promise.all(hostPortRangesOf(config).map((range) => hostPortStore.readCounts(range))),
      eniPoolStatus(eniPools),
    ]);
    return { exclusive, hostPorts, pools };
  };
  /** The NLB pool, or why it could not be read: the rest of the status is read either way. */
  const nlbPoolStatus = async (): Promise<NlbPoolStatus | undefined> => {
    const read = deps.fronts?.poolStatus;
    if (read === undefined) return undefined;
    try {
      return await read();
    } catch (error) {
      return { members: [], missing: [], unreadable: (error as Error).message };
    }
  };
  const runtime: BerthRuntime = {
    config,
    ranges,
    allocationStore,
    hostPortStore,
    allocator,
    admission,
    serviceCidrs,
    async healthy() {
      try {
        await allocationStore.getOwner('~healthz');
        return true;
      } catch {
        return false;
      }
    },
    holders: (query) =>
      findHolders(
        {
          clusterIps: ranges.clusterIps,
          nodePorts: ranges.nodePorts,
          allocations: allocationStore,
          hostPorts: hostPortStore,
          portRanges: [
            ...Object.entries(config.hostPortRanges).map(([name, ports]) => ({
              key: `hostPortRanges.${name}`,
              ports,
            })),
            ...(config.fronts.nlb
              ? [{ key: 'fronts.nlb.listenerPorts', ports: config.fronts.nlb.listenerPorts }]
              : []),
          ],
          ...(deps.serviceLister ? { services: deps.serviceLister } : {}),
          ...(frontStore
            ? {
                fronts: {
                  store: frontStore,
                  ...(cluster ? { pods: cluster } : {}),
                  ...(chainStore ? { chains: chainStore } : {}),
                },
              }
            : {}),
        },
        query,
      ),
    async status() {
      const [{ exclusive, pools, hostPorts }, autoModeNodes, vpcCniNodes, nlbPool] =
        await Promise.all([
          readStatus(),
          deps.nodeLister &&
            autoModeNodesReport(deps.nodeLister, autoModeComputeOf(config.scale.nodePool)),
          deps.podLister && vpcCniNodesReport(deps.podLister),
          nlbPoolStatus(),
        ]);
      return {
        cluster: config.cluster,
        ranges: [
          ...exclusive,
          ...hostPorts.map(({ range, counts, foreign }) =>
            hostPortRangeUsage(range, counts, foreign),
          ),
        ],
        pools,
        ...(autoModeNodes ? { autoModeNodes } : {}),
        ...(vpcCniNodes ? { vpcCniNodes } : {}),
        ...(nlbPool ? { nlbPool } : {}),
        ...(serviceCidrs.current.source === 'cluster'
          ? { serviceCidrs: serviceCidrReport(serviceCidrs.current) }
          : {}),
      };
    },
    async uiState() {
      const at = now();
      const { exclusive, pools, hostPorts } = await readStatus();
      return uiStateOf({ cluster: config.cluster, ranges: exclusive, pools }, hostPorts, at);
    },
  };
  return runtime;
}

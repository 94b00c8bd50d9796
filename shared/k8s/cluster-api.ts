/**
 * The Kubernetes calls berth makes, and only those (Karpenter's narrow-interface shape). The
 * adapter over `@kubernetes/client-node` implements it; domain tests use hand-written fakes.
 */
import type {
  V1IPAddress,
  V1Node,
  V1ObjectMeta,
  V1Pod,
  V1Service,
  V1ServiceCIDR,
} from '@kubernetes/client-node';
import type { JsonPatchOperation } from '../vocabulary/patch.js';

/** A core/v1 Event berth records on an object it looked at. */
export interface ClusterEvent {
  readonly involvedObject: {
    readonly kind: 'Service' | 'Pod' | 'Node';
    readonly namespace?: string;
    readonly name: string;
    readonly uid?: string;
  };
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  /** The berth component that saw it, e.g. `berth-repair`. */
  readonly component: string;
}

/** An Agones Counter's status: `count` of at most `capacity` (`CounterStatus`). */
export interface AgonesCounterStatus {
  readonly count?: number;
  readonly capacity?: number;
}

/** An Agones List's status: `values`, at most `capacity` of them (`ListStatus`). */
export interface AgonesListStatus {
  readonly capacity?: number;
  readonly values?: readonly string[];
}

/**
 * An Agones `GameServer` (`agones.dev/v1`), with only the fields berth reads: who owns it (a
 * `GameServerSet` recreates it when deleted), its `status.state` (Ready, Reserved, Allocated,
 * ...), and its Counters and Lists by name (`status.counters`, `status.lists`), which a
 * multi-session server counts its sessions in (googleforgames/agones v1.56.0
 * `pkg/apis/agones/v1/gameserver.go`, `GameServerStatus`, `CounterStatus`, `ListStatus`).
 */
export interface AgonesGameServer {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: V1ObjectMeta;
  readonly status?: {
    readonly state?: string;
    readonly counters?: Readonly<Record<string, AgonesCounterStatus>>;
    readonly lists?: Readonly<Record<string, AgonesListStatus>>;
  };
}

/**
 * A Karpenter `NodePool` (`karpenter.sh/v1`), with only what berth reads: the lifetime after
 * which Karpenter replaces its nodes (`spec.template.spec.expireAfter`, e.g. `720h` or `Never`;
 * `spec.disruption.expireAfter` before v1), and the NodeClass its nodes are made from
 * (`eks.amazonaws.com` on EKS Auto Mode, `karpenter.k8s.aws` for a self-managed Karpenter).
 */
export interface KarpenterNodePool {
  readonly metadata?: V1ObjectMeta;
  readonly spec?: {
    readonly template?: {
      readonly spec?: {
        readonly expireAfter?: string;
        readonly nodeClassRef?: {
          readonly group?: string;
          readonly kind?: string;
          readonly name?: string;
        };
      };
    };
    readonly disruption?: { readonly expireAfter?: string };
  };
}

/**
 * What the object to delete or evict must still be, or the apiserver refuses with 409
 * (`metav1.Preconditions`): a changed `resourceVersion` means its state may have changed since
 * berth read it.
 */
export interface DeletePreconditions {
  readonly uid?: string;
  readonly resourceVersion?: string;
}

/**
 * How an eviction (policy/v1 `Eviction` on `pods/eviction`) ended: `evicted`; `refused` by a
 * PodDisruptionBudget (429: not now); `changed` since berth read it (409, a failed
 * precondition); `gone` already (404).
 */
export type EvictionOutcome = 'evicted' | 'refused' | 'changed' | 'gone';

/** Options of a paged list. */
export interface ListOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Items per page (limit/continue); lists are never fetched in one response. */
  readonly pageSize?: number;
}

/** What berth reads and changes in a cluster. Absent objects read as undefined. */
export interface ClusterApi {
  getNode(name: string): Promise<V1Node | undefined>;
  getPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  getService(namespace: string, name: string): Promise<V1Service | undefined>;
  listNodes(options?: ListOptions): AsyncIterable<V1Node>;
  listPods(options?: ListOptions): AsyncIterable<V1Pod>;
  listServices(options?: ListOptions): AsyncIterable<V1Service>;
  /** Applies a JSON patch; the `test` operations make it a compare-and-swap. */
  patchNode(name: string, patch: readonly JsonPatchOperation[]): Promise<V1Node>;
  /** Deletes the Node object; one already gone counts as deleted. */
  deleteNode(name: string): Promise<void>;
  createEvent(event: ClusterEvent): Promise<void>;
  /** Sets a Deployment's replicas through its `scale` subresource (the buffer's placeholders). */
  scaleDeployment(namespace: string, name: string, replicas: number): Promise<void>;
  /** Applies a JSON patch to a pod (the protection annotations that follow game state). */
  patchPod(namespace: string, name: string, patch: readonly JsonPatchOperation[]): Promise<V1Pod>;
  /** Evicts a pod through the Eviction API, which honours PodDisruptionBudgets. */
  evictPod(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<EvictionOutcome>;
  /**
   * Agones `GameServer`s of every namespace; none when Agones is not installed (its API group
   * is unknown to the apiserver).
   */
  listGameServers(options?: ListOptions): AsyncIterable<AgonesGameServer>;
  /**
   * Deletes an Agones `GameServer` (its fleet makes another); `changed` when the preconditions
   * no longer hold (it was allocated since, say), `gone` when it is gone already.
   */
  deleteGameServer(
    namespace: string,
    name: string,
    preconditions?: DeletePreconditions,
  ): Promise<'deleted' | 'changed' | 'gone'>;
  /**
   * Applies a JSON patch to an Agones `GameServer` (the label a multi-session server's
   * matchmaker selects on); the patched GameServer.
   */
  patchGameServer(
    namespace: string,
    name: string,
    patch: readonly JsonPatchOperation[],
  ): Promise<AgonesGameServer>;
  /** A Karpenter NodePool by name; undefined when absent or Karpenter is not installed. */
  getKarpenterNodePool(name: string): Promise<KarpenterNodePool | undefined>;
  /**
   * The cluster's `ServiceCIDR`s (`networking.k8s.io/v1`, Kubernetes 1.33+); undefined on a
   * cluster that has no such resource (404), which keeps its ranges in apiserver flags only.
   * Optional: a client without it reads every cluster as one of those.
   */
  listServiceCidrs?(): Promise<readonly V1ServiceCIDR[] | undefined>;
  /**
   * The cluster's `IPAddress`es (`networking.k8s.io/v1`): one per cluster IP the apiserver has
   * allocated, named by the IP. Only on a cluster whose `listServiceCidrs` answered: elsewhere
   * the list fails as not found.
   */
  listIpAddresses?(options?: ListOptions): AsyncIterable<V1IPAddress>;
}

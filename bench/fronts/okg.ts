/**
 * OpenKruise Game (OKG) as its users run it on EKS, per game server, for the fronts benchmark:
 * its `AmazonWebServices-NLB` and `AmazonWebServices-GlobalAcceleratorCustomRouting` network
 * plugins, the GameServer controller that drives them, and (for the NLB plugin) the two
 * controllers its objects go through. Every rule is read from the sources named here.
 *
 * openkruise/kruise-game at d76ace2148a55e621882c9e64c5a1b2438b55c6e (2026-04-23, after v1.0.0):
 * - The plugins run inside OKG's pod mutating webhook (pkg/webhook/mutating_pod.go): CREATE calls
 *   `OnPodAdded`, UPDATE `OnPodUpdated`, DELETE `OnPodDeleted`; a plugin running past
 *   `podMutatingTimeout` (8 s) is answered Allowed with the pod unmutated; a plugin error denies
 *   the write. Pod status writes (the kubelet's) do not pass the webhook (config/webhook: `pods`).
 * - What calls the webhook is the GameServer controller (pkg/controllers/gameserver): 10 workers
 *   (`gameserver-workers`), a reconcile per pod event; `SyncGsToPod` patches the pod when its
 *   state label changes (Creating → Ready) or to bump `game.kruise.io/network-trigger-time`
 *   (RFC 3339, whole seconds) when more than `NETWORK_PROBE_INTERVAL_TIME` (5 s) passed since the
 *   last bump and less than `NETWORK_TOTAL_WAIT_TIME` (60 s) since the network status's
 *   LastTransitionTime (pkg/util/env.go defaults); `SyncPodToGs` patches the GameServer status
 *   when it changed, and sets LastTransitionTime when the status is first made or the pod still
 *   has none (`syncNetworkStatus`), not when NotReady turns Ready; `WaitOrNot` requeues after
 *   5 s while the network is not Ready and 60 s have not passed. After that window nothing bumps
 *   the trigger: a game server still not Ready waits for an unrelated pod change or the cache's
 *   resync (controller-runtime's 10 h; OKG's `--sync-period` is unset by default).
 * - Every write of the manager (the controller's patches and the plugins' creates, which share
 *   `mgr.GetClient()`) waits on client-go's limiter: OKG leaves `--api-server-qps` unset, so
 *   controller-runtime's `GetConfigOrDie` gives 20 QPS, burst 30
 *   (kubernetes-sigs/controller-runtime pkg/client/config/config.go at v0.19.0, the go.mod pin).
 * - cloudprovider/amazonswebservices/nlb.go (`AmazonWebServices-NLB`): all state is in memory
 *   (`podAllocate`, `cache`), rebuilt at `Init` from the Services labelled
 *   `managed-by=game.kruise.io` only. `OnPodUpdated`: no network status yet → NotReady; no Service
 *   → `syncTargetGroupAndService`: take ports in memory (`allocate`: the first NLB in `NlbARNs`
 *   order with enough free ports, the lowest free ports of [min_port, max_port], at most 50 wide,
 *   cloudprovider/options/amazonswebservices_options.go), then `CreateOrUpdate` one ACK
 *   `TargetGroup` per port (label `…-target-group-synced: "false"`, target type ip, owned by the
 *   pod) and the Service; later calls, with the Service there: when fewer TargetGroupBindings
 *   than ports exist, patch each TargetGroup's label back to "false", then, whatever the
 *   bindings, publish the network Ready with `<NLB DNS name>:<port>`: OKG reports Ready before
 *   AWS has a listener. A second manager in the same process watches TargetGroups
 *   (`watchTargetGroup`, its own client, so its own 20/30 limiter); its event handler runs one
 *   event at a time and, for a TargetGroup labelled "false" whose ARN ACK has written, creates an
 *   ACK `Listener` and an AWS Load Balancer Controller `TargetGroupBinding`, then patches the
 *   label "true"; an error is logged and not retried. `OnPodDeleted` frees the ports in memory at
 *   once; the objects go by owner references (the garbage collector).
 * - cloudprovider/amazonswebservices/custom_routing.go at 5e49b2faa575a9ee766eb4ce0ca7fcd6f99f9c7a
 *   (kruise-game#366, 2026-06): `OnPodAdded` and `OnPodUpdated` both `reconcile`: no pod IP →
 *   NotReady; a cached answer for the same IP → Ready; else one AllowCustomRoutingTraffic for
 *   `[podIP] × [GamePort]` on the configured `EndpointId`, then ListCustomRoutingPortMappingsByDestination
 *   (paged) for the pod IP, Ready with the accelerator's address and mapped port (NotReady when
 *   the mapping is not visible yet). `OnPodDeleted`: one DenyCustomRoutingTraffic. The cache is in
 *   memory; `Init` rebuilds it from the pods (without addresses, so each pod's next reconcile
 *   allows again) and denies ALLOWed destinations of the endpoint group with no live pod
 *   (ListCustomRoutingPortMappings, all pages). Its calls, as ACK's and the AWS Load Balancer
 *   Controller's, go through aws-sdk-go-v2's standard retryer (aws/aws-sdk-go-v2 aws/retry,
 *   `NewStandard`): 3 attempts, jittered exponential backoff capped at 20 s, retries paid from a
 *   500-token quota per client at 5 a retry.
 *
 * aws-controllers-k8s/elbv2-controller v1.6.1 (f5962e5) on aws-controllers-k8s/runtime v0.61.0
 * (95428e7), the controller OKG's README has users deploy for TargetGroup and Listener:
 * - One worker per kind (`--reconcile-default-max-concurrent-syncs` 1, pkg/config/config.go;
 *   "Controller Performance" guide: "Default: 1"); only generation changes enqueue
 *   (`GenerationChangedPredicate`, pkg/runtime/reconciler.go), so OKG's label patches do not.
 * - Creating (`Sync` → `createResource`): the finalizer patch, the Create call, then `ReadOne`
 *   (TargetGroup: DescribeTargetGroups, DescribeTargetHealth, DescribeTargetGroupAttributes,
 *   pkg/resource/target_group/sdk.go; Listener: DescribeListeners), retried with exponential
 *   backoff from 500 ms for up to 10 s while the new resource is not visible
 *   (`delayedReadOneAfterCreate`), then the spec and status patches. A failed reconcile is
 *   requeued with controller-runtime's per-item backoff (5 ms doubling to 1,000 s).
 *
 * kubernetes-sigs/aws-load-balancer-controller docs/deploy/configurations.md at 02f6b34 ("Controller
 * command line flags", "throttle config") for the TargetGroupBinding: 3 workers
 * (`targetgroupbinding-max-concurrent-reconciles`); client-side limits RegisterTargets and
 * DeregisterTargets 4/s burst 20, every other ELBv2 call 10/s burst 40; `aws-max-retries` 10. A
 * binding registers the pod's IP once the pod is a ready endpoint of the Service (its
 * EndpointSlice), so an endpoint change enqueues it. Its mutating webhook reads the target group
 * (DescribeTargetGroups) to default the binding's IP address type when OKG leaves it unset.
 *
 * Left out, in OKG's favour: the game server's own start (a pod is ready as soon as it has its
 * IP); the API server's and informers' propagation delays; target health checks (berth's target
 * groups pass the same ones). OKG's known issue kruise-game#186 ("100 GameServers took about 5
 * minutes to become network Ready") is about its AlibabaCloud-NLB plugin, not this one.
 */
import { isThrottled, isTransient } from '../../shared/aws/error-codes.js';
import type { CustomRoutingApi } from '../../shared/fronts/accelerator.js';
import type { Elbv2Api, NetworkLoadBalancer } from '../../shared/fronts/elbv2.js';
import type { SystemFactory } from './harness.js';
import {
  CALL_LATENCY_MS,
  ClientLimiter,
  type SimTime,
  WorkQueue,
  withAcceleratorLatency,
  withElbv2Latency,
} from './kit.js';
import type {
  Destination,
  FrontsUnderTest,
  GameServer,
  Placement,
  PublishedAddress,
} from './seam.js';
import { CONTAINER_PORT } from './workload.js';

/** OKG's GameServer controller workers (`gameserver-workers`). */
export const OKG_GAMESERVER_WORKERS = 10;
/** NETWORK_PROBE_INTERVAL_TIME's default: the trigger bump and the requeue. */
export const OKG_NETWORK_INTERVAL_MS = 5_000;
/** NETWORK_TOTAL_WAIT_TIME's default: no bump after this long since the last transition. */
export const OKG_NETWORK_TOTAL_WAIT_MS = 60_000;
/** A plugin running longer is answered Allowed, unmutated. */
const OKG_PLUGIN_TIMEOUT_MS = 8_000;
/** controller-runtime's client limiter when the QPS is left unset. */
const KUBE_CLIENT_LIMIT = { capacity: 30, refillPerSecond: 20 };
/** The AWS Load Balancer Controller's default client-side ELBv2 throttles. */
const LBC_REGISTRATION_LIMIT = { capacity: 20, refillPerSecond: 4 };
const LBC_OTHER_LIMIT = { capacity: 40, refillPerSecond: 10 };
const LBC_TGB_WORKERS = 3;
const LBC_MAX_ATTEMPTS = 11;
const ACK_WORKERS = 1;
const SDK_MAX_ATTEMPTS = 3;
const SDK_MAX_BACKOFF_MS = 20_000;
/** aws-sdk-go-v2's retry quota (`retry.NewStandard`: 500 tokens, 5 per retry). */
const SDK_RETRY_QUOTA = 500;
const SDK_RETRY_COST = 5;
/** The three AWS clients: ACK's, the AWS Load Balancer Controller's, OKG's own. */
type SdkClient = 'ack' | 'lbc' | 'okg';
/** ACK's `backoffReadOneTimeout` and its backoff's first interval and growth. */
const ACK_READ_AFTER_CREATE_MS = 10_000;
const ACK_READ_FIRST_INTERVAL_MS = 500;
/**
 * A crashed manager pod is replaced and leads again after the lease runs out (controller-runtime's
 * 15 s LeaseDuration) and the new pod starts: an assumption of 20 s.
 */
export const OKG_RESTART_MS = 20_000;
/** The garbage collector deletes a gone pod's dependents this soon (an assumption). */
const GC_DELAY_MS = 1_000;
/** OKG's tag on what it makes. */
const OKG_TAG = { key: 'managed-by', value: 'game.kruise.io' };

/** How the model is configured, as a GameServerSet's `networkConf` and OKG's plugin config. */
export interface OkgConfig {
  /** `NlbARNs`, in order. */
  readonly loadBalancers: readonly NetworkLoadBalancer[];
  readonly vpcId: string;
  /** `[aws.nlb] min_port` / `max_port` (at most 50 ports). */
  readonly minPort: number;
  readonly maxPort: number;
  /** The custom routing plugin's `CustomRoutingEndpointGroupArn` and `EndpointId`. */
  readonly accelerator?: {
    readonly acceleratorArn: string;
    readonly endpointGroupArn: string;
    readonly endpointId: string;
    /** The accelerator's static addresses: each mapping answer carries them. */
    readonly ipAddresses: readonly string[];
  };
}

/** What the model talks to: the APIs as a caller sees them, and the clock. */
export interface OkgDeps {
  readonly time: SimTime;
  readonly random: () => number;
  readonly elbv2: Elbv2Api;
  readonly accelerator?: CustomRoutingApi;
}

/** The process died under a call: whatever it was doing is abandoned. */
class ProcessDied extends Error {
  constructor() {
    super('the OKG manager restarted');
    this.name = 'ProcessDied';
  }
}

interface PodState {
  readonly gs: GameServer;
  placement?: Placement;
  started: boolean;
  /** Epoch ms of the last trigger bump, floored to whole seconds (RFC 3339). */
  triggerAt?: number;
  stateLabel: 'Creating' | 'Ready';
  network?: { readonly ready: boolean; readonly address?: PublishedAddress };
  deleting: boolean;
}

interface GameServerStatus {
  lastTransitionAt: number;
  ready: boolean;
  address?: string;
}

interface TargetGroupObject {
  readonly name: string;
  readonly pod: string;
  readonly loadBalancerArn: string;
  readonly port: number;
  synced: boolean;
  arn?: string;
  deleting: boolean;
}

interface ListenerObject {
  readonly name: string;
  readonly pod: string;
  readonly loadBalancerArn: string;
  readonly port: number;
  readonly targetGroupArn: string;
  arn?: string;
  deleting: boolean;
}

interface BindingObject {
  readonly name: string;
  readonly pod: string;
  readonly targetGroupArn: string;
  finalized: boolean;
  registered?: Destination;
  deleting: boolean;
}

interface PodMutation {
  readonly network?: PodState['network'];
}

/** OKG, its webhook plugins, and the controllers its NLB objects go through. */
export class OkgModel implements FrontsUnderTest {
  readonly name = 'OKG';
  readonly #config: OkgConfig;
  readonly #deps: OkgDeps;
  readonly #time: SimTime;
  // The cluster's objects (what the API server keeps; survives a manager restart).
  readonly #pods = new Map<string, PodState>();
  readonly #gameServers = new Map<string, GameServerStatus>();
  readonly #services = new Map<string, { loadBalancerArn: string; ports: number[] }>();
  readonly #targetGroups = new Map<string, TargetGroupObject>();
  readonly #listeners = new Map<string, ListenerObject>();
  readonly #bindings = new Map<string, BindingObject>();
  // The OKG manager process: its memory and queues go with it.
  #epoch = 0;
  #up = true;
  #podAllocate = new Map<string, { loadBalancerArn: string; ports: number[] }>();
  #portCache = new Map<string, Set<number>>();
  #routingCache = new Map<string, { podIp: string; address?: PublishedAddress }>();
  #gameServerQueue: WorkQueue;
  #managerLimiter: ClientLimiter;
  #watcherLimiter: ClientLimiter;
  #watcherEvents: string[] = [];
  #watcherBusy = false;
  // ACK and the AWS Load Balancer Controller (never restarted here).
  readonly #ackTargetGroups: WorkQueue;
  readonly #ackListeners: WorkQueue;
  readonly #lbcBindings: WorkQueue;
  readonly #ackLimiter: ClientLimiter;
  readonly #lbcKubeLimiter: ClientLimiter;
  readonly #lbcRegistration: ClientLimiter;
  readonly #lbcOther: ClientLimiter;
  readonly #retryQuota = new Map<SdkClient, number>();

  constructor(config: OkgConfig, deps: OkgDeps) {
    if (config.maxPort - config.minPort + 1 > 50) {
      throw new Error('OKG refuses an NLB port range wider than 50 (one listener per port)');
    }
    this.#config = config;
    this.#deps = deps;
    this.#time = deps.time;
    this.#gameServerQueue = this.#newGameServerQueue();
    this.#managerLimiter = new ClientLimiter(KUBE_CLIENT_LIMIT, this.#time);
    this.#watcherLimiter = new ClientLimiter(KUBE_CLIENT_LIMIT, this.#time);
    this.#ackLimiter = new ClientLimiter(KUBE_CLIENT_LIMIT, this.#time);
    this.#lbcKubeLimiter = new ClientLimiter(KUBE_CLIENT_LIMIT, this.#time);
    this.#lbcRegistration = new ClientLimiter(LBC_REGISTRATION_LIMIT, this.#time);
    this.#lbcOther = new ClientLimiter(LBC_OTHER_LIMIT, this.#time);
    this.#ackTargetGroups = new WorkQueue(this.#time, ACK_WORKERS, (key) =>
      this.#reconcileAckTargetGroup(key),
    );
    this.#ackListeners = new WorkQueue(this.#time, ACK_WORKERS, (key) =>
      this.#reconcileAckListener(key),
    );
    this.#lbcBindings = new WorkQueue(this.#time, LBC_TGB_WORKERS, (key) =>
      this.#reconcileBinding(key),
    );
  }

  // ---- FrontsUnderTest ------------------------------------------------------------------------

  async created(gs: GameServer): Promise<void> {
    const pod: PodState = { gs, started: false, stateLabel: 'Creating', deleting: false };
    this.#pods.set(gs.name, pod);
    if (this.#up) {
      // OnPodAdded: the NLB plugin leaves the pod; custom routing finds no IP yet (NotReady).
      if (gs.front === 'accelerator') pod.network = { ready: false };
      this.#gameServerQueue.add(gs.name);
    }
  }

  async refused(gs: GameServer): Promise<void> {
    // OKG's informers never see a pod the API server did not store.
    this.#pods.delete(gs.name);
  }

  async bound(gs: GameServer, placement: Placement): Promise<void> {
    const pod = this.#pods.get(gs.name);
    if (pod) pod.placement = placement;
  }

  async started(gs: GameServer, placement: Placement): Promise<void> {
    const pod = this.#pods.get(gs.name);
    if (!pod) return;
    pod.placement = placement;
    pod.started = true;
    // A status write: OKG's informer sees it (no webhook); the pod is now a ready endpoint.
    this.#gameServerQueue.add(gs.name);
    for (const binding of this.#bindings.values()) {
      if (binding.pod === gs.name) this.#lbcBindings.add(binding.name);
    }
  }

  async deleted(gs: GameServer): Promise<void> {
    const pod = this.#pods.get(gs.name);
    if (!pod) return;
    pod.deleting = true;
    if (!this.#up) return;
    // The DELETE passes the webhook: OnPodDeleted.
    const epoch = this.#epoch;
    try {
      if (gs.front === 'nlb') this.#deAllocate(gs.name);
      else await this.#denyRouting(epoch, gs);
    } catch {
      // A failed OnPodDeleted denies the DELETE; the harness's pod goes anyway (force).
    }
  }

  async gone(gs: GameServer): Promise<void> {
    this.#pods.delete(gs.name);
    this.#gameServers.delete(gs.name);
    await this.#time.sleep(GC_DELAY_MS);
    // Owner references: the Service, TargetGroups, Listeners and bindings follow the pod.
    this.#services.delete(gs.name);
    for (const tg of this.#targetGroups.values()) {
      if (tg.pod === gs.name) {
        tg.deleting = true;
        this.#ackTargetGroups.add(tg.name);
      }
    }
    for (const listener of this.#listeners.values()) {
      if (listener.pod === gs.name) {
        listener.deleting = true;
        this.#ackListeners.add(listener.name);
      }
    }
    for (const binding of this.#bindings.values()) {
      if (binding.pod === gs.name) {
        binding.deleting = true;
        this.#lbcBindings.add(binding.name);
      }
    }
  }

  published(gs: GameServer): PublishedAddress | undefined {
    const network = this.#pods.get(gs.name)?.network;
    return network?.ready ? network.address : undefined;
  }

  destination(gs: GameServer, placement: Placement): Destination {
    return { ip: placement.podIp, port: gs.containerPort };
  }

  async crash(): Promise<void> {
    this.#epoch++;
    this.#up = false;
    this.#gameServerQueue.stop();
    this.#watcherEvents = [];
    this.#watcherBusy = false;
    this.#podAllocate = new Map();
    this.#portCache = new Map();
    this.#routingCache = new Map();
    void this.#time.sleep(OKG_RESTART_MS).then(() => this.#start());
  }

  stop(): void {
    this.#epoch++;
    this.#up = false;
    this.#gameServerQueue.stop();
    this.#ackTargetGroups.stop();
    this.#ackListeners.stop();
    this.#lbcBindings.stop();
  }

  // ---- the OKG manager: start, GameServer controller, webhook -----------------------------------

  #newGameServerQueue(): WorkQueue {
    return new WorkQueue(this.#time, OKG_GAMESERVER_WORKERS, (key) =>
      this.#reconcileGameServer(this.#epoch, key),
    );
  }

  /** A new manager: `Init` of each plugin, then the informers list everything. */
  async #start(): Promise<void> {
    const epoch = this.#epoch;
    this.#managerLimiter = new ClientLimiter(KUBE_CLIENT_LIMIT, this.#time);
    this.#watcherLimiter = new ClientLimiter(KUBE_CLIENT_LIMIT, this.#time);
    this.#gameServerQueue = this.#newGameServerQueue();
    // NLB Init: the ports of the labelled Services, nothing else.
    for (const [pod, service] of this.#services) {
      for (const port of service.ports) this.#cachePorts(service.loadBalancerArn).add(port);
      this.#podAllocate.set(pod, {
        loadBalancerArn: service.loadBalancerArn,
        ports: service.ports,
      });
    }
    // Custom routing Init: live pods with an IP, then orphan ALLOWs of the endpoint group.
    const routed = [...this.#pods.values()].filter(
      (pod) => pod.gs.front === 'accelerator' && !pod.deleting && pod.started && pod.placement,
    );
    for (const pod of routed) {
      this.#routingCache.set(pod.gs.name, { podIp: pod.placement?.podIp ?? '' });
    }
    this.#up = true;
    if (routed.length > 0) {
      try {
        await this.#denyRoutingOrphans(
          epoch,
          new Set(routed.map((pod) => pod.placement?.podIp ?? '')),
        );
      } catch {
        // Best effort, as Init's: logged and left.
      }
    }
    for (const name of this.#pods.keys()) this.#gameServerQueue.add(name);
    for (const tg of this.#targetGroups.values()) this.#watch(tg.name);
  }

  #alive(epoch: number): void {
    if (epoch !== this.#epoch) throw new ProcessDied();
  }

  async #kubeWrite(limiter: ClientLimiter, epoch?: number): Promise<void> {
    await limiter.wait();
    await this.#time.sleep(CALL_LATENCY_MS.kubeWrite);
    if (epoch !== undefined) this.#alive(epoch);
  }

  async #reconcileGameServer(epoch: number, name: string): Promise<number | undefined> {
    const pod = this.#pods.get(name);
    if (!pod || pod.deleting) return undefined;
    const now = this.#time.now();
    const status = this.#gameServers.get(name);
    // The pod as read at the start (SyncPodToGs reads this copy, not the patched one).
    const seen = pod.network;
    // SyncGsToPod.
    const label = pod.started ? 'Ready' : 'Creating';
    let bump = pod.triggerAt === undefined;
    if (pod.triggerAt !== undefined && status !== undefined) {
      bump =
        now - pod.triggerAt > OKG_NETWORK_INTERVAL_MS &&
        now - status.lastTransitionAt < OKG_NETWORK_TOTAL_WAIT_MS;
    }
    if (bump || label !== pod.stateLabel) {
      await this.#patchPod(epoch, pod, () => {
        pod.stateLabel = label;
        if (bump) pod.triggerAt = Math.floor(now / 1000) * 1000;
      });
    }
    // SyncPodToGs (syncNetworkStatus).
    let next: GameServerStatus;
    if (status === undefined) next = { lastTransitionAt: now, ready: false };
    else if (seen === undefined) next = { ...status, lastTransitionAt: now, ready: false };
    else {
      const address = seen.address ? `${seen.address.host}:${seen.address.port}` : undefined;
      next = { ...status, ready: seen.ready, ...(address ? { address } : {}) };
    }
    const changed =
      status === undefined ||
      status.lastTransitionAt !== next.lastTransitionAt ||
      status.ready !== next.ready ||
      status.address !== next.address;
    if (changed) {
      await this.#kubeWrite(this.#managerLimiter, epoch);
      this.#gameServers.set(name, next);
    }
    // WaitOrNot.
    if (!next.ready && this.#time.now() - next.lastTransitionAt < OKG_NETWORK_TOTAL_WAIT_MS) {
      return OKG_NETWORK_INTERVAL_MS;
    }
    return undefined;
  }

  /**
   * A metadata patch of the pod: the API server calls OKG's webhook (the plugin) inside it, then
   * stores the pod with the plugin's mutation; the update event comes back to the controller.
   */
  async #patchPod(epoch: number, pod: PodState, change: () => void): Promise<void> {
    await this.#managerLimiter.wait();
    await this.#time.sleep(CALL_LATENCY_MS.kubeWrite / 2);
    this.#alive(epoch);
    const plugin = this.#onPodUpdated(epoch, pod);
    const timedOut = Symbol('timeout');
    const answer = await Promise.race([
      plugin,
      this.#time.sleep(OKG_PLUGIN_TIMEOUT_MS).then(() => timedOut),
    ]);
    // A plugin error denies the patch (the controller retries with backoff).
    this.#alive(epoch);
    change();
    if (answer !== timedOut) {
      const mutation = answer as PodMutation;
      if (mutation.network !== undefined) pod.network = mutation.network;
    } else {
      plugin.catch(() => undefined);
    }
    await this.#time.sleep(CALL_LATENCY_MS.kubeWrite / 2);
    this.#gameServerQueue.add(pod.gs.name);
  }

  async #onPodUpdated(epoch: number, pod: PodState): Promise<PodMutation> {
    return pod.gs.front === 'nlb'
      ? this.#nlbOnPodUpdated(epoch, pod)
      : this.#routingReconcile(epoch, pod);
  }

  // ---- AmazonWebServices-NLB ------------------------------------------------------------------

  async #nlbOnPodUpdated(epoch: number, pod: PodState): Promise<PodMutation> {
    if (pod.network === undefined) return { network: { ready: false } };
    const name = pod.gs.name;
    const service = this.#services.get(name);
    if (service === undefined) {
      await this.#syncTargetGroupAndService(epoch, pod);
      return {};
    }
    const bindings = [...this.#bindings.values()].filter((b) => b.pod === name && !b.deleting);
    if (bindings.length !== service.ports.length) {
      for (const tg of this.#targetGroups.values()) {
        if (tg.pod !== name || tg.deleting) continue;
        await this.#kubeWrite(this.#managerLimiter, epoch);
        tg.synced = false;
        this.#watch(tg.name);
      }
    }
    const dnsName = this.#config.loadBalancers.find(
      (lb) => lb.arn === service.loadBalancerArn,
    )?.dnsName;
    const port = service.ports[0];
    if (dnsName === undefined || port === undefined) return {};
    return {
      network: { ready: true, address: { host: dnsName, port, at: this.#time.now() } },
    };
  }

  #cachePorts(loadBalancerArn: string): Set<number> {
    let taken = this.#portCache.get(loadBalancerArn);
    if (!taken) {
      taken = new Set();
      this.#portCache.set(loadBalancerArn, taken);
    }
    return taken;
  }

  /** `allocate`: the first NLB in order with a free port, its lowest free port. */
  #allocate(name: string): { loadBalancerArn: string; ports: number[] } | undefined {
    for (const lb of this.#config.loadBalancers) {
      const taken = this.#cachePorts(lb.arn);
      for (let port = this.#config.minPort; port <= this.#config.maxPort; port++) {
        if (taken.has(port)) continue;
        taken.add(port);
        const allocated = { loadBalancerArn: lb.arn, ports: [port] };
        this.#podAllocate.set(name, allocated);
        return allocated;
      }
    }
    return undefined;
  }

  #deAllocate(name: string): void {
    const allocated = this.#podAllocate.get(name);
    if (!allocated) return;
    for (const port of allocated.ports) this.#cachePorts(allocated.loadBalancerArn).delete(port);
    this.#podAllocate.delete(name);
  }

  async #syncTargetGroupAndService(epoch: number, pod: PodState): Promise<void> {
    const name = pod.gs.name;
    const allocated = this.#podAllocate.get(name) ?? this.#allocate(name);
    if (allocated === undefined) throw new Error(`no NLB has 1 enough available ports for ${name}`);
    for (const port of allocated.ports) {
      const tgName = `${name}-${port}`;
      if (this.#targetGroups.has(tgName)) continue;
      await this.#kubeWrite(this.#managerLimiter, epoch);
      this.#targetGroups.set(tgName, {
        name: tgName,
        pod: name,
        loadBalancerArn: allocated.loadBalancerArn,
        port,
        synced: false,
        deleting: false,
      });
      this.#ackTargetGroups.add(tgName);
      this.#watch(tgName);
    }
    if (!this.#services.has(name)) {
      await this.#kubeWrite(this.#managerLimiter, epoch);
      this.#services.set(name, {
        loadBalancerArn: allocated.loadBalancerArn,
        ports: [...allocated.ports],
      });
    }
  }

  /** An event of the TargetGroup informer, handled one at a time by the watcher. */
  #watch(tgName: string): void {
    if (!this.#up) return;
    this.#watcherEvents.push(tgName);
    if (!this.#watcherBusy) void this.#drainWatcher(this.#epoch);
  }

  async #drainWatcher(epoch: number): Promise<void> {
    this.#watcherBusy = true;
    while (epoch === this.#epoch) {
      const name = this.#watcherEvents.shift();
      if (name === undefined) {
        this.#watcherBusy = false;
        return;
      }
      const tg = this.#targetGroups.get(name);
      if (!tg || tg.synced || tg.arn === undefined || tg.deleting) continue;
      try {
        await this.#syncListenerAndBinding(epoch, tg, tg.arn);
      } catch {
        // handleTargetGroupEvent logs the error and drops the event.
      }
    }
  }

  async #syncListenerAndBinding(
    epoch: number,
    tg: TargetGroupObject,
    targetGroupArn: string,
  ): Promise<void> {
    if (!this.#listeners.has(tg.name)) {
      await this.#kubeWrite(this.#watcherLimiter, epoch);
      this.#listeners.set(tg.name, {
        name: tg.name,
        pod: tg.pod,
        loadBalancerArn: tg.loadBalancerArn,
        port: tg.port,
        targetGroupArn,
        deleting: false,
      });
      this.#ackListeners.add(tg.name);
    }
    if (!this.#bindings.has(tg.name)) {
      // The binding's create passes the AWS Load Balancer Controller's webhook, which reads the
      // target group to default the IP address type.
      await this.#lbcOther.wait();
      await this.#deps.elbv2.describeTargetGroups({ names: [tg.name] });
      await this.#kubeWrite(this.#watcherLimiter, epoch);
      this.#bindings.set(tg.name, {
        name: tg.name,
        pod: tg.pod,
        targetGroupArn,
        finalized: false,
        deleting: false,
      });
      this.#lbcBindings.add(tg.name);
    }
    await this.#kubeWrite(this.#watcherLimiter, epoch);
    tg.synced = true;
  }

  // ---- ACK elbv2-controller -------------------------------------------------------------------

  /** aws-sdk-go-v2's standard retryer around one call. */
  /**
   * aws-sdk-go-v2's standard retryer around one call of `client`: jittered exponential backoff,
   * each retry paid from the client's retry quota (500 tokens, 5 a retry, a retried call that
   * succeeds paying its cost back and a first-try success adding 1); an empty quota retries no more.
   */
  async #sdk<T>(
    client: SdkClient,
    call: () => Promise<T>,
    maxAttempts = SDK_MAX_ATTEMPTS,
  ): Promise<T> {
    let paid = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await call();
        const quota = this.#retryQuota.get(client) ?? SDK_RETRY_QUOTA;
        this.#retryQuota.set(client, Math.min(SDK_RETRY_QUOTA, quota + (paid > 0 ? paid : 1)));
        return answer;
      } catch (error) {
        if (attempt >= maxAttempts || !(isThrottled(error) || isTransient(error))) throw error;
        const quota = this.#retryQuota.get(client) ?? SDK_RETRY_QUOTA;
        if (quota < SDK_RETRY_COST) throw error;
        this.#retryQuota.set(client, quota - SDK_RETRY_COST);
        paid = SDK_RETRY_COST;
        const cap = Math.min(SDK_MAX_BACKOFF_MS, 1000 * 2 ** attempt);
        await this.#time.sleep(this.#deps.random() * cap);
      }
    }
  }

  /** ACK's delete: the AWS resource when it was made (retried by the queue), then the finalizer. */
  async #ackDelete(arn: string | undefined, remove: (arn: string) => Promise<void>): Promise<void> {
    if (arn !== undefined) await this.#sdk('ack', () => remove(arn));
    await this.#kubeWrite(this.#ackLimiter);
  }

  async #reconcileAckTargetGroup(name: string): Promise<number | undefined> {
    const tg = this.#targetGroups.get(name);
    if (!tg) return undefined;
    const { elbv2 } = this.#deps;
    if (tg.deleting) {
      await this.#ackDelete(tg.arn, (arn) => elbv2.deleteTargetGroup(arn));
      this.#targetGroups.delete(name);
      return undefined;
    }
    if (tg.arn !== undefined) return undefined;
    await this.#kubeWrite(this.#ackLimiter);
    const made = await this.#sdk('ack', () =>
      elbv2.createTargetGroup({
        name,
        protocol: 'UDP',
        port: this.#pods.get(tg.pod)?.gs.containerPort ?? 7777,
        vpcId: this.#config.vpcId,
        tags: [OKG_TAG],
      }),
    );
    // ReadOne: the group, its targets, its attributes (a call the interface does not carry).
    await this.#sdk('ack', () => elbv2.describeTargetGroups({ names: [name] }));
    await this.#sdk('ack', () => elbv2.describeTargets(made.arn));
    await this.#time.sleep(CALL_LATENCY_MS.elbv2Read);
    await this.#kubeWrite(this.#ackLimiter);
    await this.#kubeWrite(this.#ackLimiter);
    tg.arn = made.arn;
    this.#watch(name);
    return undefined;
  }

  async #reconcileAckListener(name: string): Promise<number | undefined> {
    const listener = this.#listeners.get(name);
    if (!listener) return undefined;
    const { elbv2 } = this.#deps;
    if (listener.deleting) {
      await this.#ackDelete(listener.arn, (arn) => elbv2.deleteListener(arn));
      this.#listeners.delete(name);
      return undefined;
    }
    if (listener.arn !== undefined) return undefined;
    await this.#kubeWrite(this.#ackLimiter);
    const made = await this.#sdk('ack', () =>
      elbv2.createListener({
        loadBalancerArn: listener.loadBalancerArn,
        port: listener.port,
        protocol: 'UDP',
        targetGroupArn: listener.targetGroupArn,
        tags: [OKG_TAG],
      }),
    );
    listener.arn = made.arn;
    await this.#readListenerAfterCreate(listener.loadBalancerArn, made.arn);
    await this.#kubeWrite(this.#ackLimiter);
    await this.#kubeWrite(this.#ackLimiter);
    return undefined;
  }

  /** ReadOne, then `delayedReadOneAfterCreate` while the new listener is not visible. */
  async #readListenerAfterCreate(loadBalancerArn: string, arn: string): Promise<void> {
    const started = this.#time.now();
    let interval = ACK_READ_FIRST_INTERVAL_MS;
    for (;;) {
      const page = await this.#sdk('ack', () =>
        this.#deps.elbv2.describeListeners(loadBalancerArn),
      );
      if (page.items.some((item) => item.arn === arn)) return;
      if (this.#time.now() - started >= ACK_READ_AFTER_CREATE_MS) {
        throw new Error('ReadOne failed after create');
      }
      await this.#time.sleep(interval * (0.5 + this.#deps.random()));
      interval *= 1.5;
    }
  }

  // ---- AWS Load Balancer Controller: TargetGroupBinding ----------------------------------------

  async #reconcileBinding(name: string): Promise<number | undefined> {
    const binding = this.#bindings.get(name);
    if (!binding) return undefined;
    const { elbv2 } = this.#deps;
    if (binding.deleting) {
      const registered = binding.registered;
      if (registered !== undefined) {
        await this.#lbcRegistration.wait();
        await this.#sdk(
          'lbc',
          () => elbv2.deregisterTargets(binding.targetGroupArn, [registered]),
          LBC_MAX_ATTEMPTS,
        ).catch(() => undefined);
      }
      await this.#kubeWrite(this.#lbcKubeLimiter);
      this.#bindings.delete(name);
      return undefined;
    }
    if (!binding.finalized) {
      await this.#kubeWrite(this.#lbcKubeLimiter);
      binding.finalized = true;
    }
    const pod = this.#pods.get(binding.pod);
    if (!pod?.started || !pod.placement || binding.registered !== undefined) return undefined;
    const target = this.destination(pod.gs, pod.placement);
    await this.#lbcOther.wait();
    const targets = await this.#sdk(
      'lbc',
      () => elbv2.describeTargets(binding.targetGroupArn),
      LBC_MAX_ATTEMPTS,
    );
    if (!targets.some((t) => t.ip === target.ip && t.port === target.port)) {
      await this.#lbcRegistration.wait();
      await this.#sdk(
        'lbc',
        () => elbv2.registerTargets(binding.targetGroupArn, [target]),
        LBC_MAX_ATTEMPTS,
      );
    }
    await this.#kubeWrite(this.#lbcKubeLimiter);
    binding.registered = target;
    return undefined;
  }

  // ---- AmazonWebServices-GlobalAcceleratorCustomRouting ---------------------------------------

  #routing(): { api: CustomRoutingApi; config: NonNullable<OkgConfig['accelerator']> } {
    const api = this.#deps.accelerator;
    const config = this.#config.accelerator;
    if (!api || !config) throw new Error('no custom routing accelerator configured');
    return { api, config };
  }

  async #routingReconcile(epoch: number, pod: PodState): Promise<PodMutation> {
    const placement = pod.placement;
    if (!pod.started || placement === undefined) return { network: { ready: false } };
    const name = pod.gs.name;
    const cached = this.#routingCache.get(name);
    if (cached?.podIp === placement.podIp && cached.address !== undefined) {
      return { network: { ready: true, address: cached.address } };
    }
    const { api, config } = this.#routing();
    await this.#sdk('okg', () =>
      api.allowTraffic({
        endpointGroupArn: config.endpointGroupArn,
        endpointId: config.endpointId,
        addresses: [placement.podIp],
        ports: [pod.gs.containerPort],
      }),
    );
    this.#alive(epoch);
    let address: PublishedAddress | undefined;
    let token: string | undefined;
    do {
      const page = await this.#sdk('okg', () =>
        api.listPortMappingsByDestination(config.endpointId, placement.podIp, token),
      );
      this.#alive(epoch);
      const mapping = page.mappings.find((m) => m.destinationPort === pod.gs.containerPort);
      const host = config.ipAddresses[0];
      if (mapping && host !== undefined && address === undefined) {
        address = { host, port: mapping.acceleratorPort, at: this.#time.now() };
      }
      token = page.nextToken;
    } while (token !== undefined);
    this.#routingCache.set(name, { podIp: placement.podIp, ...(address ? { address } : {}) });
    return address ? { network: { ready: true, address } } : { network: { ready: false } };
  }

  async #denyRouting(epoch: number, gs: GameServer): Promise<void> {
    const cached = this.#routingCache.get(gs.name);
    const podIp = cached?.podIp ?? this.#pods.get(gs.name)?.placement?.podIp;
    if (podIp === undefined) return;
    const { api, config } = this.#routing();
    await this.#sdk('okg', () =>
      api.denyTraffic({
        endpointGroupArn: config.endpointGroupArn,
        endpointId: config.endpointId,
        addresses: [podIp],
        ports: [gs.containerPort],
      }),
    );
    this.#alive(epoch);
    this.#routingCache.delete(gs.name);
  }

  async #denyRoutingOrphans(epoch: number, live: ReadonlySet<string>): Promise<void> {
    const { api, config } = this.#routing();
    const orphans = new Map<string, Set<number>>();
    let token: string | undefined;
    do {
      const page = await this.#sdk('okg', () =>
        api.listPortMappings(config.acceleratorArn, config.endpointGroupArn, token),
      );
      this.#alive(epoch);
      for (const m of page.mappings) {
        if (m.endpointId !== config.endpointId || m.trafficState !== 'ALLOW') continue;
        if (live.has(m.destinationAddress)) continue;
        const ports = orphans.get(m.destinationAddress) ?? new Set<number>();
        ports.add(m.destinationPort);
        orphans.set(m.destinationAddress, ports);
      }
      token = page.nextToken;
    } while (token !== undefined);
    for (const [address, ports] of orphans) {
      await this.#sdk('okg', () =>
        api.denyTraffic({
          endpointGroupArn: config.endpointGroupArn,
          endpointId: config.endpointId,
          addresses: [address],
          ports: [...ports],
        }),
      ).catch(() => undefined);
    }
  }
}

/**
 * OKG as the benchmark runs it: the pool's NLBs in order with the widest port range its plugin
 * takes (50 ports, `[aws.nlb]` min_port 30000 / max_port 30049), and the accelerator's endpoint
 * group over the container port alone (`GamePort`), its `EndpointId` the pods' subnet.
 */
export const okgSystem: SystemFactory = {
  name: 'OKG',
  acceleratorPorts: [CONTAINER_PORT, CONTAINER_PORT],
  make: (world) =>
    new OkgModel(
      {
        loadBalancers: world.loadBalancers,
        vpcId: world.vpcId,
        minPort: 30_000,
        maxPort: 30_049,
        accelerator: {
          acceleratorArn: world.acceleratorArn,
          endpointGroupArn: world.endpointGroupArn,
          endpointId: world.subnetId,
          ipAddresses: world.acceleratorIps,
        },
      },
      {
        time: world.time,
        random: world.random,
        elbv2: withElbv2Latency(world.elbv2, world.time.sleep),
        accelerator: withAcceleratorLatency(world.accelerator, world.time.sleep),
      },
    ),
};

/**
 * What the fronts benchmark drives and reads: one system that gives game servers public fronts
 * (berth's fronts worker, or the OpenKruise Game model) behind one interface, fed the same pod
 * events on the same fakes. The harness never looks inside: a game server is reachable when the
 * fakes hold a listener or an allowed destination for the address the system published.
 */
import type { FrontKind } from '../../shared/fronts/model.js';

/** One game server of the workload: a pod with one fronted UDP port. */
export interface GameServer {
  readonly name: string;
  readonly namespace: string;
  /** The pod's uid (berth's allocation id). */
  readonly allocationId: string;
  readonly front: FrontKind;
  /** The port the game server's container listens on. */
  readonly containerPort: number;
}

/** Where the scheduler put a game server, and what its node and pod got. */
export interface Placement {
  readonly node: string;
  readonly nodeAddress: string;
  readonly subnetId: string;
  /** The host port berth handed out on the node (a front's destination for berth). */
  readonly hostPort: number;
  /** The pod's own VPC address (a front's destination for OKG, whose pods take VPC CNI IPs). */
  readonly podIp: string;
}

/** An address a player dials, as the system wrote it for the game server. */
export interface PublishedAddress {
  /** NLB DNS name, or an accelerator IP. */
  readonly host: string;
  readonly port: number;
  /** Epoch ms it was written. */
  readonly at: number;
}

/** The address and port a front must reach for one game server. */
export interface Destination {
  readonly ip: string;
  readonly port: number;
}

/**
 * The system under test. Each hook is the cluster event as that system sees it, awaited by the
 * harness only as long as the API server would wait (an admission); work it queues runs on its
 * own on the harness's simulated clock.
 */
export interface FrontsUnderTest {
  readonly name: string;
  /** The pod's CREATE is admitted (berth claims NLB listener slots here). */
  created(gs: GameServer): Promise<void>;
  /** The CREATE was admitted but the API server did not store the pod (another webhook refused it). */
  refused(gs: GameServer): Promise<void>;
  /** The scheduler binds the pod (berth's binding admission). */
  bound(gs: GameServer, placement: Placement): Promise<void>;
  /** The kubelet reports the pod running and ready with its IP. */
  started(gs: GameServer, placement: Placement): Promise<void>;
  /** The pod's DELETE is admitted; it is gone from the API `gracePeriodMs` later. */
  deleted(gs: GameServer): Promise<void>;
  /** The pod is gone from the API. */
  gone(gs: GameServer): Promise<void>;
  /** The address written for the game server (annotation or network status), if any. */
  published(gs: GameServer): PublishedAddress | undefined;
  /**
   * When the system told the game server that its fronts route (epoch ms), if it has: berth's
   * `berth.dev/fronts-ready`. Absent for a system with no such signal.
   */
  toldReady?(gs: GameServer): number | undefined;
  /** What the front must reach for this game server. */
  destination(gs: GameServer, placement: Placement): Destination;
  /** A node joins the cluster, Ready (absent: the system reads no nodes). */
  nodeReady?(node: { readonly name: string; readonly address: string }): void;
  /** A node leaves the cluster: its Node object is deleted. */
  nodeGone?(node: { readonly name: string }): void;
  /** The controller process dies now; it comes back as its deployment would. */
  crash(): Promise<void>;
  /** Ends background loops (the run is over). */
  stop(): void;
}

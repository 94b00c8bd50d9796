/**
 * The Service ranges berth allocates from right now: the config's, as the cluster's ServiceCIDRs
 * last read them (at start, and on every repair pass). Admission consults it on every Service
 * write; the reads replace it whole, so a request sees one consistent state.
 */

import type { ClusterIpAddress, ClusterServiceCidr } from '../k8s/service-cidrs.js';
import type { CidrBlock } from '../net/ip.js';
import { reconcileServiceCidrs, type ServiceCidrState, withHolders } from './cluster-cidrs.js';

/** Where the gate says what changed. */
export interface GateLog {
  info(line: string): void;
  warn(line: string): void;
}

/** What the gate is built from. */
export interface ServiceCidrGateOptions {
  readonly configured: readonly CidrBlock[];
  /** `services.followClusterCIDRs`. */
  readonly follow: boolean;
  readonly log?: GateLog;
}

/** The current `ServiceCidrState`, replaced by each reading of the cluster. */
export class ServiceCidrGate {
  readonly #options: ServiceCidrGateOptions;
  #state: ServiceCidrState;
  /** Whether the log has said the cluster keeps no ServiceCIDRs (said once). */
  #saidFlags = false;

  constructor(options: ServiceCidrGateOptions) {
    this.#options = options;
    this.#state = reconcileServiceCidrs({ ...options, cluster: undefined });
  }

  /** The state admission decides by. */
  get current(): ServiceCidrState {
    return this.#state;
  }

  /**
   * Applies a reading of the cluster (undefined: it has no ServiceCIDRs), with its IPAddresses
   * when they were listed (they name what holds addresses in a terminating ServiceCIDR), and
   * logs what changed.
   */
  apply(
    cluster: readonly ClusterServiceCidr[] | undefined,
    addresses?: readonly ClusterIpAddress[],
  ): ServiceCidrState {
    const before = this.#state;
    const reconciled = reconcileServiceCidrs({ ...this.#options, cluster });
    const next = cluster && addresses ? withHolders(reconciled, cluster, addresses) : reconciled;
    const log = this.#options.log;
    if (next.source === 'flags' && !this.#saidFlags) {
      this.#saidFlags = true;
      log?.info(
        'the cluster has no ServiceCIDR objects (networking.k8s.io/v1, Kubernetes 1.33+): berth allocates from serviceCIDRs as configured',
      );
    }
    for (const note of next.notes.filter((n) => !before.notes.includes(n))) log?.info(note);
    for (const name of next.followed.filter((n) => !before.followed.includes(n))) {
      log?.info(`following the cluster's Service CIDR ${name}: new cluster IPs may come from it`);
    }
    for (const [name, refusal] of next.refused) {
      if (before.refused.get(name)?.message !== refusal.message) log?.warn(refusal.message);
    }
    this.#state = next;
    return next;
  }
}

/** What `keepFresh` reads the cluster with, and how often. */
export interface FreshnessOptions {
  /** The cluster's ServiceCIDRs; undefined when it has none. */
  readonly read: () => Promise<readonly ClusterServiceCidr[] | undefined>;
  /** A reading older than this is read again before the next Service write. */
  readonly maxAgeMs: number;
  /** Epoch ms. */
  readonly now: () => number;
  /** A failed read: the gate keeps its last state, and the next write tries again. */
  readonly failed: (error: unknown) => void;
  /**
   * The most a write waits for a read; past it the write is decided by the last state and the
   * read lands for the writes after it.
   */
  readonly patienceMs: number;
}

/**
 * Keeps a gate no older than `maxAgeMs`, for a process that runs no repair pass (the admission
 * function): call the answer before deciding a Service write. Concurrent callers share one read;
 * a read that fails leaves the last state in place, never failing the write, and one that hangs
 * (the cluster's API unreachable from berth while the apiserver still calls the webhook) holds a
 * write no longer than `patienceMs`: Service writes go on, decided by the last state, as they
 * did before berth read ServiceCIDRs. A range the cluster no longer has costs at most a refused
 * Service, whose value the settle step frees.
 */
export function keepFresh(gate: ServiceCidrGate, options: FreshnessOptions): () => Promise<void> {
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;
  return () => {
    if (options.now() - readAt < options.maxAgeMs) return Promise.resolve();
    reading ??= options
      .read()
      .then(
        (cluster) => {
          gate.apply(cluster);
          readAt = options.now();
        },
        (error: unknown) => options.failed(error),
      )
      .finally(() => {
        reading = undefined;
      });
    return atMost(reading, options.patienceMs);
  };
}

/** `work`, or nothing once `ms` have passed, whichever comes first; the timer never outlives it. */
async function atMost(work: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const patience = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([work, patience]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the ENI service and pass run on: the store, EC2 (already wrapped in the rate budget), the
 * cluster, config and injected effects. One composition root builds it once per process.
 */
import { randomUUID } from 'node:crypto';
import type { EniConfig } from '../config/schema.js';
import { InstanceTypeCatalog } from '../ec2/instance-types.js';
import type { Ec2Network, InstanceTypeLimits } from '../ec2/network.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import type { AutoModeCompute } from '../node-pool/auto-mode.js';
import { ENI_INVOCATIONS, type PoolPolicy, poolPolicy } from './policy.js';
import type { EniStore } from './store.js';

/** Everything the ENI domain functions need. */
export interface EniDeps {
  readonly store: EniStore;
  /** EC2, budgeted (`BudgetedEc2Network`): every call here is paid from the account budget. */
  readonly ec2: Ec2Network;
  readonly catalog: InstanceTypeCatalog;
  readonly cluster: ClusterApi;
  /** The config's `cluster`: scopes store keys and ENI tags. */
  readonly clusterName: string;
  readonly policy: PoolPolicy;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Uniform in [0, 1). */
  readonly random: () => number;
  /** Names this process in pool leases; each acquisition adds its own suffix (`leaseHolder`). */
  readonly holder: string;
  /** A fresh unique id per lease acquisition. */
  readonly newId: () => string;
  /** How long a pool lease taken with these dependencies lasts (`ENI_INVOCATIONS`). */
  readonly leaseMs: number;
  /** The cluster's Auto Mode compute, when known: its nodes get no pool (`auto-mode.ts`). */
  readonly autoMode?: AutoModeCompute;
}

/** The parts a composition root must supply; the rest has production defaults. */
export interface EniDepsInput {
  readonly store: EniStore;
  readonly ec2: Ec2Network;
  readonly cluster: ClusterApi;
  readonly clusterName: string;
  readonly config: EniConfig;
  /** Instance-type limits already known: a cache shared with the process's other clusters. */
  readonly instanceTypes?: Map<string, InstanceTypeLimits>;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  readonly holder?: string;
  readonly newId?: () => string;
  readonly leaseMs?: number;
  readonly autoMode?: AutoModeCompute;
}

/**
 * Builds `EniDeps`, with the real clock, `setTimeout` sleep, `Math.random`, a fresh holder id and
 * the ENI function's lease.
 */
export function eniDeps(input: EniDepsInput): EniDeps {
  return {
    store: input.store,
    ec2: input.ec2,
    catalog: new InstanceTypeCatalog(input.ec2, input.instanceTypes),
    cluster: input.cluster,
    clusterName: input.clusterName,
    policy: poolPolicy(input.config),
    now: input.now ?? Date.now,
    sleep: input.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    random: input.random ?? Math.random,
    holder: input.holder ?? `berth-${randomUUID()}`,
    newId: input.newId ?? randomUUID,
    leaseMs: input.leaseMs ?? ENI_INVOCATIONS.work.leaseMs,
    ...(input.autoMode ? { autoMode: input.autoMode } : {}),
  };
}

/**
 * A holder for one lease acquisition: the process holder plus a fresh id. Stores admit a holder
 * again while it holds the lease, so one name shared by a pass and concurrent refills in one
 * process would let them all in at once, and the first `endLease` would free it under the rest.
 */
export function leaseHolder(deps: EniDeps): string {
  return `${deps.holder}#${deps.newId()}`;
}

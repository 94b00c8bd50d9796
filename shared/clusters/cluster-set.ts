/**
 * One deployment serving several clusters. Every request, event and task names the cluster it is
 * for, and the deployment keeps what it builds for a cluster (a runtime, a pass, an API) apart
 * from every other's: a cluster's keys, lease, Kubernetes credentials and metrics dimension are
 * its own, and only the table, the functions and the EC2 budget are shared.
 *
 * A deployment of one cluster also takes input that names none, so single-cluster stacks keep
 * their schedules, queue messages and URLs.
 */
import type { BerthConfig } from '../config/schema.js';
import { type CidrBlock, formatCidr } from '../net/ip.js';
import { blocksOverlap } from '../services/cluster-cidrs.js';

/** Input named a cluster this deployment does not serve, or none where it serves several. */
export class UnknownClusterError extends Error {
  constructor(
    readonly cluster: string | undefined,
    readonly served: readonly string[],
  ) {
    super(
      cluster === undefined
        ? `no cluster named: this deployment serves ${served.join(', ')}; say which`
        : `cluster "${cluster}" is not served here (this deployment serves ${served.join(', ')}); add a section for it to the config and deploy`,
    );
    this.name = 'UnknownClusterError';
  }
}

/** What one cluster resolved to: its config and what was built for it. */
export interface ClusterEntry<T> {
  readonly config: BerthConfig;
  readonly value: T;
}

/**
 * A value per served cluster, built on first use (a function container that only ever serves
 * one cluster's events builds nothing for the others: no Kubernetes lookups, no clients).
 */
export class ClusterSet<T> {
  readonly #configs: ReadonlyMap<string, BerthConfig>;
  readonly #build: (config: BerthConfig) => T;
  readonly #built = new Map<string, T>();

  constructor(configs: readonly BerthConfig[], build: (config: BerthConfig) => T) {
    if (configs.length === 0) throw new Error('a deployment serves at least one cluster');
    this.#configs = new Map(configs.map((config) => [config.cluster, config]));
    this.#build = build;
  }

  /** The served clusters, in the config's order. */
  get names(): readonly string[] {
    return [...this.#configs.keys()];
  }

  /** A set over the same clusters whose values are built, on first use, from this set's. */
  map<U>(build: (value: T, config: BerthConfig) => U): ClusterSet<U> {
    return new ClusterSet([...this.#configs.values()], (config) =>
      build(this.get(config.cluster).value, config),
    );
  }

  /** Whether `cluster` is served here. */
  has(cluster: string): boolean {
    return this.#configs.has(cluster);
  }

  /**
   * The named cluster's entry; with no name, the only cluster's. Throws UnknownClusterError for a
   * cluster not served, and for no name when several are.
   */
  get(cluster: string | undefined): ClusterEntry<T> {
    const name = cluster ?? (this.#configs.size === 1 ? this.names[0] : undefined);
    const config = name === undefined ? undefined : this.#configs.get(name);
    if (name === undefined || config === undefined) {
      throw new UnknownClusterError(cluster, this.names);
    }
    if (!this.#built.has(name)) this.#built.set(name, this.#build(config));
    return { config, value: this.#built.get(name) as T };
  }
}

/** The Service CIDRs one served cluster uses: its configured ones and, when read, its own. */
export interface ClusterServiceCidrs {
  readonly cluster: string;
  readonly cidrs: readonly CidrBlock[];
}

/** Two served clusters whose Service CIDRs overlap. */
export interface ServiceCidrOverlap {
  readonly reason: 'ServiceCIDROverlap';
  readonly clusters: readonly [string, string];
  readonly cidrs: readonly [string, string];
  readonly message: string;
}

/**
 * Every pair of served clusters whose Service CIDRs share addresses. berth keeps each cluster's
 * values apart, so this breaks nothing in berth; but one cluster IP then names a different Service
 * in each cluster, which anything routing between them (multi-cluster Services, a mesh, a peered
 * flat network) cannot tell apart.
 */
export function overlappingServiceCidrs(
  clusters: readonly ClusterServiceCidrs[],
): ServiceCidrOverlap[] {
  const overlaps: ServiceCidrOverlap[] = [];
  for (const [i, a] of clusters.entries()) {
    for (const b of clusters.slice(i + 1)) {
      const pair = a.cidrs
        .flatMap((x) => b.cidrs.map((y) => [x, y] as const))
        .find(([x, y]) => blocksOverlap(x, y));
      if (!pair) continue;
      const cidrs = [formatCidr(pair[0]), formatCidr(pair[1])] as const;
      overlaps.push({
        reason: 'ServiceCIDROverlap',
        clusters: [a.cluster, b.cluster],
        cidrs,
        message: `clusters ${a.cluster} and ${b.cluster} have overlapping Service CIDRs (${cidrs[0]} and ${cidrs[1]}): one cluster IP names a different Service in each, which multi-cluster Services or a mesh between them cannot tell apart`,
      });
    }
  }
  return overlaps;
}

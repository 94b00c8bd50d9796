/**
 * Instance-type ENI/IP limits, cached: they are static per type (the VPC CNI even ships them as
 * a generated table), so DescribeInstanceTypes is asked once per type per process.
 */
import type { Ec2Network, InstanceTypeLimits } from './network.js';

/** A read-through cache of DescribeInstanceTypes. */
export class InstanceTypeCatalog {
  readonly #ec2: Ec2Network;
  readonly #known: Map<string, InstanceTypeLimits>;

  constructor(ec2: Ec2Network, known = new Map<string, InstanceTypeLimits>()) {
    this.#ec2 = ec2;
    this.#known = known;
  }

  /** The same cache, asking EC2 through `ec2` (one invocation's, with its deadline). */
  using(ec2: Ec2Network): InstanceTypeCatalog {
    return new InstanceTypeCatalog(ec2, this.#known);
  }

  /** Limits of each requested type that EC2 knows; one call for all the types not cached yet. */
  async limits(instanceTypes: readonly string[]): Promise<ReadonlyMap<string, InstanceTypeLimits>> {
    const missing = [...new Set(instanceTypes)].filter((type) => !this.#known.has(type));
    if (missing.length > 0) {
      for (const limits of await this.#ec2.describeInstanceTypes(missing)) {
        this.#known.set(limits.instanceType, limits);
      }
    }
    const answer = new Map<string, InstanceTypeLimits>();
    for (const type of instanceTypes) {
      const limits = this.#known.get(type);
      if (limits) answer.set(type, limits);
    }
    return answer;
  }
}

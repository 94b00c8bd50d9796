/**
 * The two subnets every run of the ENI benchmark draws from, and what other tenants do to them
 * over the day. On the clean day the subnets are empty /17s. On the fragmented day other tenants
 * (Lambda functions, load balancers, another cluster) hold one address in almost every /28, so
 * the subnets have thousands of free addresses but few whole /28s, as in VPC CNI issue #2749,
 * until they let half of those addresses go at 08:00: a policy that fell back to single addresses
 * should be using prefixes again by the afternoon (Cilium issue #46644).
 */
import type { FakeEc2 } from '../../sim/ec2-fake.js';
import { seededRandom } from '../../sim/random.js';
import { SEED } from './workload.js';

/** Which day a run simulates. */
export type DayKind = 'clean' | 'fragmented';

export const DAY_KINDS: readonly DayKind[] = ['clean', 'fragmented'];

export const SUBNETS = [
  { subnetId: 'subnet-a', cidr: '10.0.0.0/17' },
  { subnetId: 'subnet-b', cidr: '10.0.128.0/17' },
] as const;

/**
 * Share of each subnet's /28 blocks another tenant holds an address in on the fragmented day:
 * about 40 whole /28s stay free per subnet, fewer than the nodes that join it want.
 */
export const FRAGMENTED_SHARE = 0.98;
/** When the other tenants let half their addresses go on the fragmented day. */
export const DEFRAGMENT_AT_S = 8 * 3600;

/** The subnets of one run, and their other tenants. */
export class DaySubnets {
  readonly kind: DayKind;
  readonly #fake: FakeEc2;
  readonly #foreign = new Map<string, string[]>();
  #defragmented = false;

  /** Adds the subnets to `fake` and, on the fragmented day, scatters the other tenants. */
  constructor(fake: FakeEc2, kind: DayKind) {
    this.kind = kind;
    this.#fake = fake;
    // The same scatter for every run of a day, whatever each run's own random stream does.
    const random = seededRandom(SEED + 7);
    for (const { subnetId, cidr } of SUBNETS) {
      fake.addSubnet(subnetId, cidr);
      if (kind === 'fragmented') {
        this.#foreign.set(subnetId, fake.scatterForeign(subnetId, FRAGMENTED_SHARE, random));
      }
    }
  }

  /** What the other tenants do by `second`: once, at DEFRAGMENT_AT_S, half of them leave. */
  advance(second: number): void {
    if (this.#defragmented || second < DEFRAGMENT_AT_S) return;
    this.#defragmented = true;
    for (const [subnetId, ips] of this.#foreign) {
      this.#fake.releaseForeign(
        subnetId,
        ips.filter((_, i) => i % 2 === 0),
      );
    }
  }

  /** Whether the subnet can delegate no /28 now: a wait then may be fragmentation's fault. */
  shortOfPrefixes(subnetId: string): boolean {
    return this.kind === 'fragmented' && this.#fake.freePrefixes(subnetId) === 0;
  }
}

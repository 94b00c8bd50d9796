/**
 * The two subnets every run of the ENI benchmark draws from, and what other tenants do to them
 * over the day. On the clean day the subnets are empty /17s. On a fragmented day other tenants
 * (Lambda functions, load balancers, another cluster) hold a stated share of each subnet's
 * addresses, placed at random by a recorded seed: the subnet keeps thousands of free addresses
 * but, at these utilizations, almost no whole /28 (a /28 is free with probability
 * (1 − utilization)^16), as in VPC CNI issue #2749. At 08:00 half of those addresses go: a policy
 * that fell back to single addresses must not stay stuck there (Cilium issue #46644).
 *
 * A day may also run on subnets with a prefix-type subnet CIDR reservation, which the Amazon EKS
 * User Guide recommends for prefix delegation on subnets whose addresses are scattered
 * ("Increase the available IP addresses for your Amazon EKS node", Prerequisites: "Using a subnet
 * CIDR reservation so that even if any IP addresses within the reserved range are still in use,
 * upon their release, the IP addresses aren't reassigned"). The reservation is taken to predate
 * the day (made when prefix delegation was turned on), so the other tenants' addresses, which EC2
 * no longer places inside it, have turned over out of it: they all lie outside. It is the largest
 * aligned block, at most a /19, that their share leaves free, at the top of each subnet.
 */

import { IPV4_PREFIX_SIZE } from '../../shared/ec2/network.js';
import { formatCidr, parseCidr } from '../../shared/net/ip.js';
import type { FakeEc2 } from '../../sim/fakes/ec2.js';
import { seededRandom } from '../../sim/random.js';
import { SEED } from './workload.js';

/** Which day a run simulates: clean subnets, or subnets other tenants hold this share of. */
export type DayKind = 'clean' | 'fragmented-60' | 'fragmented-80' | 'fragmented-90';

/** Every day the ENI benchmark runs. */
export const ENI_DAYS: readonly DayKind[] = [
  'clean',
  'fragmented-60',
  'fragmented-80',
  'fragmented-90',
];

/** The clean day and the middle fragmented one: the pair the multi-cluster benchmark runs. */
export const DAY_KINDS: readonly DayKind[] = ['clean', 'fragmented-80'];

/** Share of each subnet's usable addresses other tenants hold at 00:00, by day. */
export const UTILIZATION: Readonly<Record<DayKind, number>> = {
  clean: 0,
  'fragmented-60': 0.6,
  'fragmented-80': 0.8,
  'fragmented-90': 0.9,
};

/** The seed of the other tenants' placement, the same for every run of a day. */
export const FOREIGN_SEED = SEED + 7;

export const SUBNETS = [
  { subnetId: 'subnet-a', cidr: '10.0.0.0/17' },
  { subnetId: 'subnet-b', cidr: '10.0.128.0/17' },
] as const;

/** When the other tenants let half their addresses go on a fragmented day. */
export const DEFRAGMENT_AT_S = 8 * 3600;

/** The largest prefix reservation considered: a /19, 512 prefixes per subnet. */
const LARGEST_RESERVATION_BITS = 13;

/** Whether a day's subnets are fragmented by other tenants. */
export function isFragmented(day: DayKind): boolean {
  return UTILIZATION[day] > 0;
}

/** How one run sets up its subnets. */
export interface SubnetOptions {
  /** Each subnet carries a prefix-type CIDR reservation. */
  readonly reservation?: boolean;
}

/**
 * The reservation's CIDR in a /17 subnet at `utilization`: the largest aligned block, at most a
 * /19, that the other tenants' addresses leave free, at the top of the subnet.
 */
export function reservationCidr(cidr: string, utilization: number): string {
  const subnet = parseCidr(cidr);
  if (!subnet) throw new Error(`bad subnet CIDR ${cidr}`);
  const size = 2 ** subnet.hostBits;
  const free = Math.floor((1 - utilization) * (size - 5));
  let hostBits = Math.min(LARGEST_RESERVATION_BITS, subnet.hostBits - 1);
  while (hostBits > 4 && 2 ** hostBits > free) hostBits--;
  return formatCidr({
    family: subnet.family,
    network: subnet.network + BigInt(size - 2 ** hostBits),
    prefixLength: 32 - hostBits,
    hostBits,
  });
}

/** The subnets of one run, and their other tenants. */
export class DaySubnets {
  readonly kind: DayKind;
  readonly #fake: FakeEc2;
  readonly #foreign = new Map<string, string[]>();
  /** Each subnet's reservation, when the run has one. */
  readonly reservations = new Map<string, string>();
  #defragmented = false;

  /** Adds the subnets to `fake` and, on a fragmented day, places the other tenants. */
  constructor(fake: FakeEc2, kind: DayKind, options: SubnetOptions = {}) {
    this.kind = kind;
    this.#fake = fake;
    // The same placement for every run of a day, whatever each run's own random stream does.
    const random = seededRandom(FOREIGN_SEED);
    const utilization = UTILIZATION[kind];
    for (const { subnetId, cidr } of SUBNETS) {
      fake.addSubnet(subnetId, cidr);
      if (options.reservation) {
        const reserved = reservationCidr(cidr, utilization);
        fake.reservePrefixes(subnetId, reserved);
        this.reservations.set(subnetId, reserved);
      }
      if (utilization > 0) {
        this.#foreign.set(subnetId, fake.occupyAtRandom(subnetId, utilization, random));
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

  /**
   * Whether the subnet is fragmented now: it can delegate no /28 although it has a /28's worth of
   * free addresses, scattered. With fewer free addresses than that no placement could give a
   * /28: the subnet is used up, which is exhaustion (a pod waits then in ip mode too), not
   * fragmentation.
   */
  fragmentedNow(subnetId: string): boolean {
    return (
      isFragmented(this.kind) &&
      this.#fake.freePrefixes(subnetId) === 0 &&
      this.#fake.freeAddresses(subnetId) >= IPV4_PREFIX_SIZE
    );
  }
}

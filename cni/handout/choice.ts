/**
 * Which address of the node's set a container gets. Pure: the files say what is taken, rested
 * and returned (`store.ts`), this orders what is left.
 *
 * The rules the pool follows in berth (shared/eni/policy.ts), kept on the node: an address rests
 * `cooldownSeconds` after its release before another pod gets it (the VPC CNI's
 * IP_COOLDOWN_PERIOD: a peer's stale conntrack or ARP entry must not reach the next pod), a pod
 * gets back the address it let go within `stickySeconds`, which no other pod takes while one
 * that is not so kept is free, and of the rest the most recently rested goes first, so the
 * longest idle are the ones berth takes back.
 */
import type { NodeSet, SetAddress } from '../../shared/eni/handout/wire.js';

/** The last release of an address on the node. */
export interface Rest {
  /** The pod (`namespace/name`) that held it. */
  readonly pod: string;
  /** Epoch ms. */
  readonly at: number;
}

/** What the node's files say of its addresses at one instant. */
export interface NodeUseNow {
  /** Addresses a container holds. */
  readonly leased: ReadonlySet<string>;
  /** Addresses the node returned to berth (or is returning), by the record it returned. */
  readonly returned: ReadonlyMap<string, number>;
  readonly rested: ReadonlyMap<string, Rest>;
}

/** Whether the node may hand `address` out at all: free in its set, and not returned. */
export function mayHandOut(address: SetAddress, use: NodeUseNow): boolean {
  return (
    address.state === 'free' &&
    !use.leased.has(address.ip) &&
    use.returned.get(address.ip) !== address.createdAt
  );
}

/** The addresses `pod` may get at `now`, best first; empty when none is ready. */
export function candidates(
  set: NodeSet,
  use: NodeUseNow,
  pod: string,
  now: number,
): readonly SetAddress[] {
  const cooldownMs = set.cooldownSeconds * 1000;
  const stickyMs = set.stickySeconds * 1000;
  const open = set.addresses.filter((a) => mayHandOut(a, use));
  const restOf = (a: SetAddress) => use.rested.get(a.ip);
  const own = open.filter((a) => {
    const rest = restOf(a);
    return rest !== undefined && rest.pod === pod && now - rest.at < stickyMs;
  });
  const rested = open.filter((a) => {
    const rest = restOf(a);
    return rest === undefined || now - rest.at >= cooldownMs;
  });
  const keptForAnother = (a: SetAddress) => {
    const rest = restOf(a);
    return rest !== undefined && rest.pod !== pod && now - rest.at < stickyMs;
  };
  const latestFirst = (a: SetAddress, b: SetAddress) => (restOf(b)?.at ?? 0) - (restOf(a)?.at ?? 0);
  const others = rested.filter((a) => !own.includes(a));
  return [
    ...own,
    ...others.filter((a) => !keptForAnother(a)).sort(latestFirst),
    ...others.filter(keptForAnother).sort(latestFirst),
  ];
}

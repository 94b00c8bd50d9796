/**
 * Which Global Accelerator custom routing destinations to allow and deny in one endpoint subnet,
 * in as few calls as the API allows. Pure: the caller reads the cells live game servers want and
 * the cells allowed now, makes the calls, and plans again from what it reads next.
 *
 * A call covers every address listed times every port listed, at most `MAX_DESTINATIONS_PER_CALL`
 * of each (Global Accelerator API reference, "AllowCustomRoutingTraffic"), so cells are planned
 * as rectangles:
 * - Allow: the addresses with a wanted cell not yet allowed, in groups of at most 100, each group
 *   times the union of the ports its addresses need, in chunks of at most 100 ports (an address
 *   joins a chunk only when it needs one of its ports). A rectangle may open cells no game server
 *   wants, but only on addresses that host one: every port of the accelerator's range on a game
 *   node is handed out to accelerator-fronted ports alone, so such a cell is a port the next game
 *   server there may take, never a port of something that did not ask to be public.
 * - Deny: an address with cells allowed and none wanted, whole: `ports` left out denies the
 *   endpoint group's whole port range (API reference, "DenyCustomRoutingTraffic", parameter
 *   DenyAllTrafficToEndpoint: when false, a list of ports is optional, and without one the call
 *   covers the ports configured for the endpoint group), up to 100 addresses a call. Cells allowed but unwanted on an address that still hosts a wanted cell
 *   stay allowed until the address empties; a wanted cell is never denied.
 */
import { parseIp } from '../net/ip.js';
import { type DestinationBatch, MAX_DESTINATIONS_PER_CALL } from './accelerator.js';
import type { Destination } from './port-mappings.js';

/** Cells (destinations) by address: the ports of each address. */
export type Cells = ReadonlyMap<string, ReadonlySet<number>>;

/** What a plan is made from, for one endpoint subnet. */
export interface DestinationPlanInput {
  readonly endpointGroupArn: string;
  /** The endpoint subnet. */
  readonly endpointId: string;
  /** The cells live game servers want reachable. */
  readonly wanted: Cells;
  /** The cells allowed now. */
  readonly allowed: Cells;
}

/** The calls to make, and what they cost. */
export interface DestinationPlan {
  /** Allow calls, each at most 100 addresses times at most 100 ports. */
  readonly allow: readonly DestinationBatch[];
  /** Deny calls, each at most 100 whole addresses (no `ports`). */
  readonly deny: readonly DestinationBatch[];
  /** Allow and deny calls together. */
  readonly calls: number;
  /** Wanted cells the allows open. */
  readonly opened: number;
  /** Cells the allows open that no game server wants: what the rectangles cost. */
  readonly extraCells: number;
}

const NONE: ReadonlySet<number> = new Set();

/** Cells of a list of destinations. */
/** Whether a plan calls nothing: the subnet is in step. */
export function isEmptyPlan(plan: DestinationPlan): boolean {
  return plan.allow.length === 0 && plan.deny.length === 0;
}

export function cellsOf(destinations: Iterable<Destination>): Map<string, Set<number>> {
  const cells = new Map<string, Set<number>>();
  for (const { address, port } of destinations) {
    const ports = cells.get(address) ?? new Set<number>();
    ports.add(port);
    cells.set(address, ports);
  }
  return cells;
}

function compare<T extends string | bigint>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Addresses sorted by `group` first (text order), then numerically (text order for anything
 * that is not an address), for stable plans. Each address is parsed once, not per comparison.
 */
function sortAddresses(
  addresses: Iterable<string>,
  group: (a: string) => string = () => '',
): string[] {
  return [...addresses]
    .map((address) => ({ address, group: group(address), ip: parseIp(address) }))
    .sort(
      (a, b) =>
        compare(a.group, b.group) ||
        (a.ip && b.ip && a.ip.family === b.ip.family
          ? compare(a.ip.value, b.ip.value)
          : compare(a.address, b.address)),
    )
    .map(({ address }) => address);
}

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += MAX_DESTINATIONS_PER_CALL) {
    out.push(items.slice(i, i + MAX_DESTINATIONS_PER_CALL));
  }
  return out;
}

/**
 * The allow and deny calls that leave every wanted cell allowed and every address with no wanted
 * cell denied, never denying a wanted cell. Allows number at most ⌈addresses ÷ 100⌉ × ⌈ports ÷
 * 100⌉, counting the addresses and the distinct ports of the wanted cells not yet allowed.
 */
export function planDestinations(input: DestinationPlanInput): DestinationPlan {
  const { endpointGroupArn, endpointId, wanted, allowed } = input;
  const needs = new Map<string, number[]>();
  for (const [address, ports] of wanted) {
    const open = allowed.get(address) ?? NONE;
    const missing = [...ports].filter((p) => !open.has(p)).sort((a, b) => a - b);
    if (missing.length > 0) needs.set(address, missing);
  }
  // Addresses needing the same ports sit together, so a group's port union stays small.
  const order = sortAddresses(needs.keys(), (a) => needs.get(a)?.join(',') ?? '');
  const allow: DestinationBatch[] = [];
  let opened = 0;
  let extraCells = 0;
  for (const group of chunks(order)) {
    const union = [...new Set(group.flatMap((a) => needs.get(a) ?? []))].sort((a, b) => a - b);
    for (const ports of chunks(union)) {
      const inChunk = new Set(ports);
      const addresses = group.filter((a) => (needs.get(a) ?? []).some((p) => inChunk.has(p)));
      for (const address of addresses) {
        const want = wanted.get(address) ?? NONE;
        const open = allowed.get(address) ?? NONE;
        for (const port of ports) {
          if (open.has(port)) continue;
          if (want.has(port)) opened++;
          else extraCells++;
        }
      }
      allow.push({ endpointGroupArn, endpointId, addresses, ports });
    }
  }
  const emptied = sortAddresses(
    [...allowed]
      .filter(([address, ports]) => ports.size > 0 && (wanted.get(address)?.size ?? 0) === 0)
      .map(([address]) => address),
  );
  const deny = chunks(emptied).map(
    (addresses): DestinationBatch => ({ endpointGroupArn, endpointId, addresses }),
  );
  return { allow, deny, calls: allow.length + deny.length, opened, extraCells };
}

/**
 * A custom routing endpoint subnet's port mappings, kept compactly. Global Accelerator maps each
 * accelerator port to one destination (a private address and port) of an endpoint subnet; the
 * mapping is fixed once the subnet is an endpoint, so berth lists it once and keeps it (Global
 * Accelerator API reference, "ListCustomRoutingPortMappings": "The port mappings don't change
 * after Global Accelerator generates them, so you can retrieve and cache the full mapping").
 *
 * The listing has one entry per accelerator port; berth keeps runs instead: a run is a stretch of
 * consecutive accelerator ports mapped onto consecutive destination ports of one address. The
 * layout is Global Accelerator's to choose ("How custom routing accelerators work", example: "The
 * mapping is actually not predictable like this"); where it gives each address one block of
 * accelerator ports, as observed, a subnet is one run per address. Pure.
 */

import { cidrContains, formatIp, parseCidr, parseIp } from '../net/ip.js';
import type { PortMapping } from './accelerator.js';

/** Consecutive accelerator ports mapped onto consecutive destination ports of one address. */
export interface MappingRun {
  /** The destination address, canonical (as `formatIp` writes it). */
  readonly address: string;
  readonly destinationFirstPort: number;
  readonly acceleratorFirstPort: number;
  /** How many ports the run covers, at least 1. */
  readonly length: number;
}

/** A destination: an address and a port. */
export interface Destination {
  readonly address: string;
  readonly port: number;
}

/** Port mappings that contradict themselves, or a stored form that is not one. */
export class MappingRunsError extends Error {
  override readonly name = 'MappingRunsError';
}

const MAX_PORT = 65_535;

function canonical(address: string): string | undefined {
  const parsed = parseIp(address);
  return parsed === undefined ? undefined : formatIp(parsed);
}

const isPort = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_PORT;

/**
 * Throws unless the runs are a mapping: sorted by accelerator port, no accelerator port and no
 * destination twice, every port a port, every address canonical. A lookup then has one answer.
 */
function checkRuns(runs: readonly MappingRun[]): void {
  const byAddress = new Map<string, MappingRun[]>();
  let nextFree = 1;
  runs.forEach((run, i) => {
    const at = `run ${i} (${JSON.stringify(run)})`;
    if (!Number.isInteger(run.length) || run.length < 1) {
      throw new MappingRunsError(`${at}: the length must be a whole number of at least 1`);
    }
    for (const first of [run.acceleratorFirstPort, run.destinationFirstPort]) {
      if (!isPort(first) || first + run.length - 1 > MAX_PORT) {
        throw new MappingRunsError(`${at}: its ports must lie within 1-${MAX_PORT}`);
      }
    }
    if (canonical(run.address) !== run.address) {
      throw new MappingRunsError(`${at}: the address must be an IP address in canonical form`);
    }
    if (run.acceleratorFirstPort < nextFree) {
      throw new MappingRunsError(
        `${at}: the runs must be in accelerator port order, no accelerator port twice`,
      );
    }
    nextFree = run.acceleratorFirstPort + run.length;
    const mine = byAddress.get(run.address) ?? [];
    mine.push(run);
    byAddress.set(run.address, mine);
  });
  for (const [address, mine] of byAddress) {
    mine.sort((a, b) => a.destinationFirstPort - b.destinationFirstPort);
    for (let i = 1; i < mine.length; i++) {
      const before = mine[i - 1];
      const run = mine[i];
      if (before && run && run.destinationFirstPort < before.destinationFirstPort + before.length) {
        throw new MappingRunsError(
          `destination ${address}:${run.destinationFirstPort} is mapped from two accelerator ports`,
        );
      }
    }
  }
}

/** Runs of mappings sorted by accelerator port, merged where both sides continue. */
function runsOf(mappings: readonly PortMapping[]): MappingRun[] {
  const sorted = [...mappings].sort((a, b) => a.acceleratorPort - b.acceleratorPort);
  const runs: { -readonly [K in keyof MappingRun]: MappingRun[K] }[] = [];
  for (const mapping of sorted) {
    const address = canonical(mapping.destinationAddress);
    if (address === undefined) {
      throw new MappingRunsError(
        `accelerator port ${mapping.acceleratorPort}: destination ${JSON.stringify(mapping.destinationAddress)} is not an IP address`,
      );
    }
    const last = runs[runs.length - 1];
    if (last && mapping.acceleratorPort === last.acceleratorFirstPort + last.length - 1) {
      // The same accelerator port again (a page read twice): harmless when it agrees.
      const port = last.destinationFirstPort + last.length - 1;
      if (last.address === address && port === mapping.destinationPort) continue;
      throw new MappingRunsError(
        `accelerator port ${mapping.acceleratorPort} is mapped to both ${last.address}:${port} and ${address}:${mapping.destinationPort}`,
      );
    }
    if (
      last &&
      last.address === address &&
      mapping.acceleratorPort === last.acceleratorFirstPort + last.length &&
      mapping.destinationPort === last.destinationFirstPort + last.length
    ) {
      last.length++;
    } else {
      runs.push({
        address,
        destinationFirstPort: mapping.destinationPort,
        acceleratorFirstPort: mapping.acceleratorPort,
        length: 1,
      });
    }
  }
  return runs;
}

/**
 * The runs of every endpoint subnet in the listed pages (a listing of an endpoint group covers
 * all its subnets), by subnet id. Pages may come in any order; a mapping listed twice is kept
 * once. Throws MappingRunsError when two mappings contradict each other.
 */
export function buildMappingRuns(
  pages: Iterable<readonly PortMapping[]>,
): ReadonlyMap<string, readonly MappingRun[]> {
  const bySubnet = new Map<string, PortMapping[]>();
  for (const page of pages) {
    for (const mapping of page) {
      const mine = bySubnet.get(mapping.endpointId) ?? [];
      mine.push(mapping);
      bySubnet.set(mapping.endpointId, mine);
    }
  }
  const runs = new Map<string, readonly MappingRun[]>();
  for (const [subnet, mappings] of bySubnet) {
    const subnetRuns = runsOf(mappings);
    checkRuns(subnetRuns);
    runs.set(subnet, subnetRuns);
  }
  return runs;
}

/**
 * The accelerator port a player dials to reach `address:port`, or undefined when the subnet maps
 * no accelerator port there. A scan of the runs: one per address in the usual layout, a few
 * hundred for a subnet.
 */
export function publicPortOf(
  runs: readonly MappingRun[],
  address: string,
  port: number,
): number | undefined {
  const wanted = canonical(address);
  for (const run of runs) {
    const offset = port - run.destinationFirstPort;
    if (run.address === wanted && offset >= 0 && offset < run.length) {
      return run.acceleratorFirstPort + offset;
    }
  }
  return undefined;
}

/**
 * The destination an accelerator port reaches in this subnet, or undefined: a binary search, so
 * the runs must be in accelerator port order, as `buildMappingRuns` and `decodeMappingRuns` give.
 */
export function destinationOf(
  runs: readonly MappingRun[],
  acceleratorPort: number,
): Destination | undefined {
  let low = 0;
  let high = runs.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const run = runs[middle];
    if (run === undefined) return undefined;
    const offset = acceleratorPort - run.acceleratorFirstPort;
    if (offset < 0) high = middle - 1;
    else if (offset >= run.length) low = middle + 1;
    else return { address: run.address, port: run.destinationFirstPort + offset };
  }
  return undefined;
}

/** The version of the stored form; a reader refuses any other. */
const ENCODING_VERSION = 1;

/**
 * The stored form of a subnet's runs: `{"v":1,"runs":[[address, destinationFirstPort,
 * acceleratorFirstPort, length], ...]}`, about 31 bytes a run. A /24 subnet has 251 addresses
 * (AWS reserves 5); laid out one block of accelerator ports per address, it is 251 runs whatever
 * the destination range: 7,650 bytes of JSON for 261 ports (the most one listener's 65,535 ports
 * hold for 251 addresses), about 7,950 for 1,000 (five-digit numbers), and under 32 KB were each
 * block split in four (test/fronts/port-mappings.test.ts measures it). A DynamoDB item holds
 * 400 KB; a layout with no contiguity at all (65,535 runs, about 2 MB) would not fit, and
 * encoding does not hide that: the caller sees the length.
 */
export function encodeMappingRuns(runs: readonly MappingRun[]): string {
  return JSON.stringify({
    v: ENCODING_VERSION,
    runs: runs.map((r) => [r.address, r.destinationFirstPort, r.acceleratorFirstPort, r.length]),
  });
}

/** Reads the stored form back; throws MappingRunsError when it is not runs of a mapping. */
export function decodeMappingRuns(text: string): MappingRun[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new MappingRunsError('stored port mappings are not JSON', { cause });
  }
  if (typeof parsed !== 'object' || parsed === null || !('v' in parsed) || !('runs' in parsed)) {
    throw new MappingRunsError('stored port mappings lack "v" or "runs"');
  }
  if (parsed.v !== ENCODING_VERSION) {
    throw new MappingRunsError(
      `stored port mappings are version ${JSON.stringify(parsed.v)}; this berth reads version ${ENCODING_VERSION}`,
    );
  }
  if (!Array.isArray(parsed.runs)) throw new MappingRunsError('stored "runs" is not a list');
  const runs = parsed.runs.map((entry: unknown, i: number): MappingRun => {
    if (
      !Array.isArray(entry) ||
      entry.length !== 4 ||
      typeof entry[0] !== 'string' ||
      !entry.slice(1).every((n) => typeof n === 'number')
    ) {
      throw new MappingRunsError(
        `stored run ${i} is not [address, destinationFirstPort, acceleratorFirstPort, length]`,
      );
    }
    const [address, destinationFirstPort, acceleratorFirstPort, length] = entry;
    return { address, destinationFirstPort, acceleratorFirstPort, length };
  });
  checkRuns(runs);
  return runs;
}

/** A VPC subnet and its IPv4 block. */
export interface SubnetBlock {
  readonly subnetId: string;
  readonly cidr: string;
}

/**
 * The subnet whose block holds `ip` (a node's address, to find its endpoint subnet), or undefined
 * when none does or `ip` is not an address. A VPC's subnets never overlap, so the first holds
 * it. Throws a RangeError for a block that is not a CIDR (the subnets come from EC2: a fault).
 */
export function subnetOfAddress(subnets: readonly SubnetBlock[], ip: string): string | undefined {
  const address = parseIp(ip);
  if (address === undefined) return undefined;
  for (const subnet of subnets) {
    const block = parseCidr(subnet.cidr);
    if (block === undefined) {
      throw new RangeError(
        `subnet ${subnet.subnetId}: ${JSON.stringify(subnet.cidr)} is not a CIDR block`,
      );
    }
    if (cidrContains(block, address)) return subnet.subnetId;
  }
  return undefined;
}

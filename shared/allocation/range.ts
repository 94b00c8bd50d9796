/**
 * A range of allocatable values (cluster IPs of one CIDR, node ports, host ports) seen as
 * offsets `[0, size)`, with the kube-apiserver's reserved lower band for static requests.
 */
import { type CidrBlock, formatCidr, formatIp, type IpFamily, parseIp } from '../net/ip.js';
import { formatPortRange, type PortRange } from '../net/port-range.js';

/** What a range hands out; also the `kind` in `/v1/status`. */
export type RangeKind = 'clusterIP' | 'nodePort' | 'hostPort';

/** A contiguous set of values addressed by offset. Pure: no I/O. */
export interface ValueRange {
  readonly kind: RangeKind;
  /** The name in `/v1/status` and in store keys: the CIDR, the port range, or the config name. */
  readonly name: string;
  /** Number of usable values. */
  readonly size: number;
  /** Offsets `[0, reservedBand)` are left to static requests until the upper band is full. */
  readonly reservedBand: number;
  /** The family, for cluster IP ranges only. */
  readonly family?: IpFamily;
  /** The offset of a value in this range, or undefined when the value is not in it. */
  offsetOf(value: string): number | undefined;
  /** The value at an offset in `[0, size)`. */
  valueAt(offset: number): string;
}

/** KEP-3070/KEP-3668 band: `min(max(floor, size/step), cap)`, and 0 for ranges of 16 or less. */
function band(size: number, step: number, cap: number): number {
  const floor = 16;
  if (size <= floor) return 0;
  return Math.min(Math.max(floor, Math.floor(size / step)), cap);
}

/** The bitmap allocator caps IPv6 ranges at 2^16 addresses; berth keeps the same limit. */
const IPV6_MAX_BLOCK = 1n << 16n;

/** Cluster IPs of one CIDR: the network address and the IPv4 broadcast are not usable. */
export function clusterIpRange(block: CidrBlock): ValueRange {
  const blockSize = 1n << BigInt(block.hostBits);
  const usable =
    block.family === 'IPv4'
      ? blockSize - 2n
      : (blockSize < IPV6_MAX_BLOCK ? blockSize : IPV6_MAX_BLOCK) - 1n;
  const size = usable > 0n ? Number(usable) : 0;
  const base = block.network + 1n;
  // The band is sized from the whole block (RangeSize upstream), network and broadcast included.
  // Clamped before the conversion to number: any block of 2^12 or more gets the full 256 anyway.
  const reservedBand = band(Number(blockSize < 1n << 32n ? blockSize : 1n << 32n), 16, 256);
  return {
    kind: 'clusterIP',
    name: formatCidr(block),
    size,
    reservedBand,
    family: block.family,
    offsetOf(value) {
      const ip = parseIp(value);
      if (ip === undefined || ip.family !== block.family) return undefined;
      const offset = ip.value - base;
      return offset >= 0n && offset < BigInt(size) ? Number(offset) : undefined;
    },
    valueAt(offset) {
      return formatIp({ family: block.family, value: base + BigInt(offset) });
    },
  };
}

/** Service node ports: every port of the range is usable. */
export function nodePortRange(ports: PortRange): ValueRange {
  return portValues('nodePort', formatPortRange(ports), ports, band(ports.size, 32, 128));
}

/** A named game-server host port range: no reserved band (Static ports may not sit inside one). */
export function hostPortRange(name: string, ports: PortRange): ValueRange {
  return portValues('hostPort', name, ports, 0);
}

function portValues(
  kind: RangeKind,
  name: string,
  ports: PortRange,
  reservedBand: number,
): ValueRange {
  return {
    kind,
    name,
    size: ports.size,
    reservedBand,
    offsetOf(value) {
      if (!/^\d+$/.test(value)) return undefined;
      const offset = Number(value) - ports.base;
      return offset >= 0 && offset < ports.size ? offset : undefined;
    },
    valueAt(offset) {
      return String(ports.base + offset);
    },
  };
}

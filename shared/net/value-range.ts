/**
 * A range of allocatable values (cluster IPs of one CIDR, node ports, host ports) seen as
 * offsets `[0, size)`, with the kube-apiserver's reserved lower band for static requests.
 */
import { type CidrBlock, formatCidr, formatIp, type IpFamily, parseIp } from './ip.js';
import { bigOffset, type Offset, toOffset } from './offset.js';
import { formatPortRange, type PortRange } from './port-range.js';

/** What a range hands out; also the `kind` in `/v1/status`. */
export type RangeKind = 'clusterIP' | 'nodePort' | 'hostPort';

/** A contiguous set of values addressed by offset. Pure: no I/O. */
export interface ValueRange {
  readonly kind: RangeKind;
  /** The name in `/v1/status` and in store keys: the CIDR, the port range, or the config name. */
  readonly name: string;
  /**
   * Number of usable values; past 2^53 (IPv6 ranges wider than a /75) the nearest number, for
   * display only: allocation bounds itself by `exactSize`.
   */
  readonly size: number;
  /** Number of usable values, exactly: one past the last offset. */
  readonly exactSize: Offset;
  /** Offsets `[0, reservedBand)` are left to static requests until the upper band is full. */
  readonly reservedBand: number;
  /** The family, for cluster IP ranges only. */
  readonly family?: IpFamily;
  /** The offset of a value in this range, or undefined when the value is not in it. */
  offsetOf(value: string): Offset | undefined;
  /** The value at an offset in `[0, exactSize)`. */
  valueAt(offset: Offset): string;
}

/** KEP-3070/KEP-3668 band: `min(max(floor, size/step), cap)`, and 0 for ranges of 16 or less. */
function band(size: number, step: number, cap: number): number {
  const floor = 16;
  if (size <= floor) return 0;
  return Math.min(Math.max(floor, Math.floor(size / step)), cap);
}

/**
 * The widest IPv6 service range, a /64: the kube-apiserver's IPAddress allocator refuses shorter
 * prefixes (kubernetes/kubernetes v1.33 `pkg/registry/core/service/ipallocator/ipallocator.go`,
 * `NewIPAllocator`), and KEP-1880 lets an IPv6 cluster give its Services a /64 as it would any
 * subnet. Config validation refuses wider ones; this is the limit it checks.
 */
export const IPV6_MIN_SERVICE_PREFIX = 64;

/**
 * Cluster IPs of one CIDR: the network address and the IPv4 broadcast are not usable (IPv6 has
 * no broadcast, so its last address is, as upstream uses it).
 */
export function clusterIpRange(block: CidrBlock): ValueRange {
  const blockSize = 1n << BigInt(block.hostBits);
  const usable = block.family === 'IPv4' ? blockSize - 2n : blockSize - 1n;
  const exactSize = usable > 0n ? toOffset(usable) : 0;
  const base = block.network + 1n;
  // The band is sized from the whole block (RangeSize upstream), network and broadcast included.
  // Clamped before the conversion to number: any block of 2^12 or more gets the full 256 anyway.
  const reservedBand = band(Number(blockSize < 1n << 32n ? blockSize : 1n << 32n), 16, 256);
  return {
    kind: 'clusterIP',
    name: formatCidr(block),
    size: Number(exactSize),
    exactSize,
    reservedBand,
    family: block.family,
    offsetOf(value) {
      const ip = parseIp(value);
      if (ip === undefined || ip.family !== block.family) return undefined;
      const offset = ip.value - base;
      return offset >= 0n && offset < usable ? toOffset(offset) : undefined;
    },
    valueAt(offset) {
      return formatIp({ family: block.family, value: base + bigOffset(offset) });
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
    exactSize: ports.size,
    reservedBand,
    offsetOf(value) {
      if (!/^\d+$/.test(value)) return undefined;
      const offset = Number(value) - ports.base;
      return offset >= 0 && offset < ports.size ? offset : undefined;
    },
    valueAt(offset) {
      return String(ports.base + Number(offset));
    },
  };
}

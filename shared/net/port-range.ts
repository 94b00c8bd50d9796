/**
 * Port ranges as the kube-apiserver parses `--service-node-port-range`: `min-max` inclusive at
 * both ends, a single port `N`, or `min+offset`.
 */

/** An inclusive range of port numbers. */
export interface PortRange {
  readonly base: number;
  readonly size: number;
}

/** The error texts of k8s.io/apimachinery's PortRange.Set, so users see familiar words. */
export function parsePortRange(text: string): PortRange | string {
  const value = text.trim();
  if (value.includes('-') && value.includes('+')) return `unable to parse port range: ${text}`;
  const [lowText, highText, sep] = value.includes('+')
    ? [...value.split('+'), '+']
    : value.includes('-')
      ? [...value.split('-'), '-']
      : [value, value, '-'];
  if (
    lowText === undefined ||
    highText === undefined ||
    !/^\d+$/.test(lowText) ||
    !/^\d+$/.test(highText)
  ) {
    return `unable to parse port range: ${text}`;
  }
  const low = Number(lowText);
  const high = sep === '+' ? low + Number(highText) : Number(highText);
  if (low > 65535 || high > 65535) return `the port range cannot be greater than 65535: ${text}`;
  if (high < low) return `end port cannot be less than start port: ${text}`;
  if (low === 0) return `port 0 is not a valid port: ${text}`;
  return { base: low, size: high - low + 1 };
}

/** `base-(base+size-1)`, the canonical text the kube-apiserver prints in its errors. */
export function formatPortRange(range: PortRange): string {
  return `${range.base}-${range.base + range.size - 1}`;
}

/** Whether two ranges share a port (ranges that share an end port overlap). */
export function portRangesOverlap(a: PortRange, b: PortRange): boolean {
  return a.base < b.base + b.size && b.base < a.base + a.size;
}

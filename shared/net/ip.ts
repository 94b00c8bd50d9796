/**
 * IP address arithmetic: parsing, canonical formatting and CIDR blocks, with addresses held as
 * bigint so IPv4 and IPv6 share one code path. This is the one module that twiddles bits.
 */

/** An IP family as Kubernetes names it in `spec.ipFamilies`. */
export type IpFamily = 'IPv4' | 'IPv6';

/** A parsed address: its family and its value as an unsigned integer. */
export interface IpAddress {
  readonly family: IpFamily;
  readonly value: bigint;
}

/** A CIDR block: the network address (host bits zero) and the prefix length. */
export interface CidrBlock {
  readonly family: IpFamily;
  readonly network: bigint;
  readonly prefixLength: number;
  /** Number of host bits: 32 or 128 minus the prefix length. */
  readonly hostBits: number;
}

const BITS: Record<IpFamily, number> = { IPv4: 32, IPv6: 128 };

const IPV4_OCTET = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    // Leading zeros are rejected, as Go's net.ParseIP does since 1.17 (they read as octal elsewhere).
    if (!IPV4_OCTET.test(part)) return undefined;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

function parseIpv6(text: string): bigint | undefined {
  if (text.length < 2 || text.includes('%')) return undefined;
  // An embedded IPv4 suffix (::ffff:10.0.0.1) is rewritten as the two groups it stands for.
  let body = text;
  const lastColon = body.lastIndexOf(':');
  const suffix = body.slice(lastColon + 1);
  if (suffix.includes('.')) {
    const v4 = parseIpv4(suffix);
    if (v4 === undefined) return undefined;
    body = `${body.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0] ?? '');
  const tail = halves.length === 2 ? parseGroups(halves[1] ?? '') : [];
  if (head === undefined || tail === undefined) return undefined;
  const explicit = head.length + tail.length;
  if (halves.length === 2 ? explicit > 7 : explicit !== 8) return undefined;
  const zeros = Array<bigint>(8 - explicit).fill(0n);
  return [...head, ...zeros, ...tail].reduce((acc, g) => (acc << 16n) | g, 0n);
}

function parseGroups(text: string): bigint[] | undefined {
  if (text === '') return [];
  const groups: bigint[] = [];
  for (const group of text.split(':')) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    groups.push(BigInt(`0x${group}`));
  }
  return groups;
}

/** Parses an IPv4 or IPv6 address; undefined when the text is not one. */
export function parseIp(text: string): IpAddress | undefined {
  if (text.includes(':')) {
    const value = parseIpv6(text);
    return value === undefined ? undefined : { family: 'IPv6', value };
  }
  const value = parseIpv4(text);
  return value === undefined ? undefined : { family: 'IPv4', value };
}

/** Formats an address canonically: dotted quad, or RFC 5952 for IPv6 (longest zero run as ::). */
export function formatIp(address: IpAddress): string {
  if (address.family === 'IPv4') {
    const v = address.value;
    return [24n, 16n, 8n, 0n].map((shift) => String((v >> shift) & 0xffn)).join('.');
  }
  const groups = Array.from({ length: 8 }, (_, i) =>
    Number((address.value >> BigInt((7 - i) * 16)) & 0xffffn),
  );
  // RFC 5952: compress the longest run of two or more zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  const left = hex.slice(0, bestStart).join(':');
  const right = hex.slice(bestStart + bestLength).join(':');
  return `${left}::${right}`;
}

/** Parses `a.b.c.d/n` or `x::/n`; the address must be the network address (no host bits set). */
export function parseCidr(text: string): CidrBlock | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const address = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (address === undefined || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefixLength = Number(prefixText);
  const bits = BITS[address.family];
  if (prefixLength > bits) return undefined;
  const hostBits = bits - prefixLength;
  const hostMask = (1n << BigInt(hostBits)) - 1n;
  if ((address.value & hostMask) !== 0n) return undefined;
  return { family: address.family, network: address.value, prefixLength, hostBits };
}

/** Canonical text of a CIDR block, e.g. `10.100.0.0/16` or `fd00::/108`. */
export function formatCidr(block: CidrBlock): string {
  return `${formatIp({ family: block.family, value: block.network })}/${block.prefixLength}`;
}

/** Whether `address` lies inside `block` (same family, same network bits). */
export function cidrContains(block: CidrBlock, address: IpAddress): boolean {
  return (
    block.family === address.family &&
    address.value >> BigInt(block.hostBits) === block.network >> BigInt(block.hostBits)
  );
}

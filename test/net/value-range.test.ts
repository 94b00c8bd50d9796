import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatIp, parseCidr, parseIp } from '../../shared/net/ip.js';
import { bigOffset, toOffset } from '../../shared/net/offset.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';
import { clusterIpRange, nodePortRange } from '../../shared/net/value-range.js';

const ipRange = (text: string) => {
  const block = parseCidr(text);
  if (!block) throw new Error(text);
  return clusterIpRange(block);
};
const portRange = (text: string) => nodePortRange(parsePortRange(text) as PortRange);

describe('clusterIpRange', () => {
  it.each([
    ['10.0.0.0/30', 2, 0],
    ['10.0.0.0/28', 14, 0],
    ['10.0.0.0/27', 30, 16],
    ['10.0.0.0/25', 126, 16],
    ['10.0.0.0/24', 254, 16],
    ['192.168.0.0/22', 1022, 64],
    ['10.96.0.0/20', 4094, 256],
    ['10.96.0.0/16', 65534, 256],
    ['10.0.0.0/12', 1048574, 256],
    ['fd00::/124', 15, 0],
    ['fd00::/122', 63, 16],
    ['fd00::/118', 1023, 64],
    ['fd00::/112', 65535, 256],
    ['fd00::/108', 1048575, 256],
  ])('sizes %s at %i usable addresses with a reserved band of %i', (cidr, size, band) => {
    const range = ipRange(cidr);
    expect(range.size).toBe(size);
    expect(range.reservedBand).toBe(band);
  });

  it('maps offset 0 to the address after the network address', () => {
    const range = ipRange('10.96.0.0/16');
    expect(range.valueAt(0)).toBe('10.96.0.1');
    expect(range.valueAt(range.reservedBand)).toBe('10.96.1.1');
    expect(range.offsetOf('10.96.1.0')).toBe(255);
  });
});

describe('nodePortRange', () => {
  it.each([
    ['30000-30009', 10, 0],
    ['30000-30015', 16, 0],
    ['30000-30127', 128, 16],
    ['30000-30128', 129, 16],
    ['30000-32047', 2048, 64],
    ['30000-32767', 2768, 86],
    ['30000-34095', 4096, 128],
  ])('sizes %s at %i ports with a reserved band of %i', (text, size, band) => {
    const range = portRange(text);
    expect(range.size).toBe(size);
    expect(range.reservedBand).toBe(band);
  });

  it('keeps 30000-30085 for static requests in the default range', () => {
    const range = portRange('30000-32767');
    expect(range.valueAt(range.reservedBand - 1)).toBe('30085');
    expect(range.valueAt(range.reservedBand)).toBe('30086');
  });
});

describe('parsePortRange', () => {
  it('answers with the apimachinery error texts', () => {
    expect(parsePortRange('30000-70000')).toBe(
      'the port range cannot be greater than 65535: 30000-70000',
    );
    expect(parsePortRange('32767-30000')).toBe(
      'end port cannot be less than start port: 32767-30000',
    );
    expect(parsePortRange('1-2+3')).toBe('unable to parse port range: 1-2+3');
    expect(parsePortRange('30000+10')).toEqual({ base: 30000, size: 11 });
    expect(parsePortRange('8080')).toEqual({ base: 8080, size: 1 });
  });
});

describe('clusterIpRange, IPv6 up to a /64', () => {
  const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

  it.each([
    ['fd00:1:2:3::/64', (1n << 64n) - 1n],
    ['fd7a:2b3c::/108', (1n << 20n) - 1n],
    ['fd00::/75', SAFE],
    ['fd00::/74', (1n << 54n) - 1n],
  ])('serves every address of %s but the network address (%s of them)', (text, usable) => {
    const range = ipRange(text);
    expect(bigOffset(range.exactSize)).toBe(usable);
    expect(range.size).toBe(Number(usable));
    expect(range.reservedBand).toBe(256);
  });

  it('maps addresses to offsets and back exactly at both ends of a /64 and a /108', () => {
    for (const text of ['fd00:1:2:3::/64', 'fd7a:2b3c::/108']) {
      const block = parseCidr(text);
      if (!block) throw new Error(text);
      const range = clusterIpRange(block);
      const last = bigOffset(range.exactSize) - 1n;
      const ends = [0n, 1n, SAFE - 1n, SAFE, SAFE + 1n, last - 1n, last].filter((o) => o <= last);
      for (const offset of ends.map(toOffset)) {
        expect(range.offsetOf(range.valueAt(offset))).toBe(offset);
      }
      const network = formatIp({ family: 'IPv6', value: block.network });
      const after = formatIp({
        family: 'IPv6',
        value: block.network + (1n << BigInt(block.hostBits)),
      });
      expect(range.offsetOf(network)).toBeUndefined();
      expect(range.offsetOf(after)).toBeUndefined();
      expect(range.valueAt(0)).toBe(formatIp({ family: 'IPv6', value: block.network + 1n }));
    }
    expect(ipRange('fd00:1:2:3::/64').valueAt(toOffset((1n << 64n) - 2n))).toBe(
      'fd00:1:2:3:ffff:ffff:ffff:ffff',
    );
  });

  it('round-trips any address of a random /64 or /108', () => {
    const prefix = fc.record({
      network: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
      hostBits: fc.constantFrom(64, 20),
    });
    fc.assert(
      fc.property(prefix, fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (p, pick) => {
        const network = (p.network << 64n) & ~((1n << BigInt(p.hostBits)) - 1n);
        const range = clusterIpRange({
          family: 'IPv6',
          network,
          prefixLength: 128 - p.hostBits,
          hostBits: p.hostBits,
        });
        const offset = toOffset(pick % bigOffset(range.exactSize));
        const value = range.valueAt(offset);
        const address = parseIp(value)?.value ?? -1n;
        expect(address >> BigInt(p.hostBits)).toBe(network >> BigInt(p.hostBits));
        expect(range.offsetOf(value)).toBe(offset);
      }),
    );
  });
});

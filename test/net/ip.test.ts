import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cidrContains, formatCidr, formatIp, parseCidr, parseIp } from '../../shared/net/ip.js';

describe('parseIp', () => {
  it('reads IPv4 and writes it back unchanged', () => {
    const ip = parseIp('10.100.1.2');
    expect(ip).toEqual({ family: 'IPv4', value: 0x0a640102n });
    expect(ip && formatIp(ip)).toBe('10.100.1.2');
  });

  it('rejects IPv4 octets with leading zeros or out of range, as Go does', () => {
    for (const bad of ['010.0.0.1', '256.0.0.1', '1.2.3', '1.2.3.4.5', '', 'a.b.c.d']) {
      expect(parseIp(bad)).toBeUndefined();
    }
  });

  it('writes IPv6 in RFC 5952 form', () => {
    const cases: Array<[string, string]> = [
      ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
      ['fd00:0:0:1:0:0:0:0', 'fd00:0:0:1::'],
      ['::', '::'],
      ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
      ['::ffff:10.0.0.1', '::ffff:a00:1'],
      ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
      ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'],
    ];
    for (const [input, canonical] of cases) {
      const ip = parseIp(input);
      expect(ip && formatIp(ip)).toBe(canonical);
    }
  });

  it('rejects malformed IPv6', () => {
    for (const bad of ['1::2::3', '12345::', '1:2:3:4:5:6:7:8:9', 'fe80::1%eth0', ':::']) {
      expect(parseIp(bad)).toBeUndefined();
    }
  });

  it('round-trips every address through its canonical text', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), (text) => {
        const ip = parseIp(text);
        expect(ip).toBeDefined();
        if (!ip) return;
        expect(parseIp(formatIp(ip))).toEqual(ip);
      }),
    );
  });
});

describe('parseCidr', () => {
  it('rejects a block with host bits set', () => {
    expect(parseCidr('10.100.0.1/16')).toBeUndefined();
    expect(parseCidr('10.100.0.0/33')).toBeUndefined();
  });

  it('formats the network canonically', () => {
    const block = parseCidr('fd00:0:0:0:0:0:0:0/108');
    expect(block && formatCidr(block)).toBe('fd00::/108');
    expect(block?.hostBits).toBe(20);
  });
});

describe('cidrContains', () => {
  const block = (text: string) => parseCidr(text) as NonNullable<ReturnType<typeof parseCidr>>;
  const ip = (text: string) => parseIp(text) as NonNullable<ReturnType<typeof parseIp>>;

  it('holds the addresses of the block, first to last, and nothing around it', () => {
    expect(cidrContains(block('10.0.1.0/28'), ip('10.0.1.0'))).toBe(true);
    expect(cidrContains(block('10.0.1.0/28'), ip('10.0.1.15'))).toBe(true);
    expect(cidrContains(block('10.0.1.0/28'), ip('10.0.1.16'))).toBe(false);
    expect(cidrContains(block('10.0.1.0/28'), ip('10.0.0.255'))).toBe(false);
    expect(cidrContains(block('fd00::/108'), ip('fd00::f'))).toBe(true);
    expect(cidrContains(block('fd00::/108'), ip('10.0.1.1'))).toBe(false);
  });
});

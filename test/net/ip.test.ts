import { describe, expect, it } from 'vitest';
import { formatIp, parseCidr, parseIp } from '../../shared/net/ip.js';

describe('parseIp', () => {
  it('reads IPv4 and writes it back unchanged', () => {
    const ip = parseIp('10.100.1.2');
    expect(ip).toEqual({ family: 'IPv4', value: 0x0a640102n });
    expect(ip && formatIp(ip)).toBe('10.100.1.2');
  });
});

describe('parseCidr', () => {
  it('rejects a block with host bits set', () => {
    expect(parseCidr('10.100.0.1/16')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { clusterIpRange, nodePortRange } from '../../shared/allocation/range.js';
import { parseCidr } from '../../shared/net/ip.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';

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
    ['fd00::/108', 65535, 256],
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

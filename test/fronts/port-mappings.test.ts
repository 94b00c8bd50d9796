import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PortMapping } from '../../shared/fronts/accelerator.js';
import {
  buildMappingRuns,
  decodeMappingRuns,
  destinationOf,
  encodeMappingRuns,
  type MappingRun,
  MappingRunsError,
  publicPortOf,
  subnetOfAddress,
} from '../../shared/fronts/port-mappings.js';

const GROUP = 'arn:aws:globalaccelerator::1:accelerator/a/listener/l/endpoint-group/g';

const mapping = (
  acceleratorPort: number,
  destinationAddress: string,
  destinationPort: number,
  endpointId = 'subnet-a',
): PortMapping => ({
  acceleratorPort,
  endpointGroupArn: GROUP,
  endpointId,
  destinationAddress,
  destinationPort,
  protocols: ['TCP', 'UDP'],
  trafficState: 'DENY',
});

/** The runs of one subnet, as buildMappingRuns reads them from pages. */
const runsOf = (mappings: readonly PortMapping[], subnet = 'subnet-a'): readonly MappingRun[] =>
  buildMappingRuns([mappings]).get(subnet) ?? [];

/**
 * A /24 subnet's 251 usable addresses (AWS reserves .0-.3 and .255), each given one block of
 * `ports` accelerator ports from 1 up, as the Global Accelerator guide's example lays them out.
 */
function blockLayout(ports: number, splits = 1): PortMapping[] {
  const mappings: PortMapping[] = [];
  let acceleratorPort = 1;
  for (let host = 4; host <= 254; host++) {
    // `splits` blocks per address, in the order: the later half of the ports first, so a run
    // cannot merge across the split.
    const size = Math.ceil(ports / splits);
    const pieces = Array.from({ length: splits }, (_, i) => i).reverse();
    for (const piece of pieces) {
      for (let p = piece * size; p < Math.min(ports, (piece + 1) * size); p++) {
        mappings.push(mapping(acceleratorPort++, `10.0.1.${host}`, 30_000 + p));
      }
    }
  }
  return mappings;
}

describe('buildMappingRuns', () => {
  it('merges mappings where both the accelerator and the destination port continue', () => {
    const runs = runsOf([
      mapping(10_001, '10.0.0.4', 81),
      mapping(10_002, '10.0.0.4', 82),
      mapping(10_003, '10.0.0.5', 81),
      mapping(10_004, '10.0.0.5', 82),
      mapping(10_005, '10.0.0.5', 90),
      mapping(10_007, '10.0.0.5', 91),
    ]);
    expect(runs).toEqual([
      { address: '10.0.0.4', destinationFirstPort: 81, acceleratorFirstPort: 10_001, length: 2 },
      { address: '10.0.0.5', destinationFirstPort: 81, acceleratorFirstPort: 10_003, length: 2 },
      { address: '10.0.0.5', destinationFirstPort: 90, acceleratorFirstPort: 10_005, length: 1 },
      { address: '10.0.0.5', destinationFirstPort: 91, acceleratorFirstPort: 10_007, length: 1 },
    ]);
  });

  it('reads pages in any order, keeps each subnet apart and a mapping listed twice once', () => {
    const runs = buildMappingRuns([
      [mapping(3, '10.0.0.4', 83), mapping(5, '10.0.1.4', 81, 'subnet-b')],
      [mapping(1, '10.0.0.4', 81), mapping(2, '10.0.0.4', 82), mapping(3, '10.0.0.4', 83)],
    ]);
    expect([...runs.keys()].sort()).toEqual(['subnet-a', 'subnet-b']);
    expect(runs.get('subnet-a')).toEqual([
      { address: '10.0.0.4', destinationFirstPort: 81, acceleratorFirstPort: 1, length: 3 },
    ]);
    expect(runs.get('subnet-b')).toHaveLength(1);
  });

  it('keeps addresses canonical', () => {
    const runs = runsOf([mapping(1, 'fd00:0:0::4', 81)]);
    expect(runs[0]?.address).toBe('fd00::4');
  });

  it('refuses an accelerator port mapped twice, a destination mapped twice, and a non-address', () => {
    expect(() => runsOf([mapping(1, '10.0.0.4', 81), mapping(1, '10.0.0.5', 81)])).toThrow(
      /accelerator port 1 is mapped to both 10.0.0.4:81 and 10.0.0.5:81/,
    );
    expect(() => runsOf([mapping(1, '10.0.0.4', 81), mapping(9, '10.0.0.4', 81)])).toThrow(
      /destination 10.0.0.4:81 is mapped from two accelerator ports/,
    );
    expect(() => runsOf([mapping(1, 'node-a', 81)])).toThrow(MappingRunsError);
  });

  it('makes one run per address of a /24 subnet laid out in blocks', () => {
    expect(runsOf(blockLayout(261))).toHaveLength(251);
  });
});

describe('publicPortOf and destinationOf', () => {
  const runs = runsOf([
    mapping(10_001, '10.0.0.4', 81),
    mapping(10_002, '10.0.0.4', 82),
    mapping(10_003, '10.0.0.5', 81),
    mapping(10_004, '10.0.0.5', 82),
  ]);

  it('finds the accelerator port of a destination, and none outside the mapping', () => {
    expect(publicPortOf(runs, '10.0.0.5', 82)).toBe(10_004);
    expect(publicPortOf(runs, '10.0.0.4', 81)).toBe(10_001);
    expect(publicPortOf(runs, '10.0.0.4', 83)).toBeUndefined();
    expect(publicPortOf(runs, '10.0.0.6', 81)).toBeUndefined();
    expect(publicPortOf(runs, 'not an address', 81)).toBeUndefined();
    expect(publicPortOf([], '10.0.0.4', 81)).toBeUndefined();
  });

  it('finds the destination of an accelerator port, and none outside the mapping', () => {
    expect(destinationOf(runs, 10_003)).toEqual({ address: '10.0.0.5', port: 81 });
    expect(destinationOf(runs, 10_002)).toEqual({ address: '10.0.0.4', port: 82 });
    expect(destinationOf(runs, 10_000)).toBeUndefined();
    expect(destinationOf(runs, 10_005)).toBeUndefined();
    expect(destinationOf([], 1)).toBeUndefined();
  });

  it('answers from runs what the listing said, for random mappings', () => {
    const layoutArb = fc
      .uniqueArray(
        fc.record({
          host: fc.integer({ min: 4, max: 12 }),
          port: fc.integer({ min: 80, max: 120 }),
        }),
        { selector: (d) => `${d.host}:${d.port}`, maxLength: 120, size: 'max' },
      )
      .chain((destinations) =>
        fc.tuple(
          fc.constant(destinations),
          // Accelerator ports: ascending with gaps of 1 (contiguous) or more, then shuffled in
          // places so runs both merge and break.
          fc.array(fc.integer({ min: 1, max: 3 }), {
            minLength: destinations.length,
            maxLength: destinations.length,
          }),
          fc.boolean(),
        ),
      );
    fc.assert(
      fc.property(layoutArb, ([destinations, gaps, sortDestinations]) => {
        const ordered = sortDestinations
          ? [...destinations].sort((a, b) => a.host - b.host || a.port - b.port)
          : destinations;
        let acceleratorPort = 1_000;
        const mappings = ordered.map((d, i) => {
          acceleratorPort += gaps[i] ?? 1;
          return mapping(acceleratorPort, `10.0.0.${d.host}`, d.port);
        });
        const runs = runsOf(mappings);
        expect(runs.reduce((sum, r) => sum + r.length, 0)).toBe(mappings.length);
        for (const m of mappings) {
          expect(publicPortOf(runs, m.destinationAddress, m.destinationPort)).toBe(
            m.acceleratorPort,
          );
          expect(destinationOf(runs, m.acceleratorPort)).toEqual({
            address: m.destinationAddress,
            port: m.destinationPort,
          });
        }
        const mapped = new Set(mappings.map((m) => m.acceleratorPort));
        for (let port = 1_000; port <= acceleratorPort + 1; port++) {
          if (!mapped.has(port)) expect(destinationOf(runs, port)).toBeUndefined();
        }
        const taken = new Set(mappings.map((m) => `${m.destinationAddress}:${m.destinationPort}`));
        for (let port = 79; port <= 121; port++) {
          if (!taken.has(`10.0.0.4:${port}`)) {
            expect(publicPortOf(runs, '10.0.0.4', port)).toBeUndefined();
          }
        }
        expect(decodeMappingRuns(encodeMappingRuns(runs))).toEqual(runs);
      }),
    );
  });
});

describe('encodeMappingRuns and decodeMappingRuns', () => {
  it('stores a /24 subnet laid out in blocks in under 8 KB, under 40 KB with each block in four', () => {
    // 261 destination ports is the most a /24 fits in one listener's 65,535 ports; 1,000 ports
    // would be the same 251 runs, their numbers no longer (five digits at most).
    const blocks = encodeMappingRuns(runsOf(blockLayout(261)));
    expect(Buffer.byteLength(blocks)).toBe(7_650);
    const splitRuns = runsOf(blockLayout(261, 4));
    expect(splitRuns).toHaveLength(251 * 4);
    expect(Buffer.byteLength(encodeMappingRuns(splitRuns))).toBeLessThan(40_000);
  });

  it('round-trips runs', () => {
    const runs = runsOf(blockLayout(20));
    expect(decodeMappingRuns(encodeMappingRuns(runs))).toEqual(runs);
    expect(decodeMappingRuns(encodeMappingRuns([]))).toEqual([]);
  });

  it.each([
    ['not JSON', '{', /not JSON/],
    ['no runs', '{"v":1}', /lack "v" or "runs"/],
    ['another version', '{"v":2,"runs":[]}', /version 2; this berth reads version 1/],
    ['runs not a list', '{"v":1,"runs":{}}', /not a list/],
    ['a short run', '{"v":1,"runs":[["10.0.0.4",81,1]]}', /stored run 0 is not/],
    ['a port as text', '{"v":1,"runs":[["10.0.0.4","81",1,1]]}', /stored run 0 is not/],
    ['a zero length', '{"v":1,"runs":[["10.0.0.4",81,1,0]]}', /length must be/],
    ['a port past 65535', '{"v":1,"runs":[["10.0.0.4",65535,1,2]]}', /within 1-65535/],
    ['a fractional port', '{"v":1,"runs":[["10.0.0.4",81.5,1,1]]}', /within 1-65535/],
    ['a non-canonical address', '{"v":1,"runs":[["10.0.00.4",81,1,1]]}', /canonical/],
    [
      'overlapping accelerator ports',
      '{"v":1,"runs":[["10.0.0.4",81,1,2],["10.0.0.5",81,2,1]]}',
      /accelerator port order/,
    ],
    [
      'runs out of order',
      '{"v":1,"runs":[["10.0.0.4",81,5,1],["10.0.0.5",81,2,1]]}',
      /accelerator port order/,
    ],
    [
      'a destination twice',
      '{"v":1,"runs":[["10.0.0.4",81,1,2],["10.0.0.4",82,5,1]]}',
      /10.0.0.4:82 is mapped from two/,
    ],
  ])('refuses %s', (_, text, message) => {
    expect(() => decodeMappingRuns(text)).toThrow(MappingRunsError);
    expect(() => decodeMappingRuns(text)).toThrow(message);
  });
});

describe('subnetOfAddress', () => {
  const subnets = [
    { subnetId: 'subnet-a', cidr: '10.0.0.0/24' },
    { subnetId: 'subnet-b', cidr: '10.0.1.0/24' },
    { subnetId: 'subnet-6', cidr: 'fd00:1::/64' },
  ];

  it('finds the subnet whose block holds the address', () => {
    expect(subnetOfAddress(subnets, '10.0.1.200')).toBe('subnet-b');
    expect(subnetOfAddress(subnets, '10.0.0.0')).toBe('subnet-a');
    expect(subnetOfAddress(subnets, 'fd00:1::9')).toBe('subnet-6');
  });

  it('finds none for an address outside every block or not an address', () => {
    expect(subnetOfAddress(subnets, '10.0.2.1')).toBeUndefined();
    expect(subnetOfAddress(subnets, 'fd00:2::9')).toBeUndefined();
    expect(subnetOfAddress(subnets, 'node-a')).toBeUndefined();
    expect(subnetOfAddress([], '10.0.0.1')).toBeUndefined();
  });

  it('refuses a block that is not a CIDR', () => {
    expect(() =>
      subnetOfAddress([{ subnetId: 'subnet-x', cidr: '10.0.0.1/24' }], '10.0.0.1'),
    ).toThrow(/subnet-x: "10.0.0.1\/24" is not a CIDR block/);
  });
});

/**
 * Blocks of consecutive host ports (`count`, contract section 4) and `hostNetwork: true` pods,
 * through the real pod handler on DynamoDB Local, and the pure block choice.
 */
import type { V1Container } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { hostPortRangesOf } from '../../shared/admission/pods.js';
import { hostPortRangeUsage } from '../../shared/hostports/allocator.js';
import {
  chooseBlock,
  largestFreeBlock,
  PACKING_MIN_PORTS,
  packedCounts,
} from '../../shared/hostports/choice.js';
import { parsePortSpecs } from '../../shared/hostports/spec.js';
import { hostPortRange } from '../../shared/net/value-range.js';
import { carriedHostPorts } from '../../shared/repair/host-port-diff.js';
import { seededRandom } from '../../sim/random.js';
import {
  allocationIdOf,
  containerEnv,
  containerPorts,
  denial,
  gamePod,
  hostPortsOf,
  type Pod,
  podHarness,
  podRequest,
} from './support.js';

const PATH = 'metadata.annotations[berth.dev/ports]';

const spread = (counts: Map<number, number>) =>
  Math.max(...counts.values()) - Math.min(...counts.values());

describe('blocks of consecutive host ports', () => {
  it('gives a block its ports in a row, tells the pod the first and the count, and releases them once', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([
        { name: 'voice', containerPort: 9000, count: 4 },
        { name: 'game', containerPort: 7777 },
      ]),
    );
    const block = hostPortsOf(pod).voice as unknown as { port: number; count: number };
    expect(block.count).toBe(4);
    const first = block.port;
    expect(typeof hostPortsOf(pod).game).toBe('number');
    const entries = containerPorts(pod);
    expect(entries.slice(0, 4)).toEqual([
      { name: 'voice', containerPort: 9000, protocol: 'UDP', hostPort: first },
      { containerPort: 9001, protocol: 'UDP', hostPort: first + 1 },
      { containerPort: 9002, protocol: 'UDP', hostPort: first + 2 },
      { containerPort: 9003, protocol: 'UDP', hostPort: first + 3 },
    ]);
    expect(containerEnv(pod)).toEqual(
      expect.arrayContaining([
        { name: 'BERTH_PORT_VOICE', value: String(first) },
        { name: 'BERTH_PORT_VOICE_COUNT', value: '4' },
      ]),
    );
    expect(containerEnv(pod).some((v) => v.name === 'BERTH_PORT_GAME_COUNT')).toBe(false);
    const counts = await h.counts();
    expect([0, 1, 2, 3].map((i) => counts.get(first + i))).toEqual([1, 1, 1, 1]);
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(5);

    await h.handler(podRequest(pod, { operation: 'DELETE' }));
    await h.handler(podRequest(pod, { operation: 'DELETE' }));
    expect([...(await h.counts()).values()].every((c) => c === 0)).toBe(true);
    expect(allocationIdOf(pod)).toBeDefined();
  });

  it('splits a TCPUDP block into TCP and UDP entries per port, the first pair named', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([{ name: 'rtc', containerPort: 5000, protocol: 'TCPUDP', count: 2 }]),
    );
    const { port } = hostPortsOf(pod).rtc as unknown as { port: number };
    expect(containerPorts(pod)).toEqual([
      { name: 'rtc-tcp', containerPort: 5000, protocol: 'TCP', hostPort: port },
      { name: 'rtc-udp', containerPort: 5000, protocol: 'UDP', hostPort: port },
      { containerPort: 5001, protocol: 'TCP', hostPort: port + 1 },
      { containerPort: 5001, protocol: 'UDP', hostPort: port + 1 },
    ]);
    // A TCPUDP port counts once.
    expect([...(await h.counts()).values()].reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('keeps every count within one of the others for blocks one after another', async () => {
    const h = await podHarness({ default: '7000-7015' }, seededRandom(3));
    for (let i = 0; i < 24; i++) {
      await h.create(
        gamePod([{ name: 'voice', containerPort: 9000, count: 4 }], { name: `gs${i}` }),
      );
      expect(spread(await h.counts())).toBeLessThanOrEqual(1);
    }
  });

  it('re-invoked, recognises its own block and allocates nothing more', async () => {
    const h = await podHarness();
    const pod = await h.create(gamePod([{ name: 'voice', containerPort: 9000, count: 3 }]));
    const again = await h.create(pod);
    expect(allocationIdOf(again)).toBe(allocationIdOf(pod));
    expect([...(await h.counts()).values()].reduce((a, b) => a + b, 0)).toBe(3);
  });

  it('denies a block that fits nowhere, 409 with its field path and the largest run', async () => {
    const h = await podHarness({ default: '7000-7007' });
    // Every other port held by a pod berth never admitted: no two ports in a row to hand out.
    for (const port of [7001, 7003, 7005, 7007]) await h.store.markForeign('default', port, true);
    const verdict = await h.handler(
      podRequest(gamePod([{ name: 'voice', containerPort: 9000, count: 2 }])),
    );
    const message = denial(verdict, 409);
    expect(message).toMatch(new RegExp(`^${escaped(PATH)}\\[0\\]\\.count: range is full`));
    expect(message).toContain('at most 1 consecutive');
  });

  it('places a block where its busiest port is least used when none keeps counts within one', async () => {
    const h = await podHarness({ default: '7000-7007' });
    await h.store.addUses(
      [7001, 7001, 7003, 7003, 7005, 7005, 7006, 7007, 7007].map((port) => ({
        name: 'f',
        range: 'default',
        port,
        protocol: 'UDP' as const,
      })),
    );
    const pod = await h.create(gamePod([{ name: 'voice', containerPort: 9000, count: 2 }]));
    // Every pair holds a port at 2: the block goes to a pair with the fewest uses in all, not to
    // 7005-7006 or 7006-7007, which hold three.
    const { port } = hostPortsOf(pod).voice as unknown as { port: number };
    expect([7000, 7001, 7002, 7003, 7004]).toContain(port);
  });

  it('reports the largest free block of a range in its usage', () => {
    expect(largestFreeBlock([1, 0, 0, 1, 0, 0, 0, 2])).toBe(3);
    expect(
      hostPortRangeUsage({ name: 'default', first: 7000, size: 4 }, [0, 0, 1, 0]),
    ).toMatchObject({ largestFreeBlock: 2, minUse: 0, maxUse: 1 });
  });
});

describe('block specs', () => {
  const ranges = new Map([['default', { name: 'default', first: 7000, size: 10 }]]);
  const problems = (specs: unknown[]) => {
    const parsed = parsePortSpecs(
      JSON.stringify(specs),
      { containers: ['game'], initContainers: [] },
      ranges,
    );
    return parsed.ok ? [] : parsed.problems;
  };

  it('takes an integer count of at least 1, for Dynamic ports only, that fits the range', () => {
    expect(problems([{ name: 'a', containerPort: 1, count: 1 }])).toEqual([]);
    expect(problems([{ name: 'a', containerPort: 1, count: 0 }])).toEqual([
      `${PATH}[0].count: Invalid value: 0: must be an integer between 1 and 64, inclusive`,
    ]);
    expect(problems([{ name: 'a', containerPort: 1, count: 2.5 }])[0]).toMatch(
      /^metadata\.annotations\[berth\.dev\/ports\]\[0\]\.count: Invalid value: 2\.5/,
    );
    expect(problems([{ name: 'a', containerPort: 1, count: '4' }])[0]).toContain('[0].count');
    expect(
      problems([{ name: 'a', containerPort: 1, hostPort: 9000, portPolicy: 'Static', count: 2 }]),
    ).toEqual([
      `${PATH}[0].count: Forbidden: a block of consecutive host ports is only for the Dynamic PortPolicy`,
    ]);
    expect(problems([{ name: 'a', portPolicy: 'Passthrough', count: 2 }])[0]).toContain(
      '[0].count: Forbidden',
    );
    expect(problems([{ name: 'a', containerPort: 1, count: 11 }])).toEqual([
      `${PATH}[0].count: Invalid value: 11: a block must fit host port range "default" (7000-7009), which holds 10 ports`,
    ]);
    expect(problems([{ name: 'a', containerPort: 65534, count: 3 }])[0]).toContain(
      '[0].count: Invalid value: 3',
    );
  });

  it('denies ports whose variables would clash, and a pod whose ports outnumber the range', () => {
    expect(
      problems([
        { name: 'a', containerPort: 1, count: 2 },
        { name: 'a-count', containerPort: 2 },
      ]),
    ).toEqual([
      `${PATH}[1].name: Duplicate value: "a-count": its environment variable BERTH_PORT_A_COUNT clashes with port [0]`,
    ]);
    expect(
      problems([
        { name: 'a', containerPort: 1, count: 8 },
        { name: 'b', containerPort: 2, count: 2 },
        { name: 'c', containerPort: 3 },
      ]),
    ).toEqual([
      `${PATH}: Invalid value: asks for 11 distinct host ports in range "default" (7000-7009), which holds 10`,
    ]);
  });
});

describe('chooseBlock', () => {
  const random = seededRandom(11);

  it('takes a block at the lowest count, in the smallest run that holds it, aligned to its size', () => {
    // Runs at 0: 1-2 (two ports) and 4-9 (six). A block of 2 fits the smaller run exactly.
    expect(chooseBlock([1, 0, 0, 1, 0, 0, 0, 0, 0, 0], 2, random)).toBe(1);
    // A block of 3 fits only the run of six: at its multiple of 3.
    expect(chooseBlock([1, 0, 0, 1, 0, 0, 0, 0, 0, 0], 3, random)).toBe(6);
    // From port 7001, 7005 and 7008 are the multiples of 3 in that run.
    expect(chooseBlock([1, 0, 0, 1, 0, 0, 0, 0, 0, 0], 3, random, { first: 7001 })).toBeOneOf([
      4, 7,
    ]);
  });

  it('covers every port at the lowest count before the least busy block, and avoids what the pod took', () => {
    // 0s at 2 and 3 only: a block of 3 covering both (its third port at 1) keeps counts within one.
    for (let i = 0; i < 20; i++) {
      expect([1, 2]).toContain(chooseBlock([1, 1, 0, 0, 1, 1], 3, random));
    }
    // 0s at 0 and 5 cannot both be covered by 3: the least busy block, with the fewest uses.
    expect(chooseBlock([0, 2, 1, 1, 1, 0], 3, random)).toBe(3);
    expect(chooseBlock([0, 0, 0, 0], 2, random, { taken: new Set([1, 2]) })).toBeUndefined();
    // No block keeps counts within one: the one whose busiest port is least used.
    expect(chooseBlock([0, 3, 0, 2, 0, 3], 2, random)).toBeOneOf([2, 3]);
  });

  it('keeps a block inside one count item when it can', () => {
    const itemOf = (offset: number) => Math.floor(offset / 4);
    for (let i = 0; i < 20; i++) {
      const at = chooseBlock(new Array(12).fill(0), 4, random, { itemOf }) ?? -1;
      expect(at % 4).toBe(0);
    }
  });
});

describe('a block as the repair pass reads it back', () => {
  it('is one use per port, a TCPUDP block too, as the webhook recorded it', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([{ name: 'rtc', containerPort: 5000, protocol: 'TCPUDP', count: 3 }]),
    );
    const [range] = hostPortRangesOf(h.config);
    const values = range && hostPortRange(range.name, { base: range.first, size: range.size });
    const read = carriedHostPorts(
      (pod.spec as { containers: V1Container[] }).containers,
      values ? [values] : [],
    );
    expect(read.map((p) => p.protocol)).toEqual(['TCPUDP', 'TCPUDP', 'TCPUDP']);
    expect(new Set(read.map((p) => p.port)).size).toBe(3);
  });
});

describe('packedCounts', () => {
  it('sends single ports to partly used slots while they hold enough room, leaving whole slots to blocks', () => {
    // 7040-7103: four aligned slots of 16; one port used in each of the first three.
    const counts = new Array<number>(64).fill(0);
    for (const offset of [0, 16, 32]) counts[offset] = 1;
    const packed = packedCounts(counts, 7040);
    expect(packed.slice(48)).toEqual(new Array(16).fill(0.5));
    expect(packed.slice(0, 48)).toEqual(counts.slice(0, 48));
    // With fewer than PACKING_MIN_PORTS left in partly used slots, every lowest port is equal.
    const sparse = new Array<number>(64).fill(0);
    sparse[0] = 1;
    expect(45).toBeGreaterThanOrEqual(PACKING_MIN_PORTS);
    expect(packedCounts(sparse, 7040)).toEqual(sparse);
  });
});

describe('hostNetwork pods', () => {
  it('get their container port set to the allocated host port', async () => {
    const h = await podHarness();
    const base = gamePod([
      { name: 'game', containerPort: 7777 },
      { name: 'voice', containerPort: 9000, count: 2 },
    ]);
    const pod: Pod = { ...base, spec: { ...(base.spec as object), hostNetwork: true } };
    const patchedPod = await h.create(pod);
    const ports = hostPortsOf(patchedPod);
    const game = ports.game as number;
    const voice = (ports.voice as unknown as { port: number }).port;
    expect(containerPorts(patchedPod)).toEqual([
      { name: 'game', containerPort: game, protocol: 'UDP', hostPort: game },
      { name: 'voice', containerPort: voice, protocol: 'UDP', hostPort: voice },
      { containerPort: voice + 1, protocol: 'UDP', hostPort: voice + 1 },
    ]);
  });
});

function escaped(text: string): string {
  return text.replace(/[[\]().*+?^$|\\/]/g, '\\$&');
}

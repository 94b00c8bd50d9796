/**
 * Property and concurrency tests of host port allocation through the real handler on DynamoDB
 * Local: random sequences of CREATE, DELETE, re-invocation, copied annotations and dry runs,
 * checked against a model of who holds what.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../sim/random.js';
import {
  allocationIdOf,
  containerPorts,
  gamePod,
  hostPortsOf,
  type Pod,
  type PodHarness,
  patched,
  podHarness,
  podRequest,
} from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';

type Protocol = 'UDP' | 'TCP' | 'TCPUDP';
interface SpecInput {
  readonly policy: 'Dynamic' | 'Passthrough' | 'Static' | 'None';
  readonly protocol: Protocol;
  readonly range: 'default' | 'tools';
}

const RANGES = { default: '10-15', tools: '20-22' };

const specArb: fc.Arbitrary<SpecInput> = fc.record({
  policy: fc.constantFrom('Dynamic', 'Dynamic', 'Passthrough', 'Static', 'None'),
  protocol: fc.constantFrom<Protocol>('UDP', 'TCP', 'TCPUDP'),
  range: fc.constantFrom('default', 'default', 'tools'),
});

// At most 3 ports a pod: they always fit the 3-port tools range, protocol by protocol.
const opArb = fc.oneof(
  fc.record({
    kind: fc.constant('create' as const),
    specs: fc.array(specArb, { minLength: 1, maxLength: 3 }),
    dryRun: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('delete' as const), which: fc.nat(), dryRun: fc.boolean() }),
  fc.record({ kind: fc.constant('reinvoke' as const), which: fc.nat() }),
  fc.record({ kind: fc.constant('copy' as const), which: fc.nat() }),
  fc.record({ kind: fc.constant('deleteAgain' as const), which: fc.nat() }),
);

function annotationOf(specs: readonly SpecInput[]): unknown[] {
  return specs.map((s, i) => ({
    name: `p${i}`,
    portPolicy: s.policy,
    protocol: s.protocol,
    ...(s.policy === 'Passthrough' ? {} : { containerPort: 5000 + i }),
    ...(s.policy === 'Static' ? { hostPort: 9000 + i } : {}),
    ...(s.policy === 'Dynamic' || s.policy === 'Passthrough' ? { range: s.range } : {}),
  }));
}

interface Held {
  readonly range: string;
  readonly port: number;
  readonly protocol: Protocol;
}

/** The allocated host ports of a patched pod, from its annotation and its own spec list. */
function heldOf(pod: Pod, specs: readonly SpecInput[]): Held[] {
  const ports = hostPortsOf(pod);
  return specs.flatMap((s, i) =>
    s.policy === 'Dynamic' || s.policy === 'Passthrough'
      ? [{ range: s.range, port: ports[`p${i}`] ?? -1, protocol: s.protocol }]
      : [],
  );
}

function expectNoDuplicatePerProtocol(pod: Pod): void {
  const seen = new Set<string>();
  for (const entry of containerPorts(pod)) {
    if (entry.hostPort === undefined) continue;
    const key = `${String(entry.protocol)}/${String(entry.hostPort)}`;
    expect(seen.has(key), `duplicate host port ${key}`).toBe(false);
    seen.add(key);
  }
}

const spread = (counts: Iterable<number>): number => {
  const values = [...counts];
  return Math.max(...values) - Math.min(...values);
};

async function allCounts(h: PodHarness): Promise<Record<string, Map<number, number>>> {
  return { default: await h.counts('default'), tools: await h.counts('tools') };
}

function modelCounts(
  live: readonly { held: readonly Held[] }[],
  h: PodHarness,
): Record<string, Map<number, number>> {
  const counts: Record<string, Map<number, number>> = {};
  for (const [name, range] of h.ranges) {
    counts[name] = new Map(Array.from({ length: range.size }, (_, i) => [range.first + i, 0]));
  }
  for (const pod of live) {
    for (const held of pod.held) {
      const range = counts[held.range];
      range?.set(held.port, (range.get(held.port) ?? 0) + 1);
    }
  }
  return counts;
}

let table: Awaited<ReturnType<typeof freshTable>>;
beforeAll(async () => {
  table = await freshTable();
});

describe('podAdmission under random sequences', () => {
  it('keeps counts equal to the held (pod, port) pairs, takes the least used, and never duplicates a port in a pod', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 18 }),
        fc.integer(),
        async (ops, seed) => {
          const h = await podHarness(RANGES, seededRandom(seed), table);
          const live: { pod: Pod; specs: readonly SpecInput[]; held: Held[] }[] = [];
          const deleted: Pod[] = [];
          let names = 0;

          for (const op of ops) {
            const before = await allCounts(h);
            if (op.kind === 'create') {
              const pod = gamePod(annotationOf(op.specs), { name: `gs-${names++}` });
              const result = await h.create(pod, { dryRun: op.dryRun });
              expectNoDuplicatePerProtocol(result);
              const held = heldOf(result, op.specs);
              for (const name of Object.keys(RANGES)) {
                const mine = held.filter((x) => x.range === name).map((x) => x.port);
                const counts = before[name] ?? new Map();
                const highestTaken = Math.max(-1, ...mine.map((p) => counts.get(p) ?? 0));
                const lowestLeft = Math.min(
                  Number.POSITIVE_INFINITY,
                  ...[...counts].filter(([p]) => !mine.includes(p)).map(([, c]) => c),
                );
                expect(highestTaken).toBeLessThanOrEqual(lowestLeft);
              }
              if (!op.dryRun) {
                live.push({ pod: result, specs: op.specs, held });
                for (const name of Object.keys(RANGES)) {
                  const after = await h.counts(name);
                  expect(spread(after.values())).toBeLessThanOrEqual(
                    Math.max(1, spread((before[name] ?? new Map()).values())),
                  );
                }
              }
            } else if (op.kind === 'delete' && live.length > 0) {
              const index = op.which % live.length;
              const target = live[index];
              if (!target) continue;
              await h.handler(podRequest(target.pod, { operation: 'DELETE', dryRun: op.dryRun }));
              if (!op.dryRun) {
                live.splice(index, 1);
                deleted.push(target.pod);
              }
            } else if (op.kind === 'reinvoke' && live.length > 0) {
              const target = live[op.which % live.length];
              if (!target) continue;
              const again = await h.create(target.pod);
              expect(allocationIdOf(again)).toBe(allocationIdOf(target.pod));
              expect(hostPortsOf(again)).toEqual(hostPortsOf(target.pod));
            } else if (op.kind === 'copy' && live.length > 0) {
              const target = live[op.which % live.length];
              if (!target) continue;
              const copy = {
                ...target.pod,
                metadata: { ...(target.pod.metadata as object), name: `gs-${names++}` },
              };
              const result = patched(copy, await h.handler(podRequest(copy)));
              expect(allocationIdOf(result)).not.toBe(allocationIdOf(target.pod));
              expectNoDuplicatePerProtocol(result);
              live.push({ pod: result, specs: target.specs, held: heldOf(result, target.specs) });
            } else if (op.kind === 'deleteAgain' && deleted.length > 0) {
              const target = deleted[op.which % deleted.length];
              if (!target) continue;
              await h.handler(podRequest(target, { operation: 'DELETE' }));
            }
            expect(await allCounts(h)).toEqual(modelCounts(live, h));
          }
        },
      ),
      { numRuns: 20 },
    );
  });
});

describe('podAdmission under concurrency', () => {
  const threePorts = [
    { name: 'a', containerPort: 1 },
    { name: 'b', containerPort: 2, protocol: 'TCPUDP' },
    { name: 'c', containerPort: 3, protocol: 'TCP' },
  ];

  async function createAll(h: PodHarness, n: number) {
    const pods = Array.from({ length: n }, (_, i) => gamePod(threePorts, { name: `gs-${i}` }));
    return Promise.all(
      pods.map(async (pod) => ({ pod, verdict: await h.handler(podRequest(pod)) })),
    );
  }

  it('serves 32 parallel CREATEs with no duplicate in any pod and counts equal to the held pairs', async () => {
    // A realistic range: lost races are rare, so every CREATE is allowed.
    const h = await podHarness({ default: '7000-7999' });
    const results = await createAll(h, 32);
    const held = new Map<number, number>();
    for (const { pod, verdict } of results) {
      expect(verdict.allowed).toBe(true);
      const result = patched(pod, verdict);
      expectNoDuplicatePerProtocol(result);
      const ports = Object.values(hostPortsOf(result));
      expect(new Set(ports).size).toBe(3);
      for (const port of ports) held.set(port, (held.get(port) ?? 0) + 1);
    }
    const counts = await h.counts();
    expect([...counts].filter(([, c]) => c > 0)).toEqual([...held].sort(([a], [b]) => a - b));
    // 96 ports over 1,000: the least-used rule leaves no port used twice.
    expect(Math.max(...counts.values())).toBe(1);
  });

  it('stays consistent when 32 parallel CREATEs fight over a 16-port range: denials hold nothing', async () => {
    const h = await podHarness({ default: '10-25' });
    const results = await createAll(h, 32);
    const held = new Map<number, number>();
    for (const { pod, verdict } of results) {
      if (!verdict.allowed) {
        // Only lost races may deny, and they say so.
        expect(verdict.code).toBe(409);
        expect(verdict.message).toContain('retry the request');
        continue;
      }
      const result = patched(pod, verdict);
      const ports = Object.values(hostPortsOf(result));
      expect(new Set(ports).size).toBe(3);
      for (const port of ports) held.set(port, (held.get(port) ?? 0) + 1);
    }
    const counts = await h.counts();
    for (const [port, count] of counts) expect(count).toBe(held.get(port) ?? 0);
  });
});

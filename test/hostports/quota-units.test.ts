/**
 * Quota units are held by pod records: whatever CREATEs, refusals, DELETEs (seen or lost),
 * finished pods, repair passes and crashes between any two store calls happen, a namespace's
 * count is the sum of its records' units, and once it holds nothing it fits its whole quota.
 * Run on the in-memory stores (test/contracts holds them to the DynamoDB adapters), through the
 * real pod handler and the real repair pass.
 */
import { randomBytes } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { podAdmission } from '../../shared/admission/pods.js';
import { parseConfig } from '../../shared/config/schema.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';
import { hostPortRange, nodePortRange } from '../../shared/net/value-range.js';
import { runRepairPass } from '../../shared/repair/pass.js';
import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';
import { MemoryAllocationStore } from '../../sim/fakes/allocation-store.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { MemoryHostPortStore } from '../../sim/fakes/host-port-store.js';
import { applyPatch } from '../../sim/fakes/json-patch.js';
import { MemoryLeakLedger } from '../../sim/fakes/leak-ledger.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { seededRandom } from '../../sim/random.js';
import { gamePod, type Pod, podRequest } from './support.js';

const NAMESPACE = 'games';
const ports = (text: string) => parsePortRange(text) as PortRange;
const RANGES = {
  clusterIps: [],
  nodePorts: nodePortRange(ports('30000-30099')),
  hostPorts: [hostPortRange('default', ports('7000-7019'))],
};

/** A process that dies at its `at`-th store call, before or after the call takes effect. */
interface Crash {
  readonly at: number;
  readonly after: boolean;
}

class Died extends Error {}

/** The stores' calls that answer an async iterable rather than a promise. */
const LISTINGS = new Set(['listRecords', 'listOwners', 'scanBlocks']);

/**
 * The store as one process sees it: once it has died, no call of its reaches the store (a
 * crash, not an error its own code could handle).
 */
function process<T extends object>(store: T, crash: Crash | undefined): T {
  let calls = 0;
  let dead = false;
  const died = () => new Died(`died at store call ${crash?.at}`);
  return new Proxy(store, {
    get(target, key) {
      const member = Reflect.get(target, key, target) as unknown;
      if (typeof member !== 'function') return member;
      const call = (args: unknown[]) =>
        (member as (...a: unknown[]) => unknown).apply(target, args);
      if (LISTINGS.has(String(key))) {
        return (...args: unknown[]) =>
          (async function* () {
            if (dead || ++calls === crash?.at) {
              dead = true;
              throw died();
            }
            yield* call(args) as AsyncIterable<unknown>;
          })();
      }
      return async (...args: unknown[]) => {
        if (dead) throw died();
        const dies = ++calls === crash?.at;
        if (dies && !crash?.after) dead = true;
        if (dead) throw died();
        const result = await call(args);
        if (!dies) return result;
        dead = true;
        throw died();
      };
    },
  });
}

const crash = fc.option(fc.record({ at: fc.integer({ min: 1, max: 6 }), after: fc.boolean() }), {
  freq: 2,
  nil: undefined,
});
const step = fc.oneof(
  fc.record({
    kind: fc.constant('create' as const),
    ports: fc.integer({ min: 1, max: 3 }),
    // The apiserver stores the pod, or refuses the write admission let through.
    stored: fc.boolean(),
    crash,
    retried: fc.boolean(),
  }),
  fc.record({
    kind: fc.constantFrom('delete' as const, 'lost delete' as const, 'finish' as const),
    pod: fc.nat(),
    crash,
    retried: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('repair' as const), crash }),
);

describe('namespace quota units', () => {
  it('are never lost or doubled: a namespace holding nothing fits its whole quota', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          quota: fc.integer({ min: 2, max: 6 }),
          grace: fc.integer({ min: 1, max: 3 }),
          seed: fc.nat(),
          steps: fc.array(step, { minLength: 4, maxLength: 30, size: 'max' }),
        }),
        async ({ quota, grace, seed, steps }) => {
          const clock = { now: Date.parse('2036-03-01T12:00:00Z') };
          const now = () => clock.now;
          const store = new MemoryHostPortStore();
          const cluster = new FakeClusterApi();
          const ledger = new MemoryLeakLedger();
          const lease = new FakeLease(now);
          const allocations = new MemoryAllocationStore();
          const config = parseConfig({
            hostPortRanges: { default: '7000-7019' },
            hostPortQuotas: { [NAMESPACE]: quota },
          });
          const random = seededRandom(seed);
          const admit = (crashAt: Crash | undefined) =>
            podAdmission({
              config,
              store: process(store, crashAt),
              random,
              randomBytes: (size) => new Uint8Array(randomBytes(size)),
              now,
              sleep: async () => {},
            });
          const repair = (crashAt: Crash | undefined) =>
            runRepairPass(
              {
                cluster,
                allocations,
                hostPorts: process(store, crashAt),
                ledger,
                lease,
                now,
                holder: `pass-${clock.now}`,
              },
              {
                ranges: RANGES,
                leakGracePasses: grace,
                hostPortQuotas: config.hostPortQuotas,
              },
            ).catch(() => undefined);
          /** Sends a review in a process that may die; the apiserver may send it again. */
          const review = async (
            pod: Pod,
            operation: 'CREATE' | 'DELETE',
            s: { readonly crash: Crash | undefined; readonly retried: boolean },
          ) => {
            const send = (c: Crash | undefined) =>
              admit(c)(podRequest(pod, { operation })).catch(() => undefined);
            const verdict = await send(s.crash);
            return verdict ?? (s.retried ? await send(undefined) : undefined);
          };
          let named = 0;
          const stored = () => [...cluster.pods.values()];

          for (const s of steps) {
            clock.now += 1_000;
            if (s.kind === 'create') {
              const specs = Array.from({ length: s.ports }, (_, i) => ({
                name: `p${i}`,
                containerPort: 1000 + i,
              }));
              const pod = gamePod(specs, { name: `gs-${named++}`, namespace: NAMESPACE });
              const verdict = await review(pod, 'CREATE', s);
              // Failure policy Fail: a crashed webhook is a refused CREATE too.
              if (verdict?.allowed && s.stored) {
                const admitted = applyPatch(pod, verdict.patch ?? []);
                cluster.withPods({ ...admitted, status: { phase: 'Running' } } as V1Pod);
              }
            } else if (s.kind === 'repair') {
              // Past the commit window: what admission wrote is stored or refused by now.
              clock.now += COMMIT_WINDOW_MS + 10_000;
              await repair(s.crash);
            } else {
              const pods = stored();
              const pod = pods[s.pod % Math.max(1, pods.length)];
              if (!pod) continue;
              const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
              if (s.kind === 'finish') {
                cluster.pods.set(key, { ...pod, status: { phase: 'Succeeded' } });
                continue;
              }
              // Failure policy Ignore: the pod goes whether berth answered or not.
              if (s.kind === 'delete') await review(pod as Pod, 'DELETE', s);
              cluster.pods.delete(key);
            }
            // The count is the sum of the namespace's records' units, within the quota.
            let units = 0;
            for await (const record of store.listRecords())
              if (record.pod.namespace === NAMESPACE) units += record.quotaUnits ?? 0;
            const used = await store.namespaceUse(NAMESPACE);
            expect(used).toBe(units);
            expect(used).toBeLessThanOrEqual(quota);
          }

          // Quiet: every pod gone, passes past the commit window and a dead pass's lease.
          cluster.pods.clear();
          for (let pass = 0; pass <= grace; pass++) {
            clock.now += 6 * 60_000;
            await repair(undefined);
          }
          const left = [];
          for await (const record of store.listRecords()) left.push(record.id);
          expect(left).toEqual([]);
          expect(await store.namespaceUse(NAMESPACE)).toBe(0);
          const whole = gamePod(
            Array.from({ length: quota }, (_, i) => ({ name: `p${i}`, containerPort: 1000 + i })),
            { name: 'whole', namespace: NAMESPACE },
          );
          expect((await admit(undefined)(podRequest(whole))).allowed).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });
});

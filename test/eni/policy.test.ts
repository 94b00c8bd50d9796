import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import type { IpRecord } from '../../shared/eni/model.js';
import { runEniPass } from '../../shared/eni/pass.js';
import {
  claimCandidates,
  enisOnInstance,
  isReady,
  isStickyPod,
  type PlannedEni,
  type PoolLimits,
  type PoolPolicy,
  planPool,
  poolCapacity,
  poolPolicy,
  poolStats,
  refillAheadDue,
  slotsPerEni,
  slotsUsed,
} from '../../shared/eni/policy.js';
import { assignIp, releaseIp } from '../../shared/eni/service.js';
import { eniWorld } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';

const NOW = 10_000_000;

const policyArb = fc
  .record({
    minIdle: fc.integer({ min: 0, max: 10 }),
    spread: fc.integer({ min: 0, max: 20 }),
    cooldownMs: fc.integer({ min: 0, max: 300_000 }),
    stickyMs: fc.integer({ min: 0, max: 600_000 }),
  })
  .map(
    (p): PoolPolicy => ({
      mode: 'ip',
      minIdle: p.minIdle,
      maxIdle: p.minIdle + p.spread,
      cooldownMs: p.cooldownMs,
      stickyMs: p.stickyMs,
      trimIdleAfterMs: 600_000,
      trimBatch: Math.max(1, Math.ceil(p.spread / 2)),
      minEniLifetimeMs: 60_000,
    }),
  );

const limitsArb = fc.constantFrom(
  { maxInterfaces: 3, ipv4PerInterface: 6 },
  { maxInterfaces: 3, ipv4PerInterface: 10 },
  { maxInterfaces: 4, ipv4PerInterface: 15 },
  { maxInterfaces: 8, ipv4PerInterface: 30 },
);

/**
 * A random but consistent pool: ENIs within limits, each with at most its share of addresses.
 * The first is the primary ENI, with a few addresses that are not berth's, unless the pool was
 * recorded before berth used the primary (then every ENI is one berth attached).
 */
const poolArb = fc
  .tuple(limitsArb, policyArb, fc.boolean(), fc.nat(2))
  .chain(([limits, policy, withPrimary, foreignSlots]) =>
    fc
      .array(
        fc.array(
          fc.record({
            state: fc.constantFrom('free', 'assigned', 'draining'),
            pod: fc.option(fc.constantFrom('g/a', 'g/b', 'g/c'), { nil: undefined }),
            sticky: fc.boolean(),
            releasedAgo: fc.option(fc.integer({ min: 0, max: 2_000_000 }), { nil: undefined }),
            reservedFor: fc.integer({ min: -100_000, max: 600_000 }),
            age: fc.integer({ min: 0, max: 5_000_000 }),
          }),
          { maxLength: slotsPerEni(limits) },
        ),
        { maxLength: limits.maxInterfaces - (withPrimary ? 0 : 1) },
      )
      .map((enis) => {
        const ips: IpRecord[] = [];
        const foreignOn = (e: number) => (withPrimary && e === 0 ? foreignSlots : 0);
        enis.forEach((addresses, e) => {
          addresses.slice(0, slotsPerEni(limits) - foreignOn(e)).forEach((a, i) => {
            const holder = a.state === 'assigned' ? (a.pod ?? 'g/x') : a.pod;
            ips.push({
              kind: 'ip',
              ip: `10.0.${e}.${i + 10}`,
              eniId: `eni-${e}`,
              state: a.state as IpRecord['state'],
              ...(holder ? { pod: holder } : {}),
              sticky: a.sticky,
              releasedAt: a.releasedAgo === undefined ? 0 : NOW - a.releasedAgo,
              ...(a.state === 'free' && holder ? { reservedUntil: NOW + a.reservedFor } : {}),
              createdAt: NOW - a.age,
              version: 1,
            });
          });
        });
        return {
          limits,
          policy,
          enis: enis.map(
            (_, e): PlannedEni => ({
              eniId: `eni-${e}`,
              createdAt: NOW - 3_600_000,
              ...(withPrimary && e === 0
                ? {
                    primary: true,
                    foreign: Array.from({ length: foreignOn(e) }, (_, i) => `10.9.9.${i}`),
                  }
                : {}),
            }),
          ),
          ips,
        };
      }),
  );

/**
 * The addresses the pool can still grow by (single addresses): the free slots of its ENIs and of
 * the ENIs the instance can still take, within capacity. Less than capacity allows while the
 * primary ENI is unrecorded (a pool recorded before berth used it) or holds what is not berth's.
 */
const room = (pool: {
  limits: PoolLimits;
  enis: readonly PlannedEni[];
  ips: readonly IpRecord[];
}) => {
  const perEni = slotsPerEni(pool.limits);
  const onEnis = pool.enis.reduce((n, eni) => n + perEni - filled(pool, eni.eniId), 0);
  const newEnis = (pool.limits.maxInterfaces - enisOnInstance(pool.enis, 0)) * perEni;
  return Math.min(poolCapacity(pool.limits, 'ip') - pool.ips.length, onEnis + newEnis);
};

/** The slots an ENI of the pool has filled: berth's addresses and prefixes, and what is not berth's. */
const filled = (pool: { enis: readonly PlannedEni[]; ips: readonly IpRecord[] }, eniId: string) =>
  slotsUsed(pool.ips.filter((ip) => ip.eniId === eniId)) +
  (pool.enis.find((eni) => eni.eniId === eniId)?.foreign?.length ?? 0);

describe('planPool', () => {
  it('never plans more addresses than the instance type holds, per ENI or in total', () => {
    fc.assert(
      fc.property(
        poolArb,
        fc.boolean(),
        fc.boolean(),
        fc.nat(20),
        fc.nat(2),
        (pool, draining, mayGrow, waiting, inFlight) => {
          // Creations in flight fit the instance too: at most the ENIs left, each within its share.
          const pendingCreates = Array.from(
            {
              length: Math.min(inFlight, pool.limits.maxInterfaces - enisOnInstance(pool.enis, 0)),
            },
            () => Math.min(3, slotsPerEni(pool.limits)),
          ).filter((_, i) => pool.ips.length + (i + 1) * 3 <= poolCapacity(pool.limits, 'ip'));
          const plan = planPool({ ...pool, now: NOW, draining, mayGrow, waiting, pendingCreates });
          const added =
            plan.assign.reduce((n, a) => n + a.count, 0) +
            plan.create.reduce((n, c) => n + c.count, 0);
          const pendingIps = pendingCreates.reduce((n, c) => n + c, 0);
          expect(pool.ips.length + pendingIps + added).toBeLessThanOrEqual(
            poolCapacity(pool.limits, 'ip'),
          );
          expect(
            enisOnInstance(pool.enis, pendingCreates.length) + plan.create.length,
          ).toBeLessThanOrEqual(pool.limits.maxInterfaces);
          for (const { eniId, count } of plan.assign) {
            expect(filled(pool, eniId) + count).toBeLessThanOrEqual(slotsPerEni(pool.limits));
          }
        },
      ),
    );
  });

  it('creates an ENI only when every attached ENI, the primary included, is full', () => {
    fc.assert(
      fc.property(poolArb, fc.nat(20), (pool, waiting) => {
        const plan = planPool({ ...pool, now: NOW, draining: false, mayGrow: true, waiting });
        if (plan.create.length === 0) return;
        for (const eni of pool.enis) {
          const assigned = plan.assign.find((a) => a.eniId === eni.eniId)?.count ?? 0;
          expect(filled(pool, eni.eniId) + assigned).toBe(slotsPerEni(pool.limits));
        }
      }),
    );
  });

  it('grows on the primary ENI first, as far as it has room, and never deletes it', () => {
    fc.assert(
      fc.property(poolArb, fc.nat(20), fc.boolean(), (pool, waiting, draining) => {
        const plan = planPool({ ...pool, now: NOW, draining, mayGrow: true, waiting });
        const primary = pool.enis.find((eni) => eni.primary);
        expect(plan.deleteEnis.filter((eniId) => eniId === primary?.eniId)).toEqual([]);
        const room = primary ? slotsPerEni(pool.limits) - filled(pool, primary.eniId) : 0;
        const growth = [...plan.assign, ...plan.create];
        if (!primary || room === 0 || growth.length === 0) return;
        const [first, ...others] = growth;
        expect(first).toMatchObject({ eniId: primary.eniId });
        if (others.length > 0) expect(first?.count).toBe(room);
      }),
    );
  });

  it("empties berth's own ENIs before the primary ENI, and gives back only addresses from the primary", () => {
    const policy: PoolPolicy = {
      mode: 'ip',
      minIdle: 0,
      maxIdle: 0,
      cooldownMs: 0,
      stickyMs: 0,
      trimIdleAfterMs: 0,
      trimBatch: 1,
      minEniLifetimeMs: 0,
    };
    const free = (ip: string, eniId: string): IpRecord => ({
      kind: 'ip',
      ip,
      eniId,
      state: 'free',
      sticky: false,
      releasedAt: 0,
      createdAt: 0,
      version: 1,
    });
    const enis: PlannedEni[] = [
      { eniId: 'eni-primary', createdAt: 0, primary: true, foreign: ['10.0.0.99'] },
      { eniId: 'eni-a', createdAt: 0 },
      { eniId: 'eni-empty', createdAt: 0 },
    ];
    const ips = [
      free('10.0.0.10', 'eni-primary'),
      free('10.0.1.10', 'eni-a'),
      free('10.0.1.11', 'eni-a'),
    ];
    const limits = { maxInterfaces: 3, ipv4PerInterface: 10 };
    const plan = planPool({ limits, policy, enis, ips, now: NOW, draining: true, mayGrow: false });
    expect([...plan.deleteEnis].sort()).toEqual(['eni-a', 'eni-empty']);
    expect(plan.unassign).toEqual([{ eniId: 'eni-primary', ips: ['10.0.0.10'] }]);
    // An empty primary ENI stays, whatever its age.
    const emptied = planPool({
      limits,
      policy,
      enis: enis.slice(0, 1),
      ips: [],
      now: NOW,
      draining: true,
      mayGrow: false,
    });
    expect(emptied.deleteEnis).toEqual([]);
  });

  it('trims and deletes only free, rested addresses that nobody has reserved', () => {
    fc.assert(
      fc.property(poolArb, fc.boolean(), (pool, draining) => {
        const plan = planPool({ ...pool, now: NOW, draining, mayGrow: true });
        const byIp = new Map(pool.ips.map((ip) => [ip.ip, ip]));
        for (const { ips } of plan.unassign) {
          for (const ip of ips) {
            const record = byIp.get(ip);
            expect(record && isReady(record, NOW, pool.policy.cooldownMs)).toBe(true);
          }
        }
        for (const eniId of plan.deleteEnis) {
          for (const ip of pool.ips.filter((r) => r.eniId === eniId)) {
            expect(isReady(ip, NOW, pool.policy.cooldownMs)).toBe(true);
          }
        }
      }),
    );
  });

  it('never trims a pool below minIdle ready addresses, so a trim is never bought back', () => {
    fc.assert(
      fc.property(poolArb, (pool) => {
        const plan = planPool({ ...pool, now: NOW, draining: false, mayGrow: true });
        const trimmed = plan.unassign.reduce((n, u) => n + u.ips.length, 0);
        if (trimmed > 0) {
          expect(plan.stats.ready - trimmed).toBeGreaterThanOrEqual(pool.policy.minIdle);
          expect(plan.assign).toEqual([]);
          expect(plan.create).toEqual([]);
        }
      }),
    );
  });

  it('trims only what stayed idle beyond maxIdle for the whole trim delay', () => {
    fc.assert(
      fc.property(poolArb, fc.nat(10), (pool, waiting) => {
        const plan = planPool({ ...pool, now: NOW, draining: false, mayGrow: true, waiting });
        const rested = pool.ips.filter(
          (ip) =>
            isReady(ip, NOW, pool.policy.cooldownMs) &&
            NOW - Math.max(ip.releasedAt, ip.createdAt) >= pool.policy.trimIdleAfterMs,
        );
        const gone = new Set([
          ...plan.unassign.flatMap((u) => u.ips),
          ...pool.ips.filter((ip) => plan.deleteEnis.includes(ip.eniId)).map((ip) => ip.ip),
        ]);
        for (const ip of gone) expect(rested.some((r) => r.ip === ip)).toBe(true);
        if (gone.size > 0) {
          expect(rested.length - gone.size).toBeGreaterThanOrEqual(pool.policy.maxIdle + waiting);
        }
      }),
    );
  });

  it('gives back exactly the rested addresses beyond maxIdle + waiting, longest idle first', () => {
    const limits = { maxInterfaces: 2, ipv4PerInterface: 50 };
    fc.assert(
      fc.property(
        policyArb,
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 10 }),
        fc.nat(5),
        (policy, restedCount, recentCount, waiting) => {
          const free = (i: number, idleFor: number): IpRecord => ({
            kind: 'ip',
            ip: `10.0.0.${i + 10}`,
            eniId: 'eni-0',
            state: 'free',
            sticky: false,
            releasedAt: NOW - idleFor,
            createdAt: NOW - 10_000_000,
            version: 1,
          });
          const ips = [
            // Rested: idle longer than the trim delay, the longest idle first in address order.
            ...Array.from({ length: restedCount }, (_, i) =>
              free(i, policy.trimIdleAfterMs + (restedCount - i) * 1000 + policy.cooldownMs),
            ),
            // Recently used, past the cooldown but not the trim delay.
            ...Array.from({ length: recentCount }, (_, i) =>
              free(restedCount + i, Math.min(policy.cooldownMs, policy.trimIdleAfterMs - 1)),
            ),
          ];
          const enis = [{ eniId: 'eni-0', createdAt: NOW - 3_600_000 }];
          const plan = planPool({
            limits,
            policy,
            enis,
            ips,
            now: NOW,
            draining: false,
            mayGrow: true,
            waiting,
          });
          const trimmed = plan.unassign.flatMap((u) => u.ips);
          const beyond = restedCount - policy.maxIdle - waiting;
          const expected = beyond >= policy.trimBatch ? beyond : 0;
          if (plan.deleteEnis.length > 0) {
            // The whole ENI went: it held no address, or every address on it was rested surplus.
            expect(recentCount).toBe(0);
            if (restedCount > 0) expect(policy.maxIdle + waiting).toBe(0);
          } else {
            expect(trimmed).toEqual(ips.slice(0, expected).map((ip) => ip.ip));
          }
        },
      ),
    );
  });

  it('raises both bounds by what is waiting: refills below minIdle + w, up to maxIdle + w', () => {
    fc.assert(
      fc.property(poolArb, fc.nat(10), (pool, waiting) => {
        const plan = planPool({ ...pool, now: NOW, draining: false, mayGrow: true, waiting });
        const added =
          plan.assign.reduce((n, a) => n + a.count, 0) +
          plan.create.reduce((n, c) => n + c.count, 0);
        if (plan.stats.ready >= pool.policy.minIdle + waiting) expect(added).toBe(0);
        else {
          expect(plan.stats.ready + added).toBe(
            Math.min(pool.policy.maxIdle + waiting, plan.stats.ready + room(pool)),
          );
        }
      }),
    );
  });

  it('a pool that asks for a refill ahead gets one from the plan of the same surge', () => {
    fc.assert(
      fc.property(poolArb, fc.nat(10), (pool, surge) => {
        const stats = poolStats(pool.limits, pool.ips, NOW, pool.policy.cooldownMs, 'ip');
        if (!refillAheadDue(stats, surge, pool.policy)) return;
        // A pool recorded before berth used the primary ENI reaches it only once the pass adopts
        // it: until then its berth ENIs are all it can fill.
        const adopted = pool.enis.some((eni) => eni.primary === true);
        const reachable = (pool.limits.maxInterfaces - 1) * slotsPerEni(pool.limits);
        if (!adopted && pool.ips.length >= reachable) return;
        const plan = planPool({
          ...pool,
          now: NOW,
          draining: false,
          mayGrow: true,
          waiting: surge,
        });
        const added =
          plan.assign.reduce((n, a) => n + a.count, 0) +
          plan.create.reduce((n, c) => n + c.count, 0);
        expect(added).toBeGreaterThan(0);
        expect(plan.unassign).toEqual([]);
      }),
    );
  });

  it('keeps at least minIdle ready addresses after a refill when capacity allows', () => {
    fc.assert(
      fc.property(poolArb, (pool) => {
        const plan = planPool({ ...pool, now: NOW, draining: false, mayGrow: true });
        const added =
          plan.assign.reduce((n, a) => n + a.count, 0) +
          plan.create.reduce((n, c) => n + c.count, 0);
        expect(plan.stats.ready + added).toBeGreaterThanOrEqual(
          Math.min(pool.policy.minIdle, plan.stats.ready + room(pool)),
        );
      }),
    );
  });
});

/** A Nitro pool in prefix mode: each ENI holds whole /28s (16 records each) and a few singles. */
const prefixPoolArb = fc
  .record({
    limits: fc.constantFrom(
      { maxInterfaces: 3, ipv4PerInterface: 10, prefixDelegation: true },
      { maxInterfaces: 3, ipv4PerInterface: 10, prefixDelegation: true, maxPods: 110 },
      { maxInterfaces: 3, ipv4PerInterface: 6, prefixDelegation: true, maxPods: 17 },
      { maxInterfaces: 4, ipv4PerInterface: 15, prefixDelegation: true, maxPods: 58 },
    ),
    policy: policyArb.map((p): PoolPolicy => ({ ...p, mode: 'prefix' })),
    enis: fc.array(
      fc.record({
        prefixes: fc.array(
          fc.record({
            state: fc.constantFrom('free', 'assigned', 'draining'),
            restedAgo: fc.integer({ min: 0, max: 2_000_000 }),
            busy: fc.nat(16),
          }),
          { maxLength: 4 },
        ),
        singles: fc.nat(2),
      }),
      { maxLength: 3 },
    ),
  })
  .map(({ limits, policy, enis }) => {
    const ips: IpRecord[] = [];
    // A pool recorded before berth used the primary ENI: berth's own ENIs only.
    const kept = enis.slice(0, limits.maxInterfaces - 1);
    kept.forEach((eni, e) => {
      const prefixes = eni.prefixes.slice(0, slotsPerEni(limits));
      const singles = Math.min(eni.singles, slotsPerEni(limits) - prefixes.length);
      prefixes.forEach((p, k) => {
        const prefix = `10.${e}.${k}.0/28`;
        for (let i = 0; i < 16; i++) {
          const busy = i < p.busy && p.state !== 'free';
          ips.push({
            kind: 'ip',
            ip: `10.${e}.${k}.${i}`,
            eniId: `eni-${e}`,
            prefix,
            state: busy ? (p.state as IpRecord['state']) : 'free',
            ...(busy && p.state === 'assigned' ? { pod: `g/p${e}-${k}-${i}` } : {}),
            sticky: false,
            releasedAt: NOW - p.restedAgo,
            createdAt: NOW - 3_600_000,
            version: 1,
          });
        }
      });
      for (let i = 0; i < singles; i++) {
        ips.push({
          kind: 'ip',
          ip: `10.${e}.200.${i}`,
          eniId: `eni-${e}`,
          state: 'free',
          sticky: false,
          releasedAt: 0,
          createdAt: NOW - 3_600_000,
          version: 1,
        });
      }
    });
    return {
      limits,
      policy,
      enis: kept.map((_, e) => ({ eniId: `eni-${e}`, createdAt: NOW - 3_600_000 })),
      ips,
    };
  });

describe('poolPolicy', () => {
  it('grows by /28 prefixes unless the config asks for single addresses', () => {
    expect(poolPolicy(parseConfig({}).eni).mode).toBe('prefix');
    expect(poolPolicy(parseConfig({ eni: { mode: 'ip' } }).eni).mode).toBe('ip');
  });
});

describe('planPool in prefix mode', () => {
  it('grows in whole prefixes within every ENI slot, the instance and maxPods rounded to a prefix', () => {
    fc.assert(
      fc.property(prefixPoolArb, fc.nat(40), (pool, waiting) => {
        const plan = planPool({
          ...pool,
          now: NOW,
          draining: false,
          mayGrow: true,
          growByPrefix: true,
          waiting,
        });
        const growth = [...plan.assign, ...plan.create];
        expect(growth.every((g) => g.unit === 'prefix')).toBe(true);
        for (const { eniId, count } of plan.assign) {
          const onEni = pool.ips.filter((ip) => ip.eniId === eniId);
          expect(slotsUsed(onEni) + count).toBeLessThanOrEqual(slotsPerEni(pool.limits));
        }
        for (const { count } of plan.create) {
          expect(count).toBeLessThanOrEqual(slotsPerEni(pool.limits));
        }
        const added = growth.reduce((n, g) => n + g.count * 16, 0);
        // Growth starts only below the cap, so it never overshoots by a whole prefix.
        if (added > 0) {
          expect(pool.ips.length + added - 16).toBeLessThan(poolCapacity(pool.limits, 'prefix'));
        }
        if (pool.limits.maxPods !== undefined) {
          expect(poolCapacity(pool.limits, 'prefix')).toBe(
            Math.min(
              pool.limits.maxInterfaces * slotsPerEni(pool.limits) * 16,
              Math.ceil(pool.limits.maxPods / 16) * 16,
            ),
          );
        }
        // The same batch in single addresses, should the subnet have no free /28.
        expect(
          [...(plan.fallback?.assign ?? []), ...(plan.fallback?.create ?? [])].every(
            (g) => g.unit === 'ip',
          ),
        ).toBe(true);
        if (added > 0) expect(plan.fallback).toBeDefined();
      }),
    );
  });

  it('never trims below the floor, and keeps it out of single-address growth', () => {
    fc.assert(
      fc.property(prefixPoolArb, fc.nat(120), fc.boolean(), (pool, floor, mayGrow) => {
        const plan = planPool({
          ...pool,
          now: NOW,
          draining: false,
          mayGrow,
          growByPrefix: true,
          floor,
        });
        const capped = Math.min(floor, poolCapacity(pool.limits, 'prefix'));
        const trimmed = plan.unassign.reduce((n, u) => n + u.ips.length, 0);
        const deleted = pool.ips.filter((ip) => plan.deleteEnis.includes(ip.eniId)).length;
        expect(pool.ips.length - trimmed - deleted).toBeGreaterThanOrEqual(
          Math.min(capped, pool.ips.length),
        );
        // Single addresses (a subnet short of /28s) never grow to the floor.
        const fallback = [...(plan.fallback?.assign ?? []), ...(plan.fallback?.create ?? [])];
        const noFloor = planPool({
          ...pool,
          now: NOW,
          draining: false,
          mayGrow,
          growByPrefix: true,
        });
        const sum = (gs: readonly { count: number }[]) => gs.reduce((n, g) => n + g.count, 0);
        // (At the floor the fallback may be smaller: growth falls due only when nothing is ready.)
        expect(sum(fallback)).toBeLessThanOrEqual(
          sum([...(noFloor.fallback?.assign ?? []), ...(noFloor.fallback?.create ?? [])]),
        );
      }),
    );
  });

  it('at its floor with minIdle 0, grows nothing ahead of pods even when every address cools', () => {
    // One /28, every address released this instant (cooling): nothing is ready.
    const ips: IpRecord[] = Array.from({ length: 16 }, (_, i) => ({
      kind: 'ip',
      ip: `10.0.0.${i}`,
      eniId: 'eni-0',
      prefix: '10.0.0.0/28',
      state: 'free',
      sticky: false,
      releasedAt: NOW,
      createdAt: NOW - 3_600_000,
      version: 1,
    }));
    const base = {
      limits: { maxInterfaces: 3, ipv4PerInterface: 10, prefixDelegation: true },
      enis: [{ eniId: 'eni-0', createdAt: NOW - 3_600_000 }],
      ips,
      now: NOW,
      draining: false,
      mayGrow: true,
      growByPrefix: true,
      floor: 1,
    };
    const grown = (policy: PoolPolicy) => {
      const plan = planPool({ ...base, policy });
      return [...plan.assign, ...plan.create, ...(plan.fallback?.assign ?? [])].length;
    };
    const policy = { ...poolPolicy(parseConfig({}).eni), cooldownMs: 1, maxIdle: 1 };
    expect(grown({ ...policy, minIdle: 0 })).toBe(0);
    // With minIdle 1 the pool at its floor still buys the one address a pod would miss.
    expect(grown({ ...policy, minIdle: 1 })).toBeGreaterThan(0);
  });

  it('gives a prefix back only whole, and only when every address of it has rested', () => {
    fc.assert(
      fc.property(prefixPoolArb, fc.boolean(), (pool, draining) => {
        const plan = planPool({
          ...pool,
          now: NOW,
          draining,
          mayGrow: false,
          growByPrefix: true,
        });
        const listed = new Set(plan.unassign.flatMap((u) => u.ips));
        const byPrefix = new Map<string, IpRecord[]>();
        for (const ip of pool.ips) {
          if (ip.prefix) byPrefix.set(ip.prefix, [...(byPrefix.get(ip.prefix) ?? []), ip]);
        }
        for (const members of byPrefix.values()) {
          const taken = members.filter((ip) => listed.has(ip.ip));
          expect([0, members.length]).toContain(taken.length);
          if (taken.length > 0) {
            expect(members.every((ip) => isReady(ip, NOW, pool.policy.cooldownMs))).toBe(true);
          }
        }
      }),
    );
  });

  it('counts a prefix as one slot and an address as one', () => {
    const record = (ip: string, prefix?: string): IpRecord => ({
      kind: 'ip',
      ip,
      eniId: 'eni-1',
      ...(prefix ? { prefix } : {}),
      state: 'free',
      sticky: false,
      releasedAt: 0,
      createdAt: 0,
      version: 1,
    });
    const prefixed = Array.from({ length: 16 }, (_, i) =>
      record(`10.0.0.${16 + i}`, '10.0.0.16/28'),
    );
    expect(slotsUsed([...prefixed, record('10.0.0.5'), record('10.0.0.6')])).toBe(3);
    // Three ENIs, the primary among them, of nine slots each.
    expect(poolCapacity({ maxInterfaces: 3, ipv4PerInterface: 10 }, 'prefix')).toBe(27);
    expect(
      poolCapacity({ maxInterfaces: 3, ipv4PerInterface: 10, prefixDelegation: true }, 'prefix'),
    ).toBe(432);
    expect(
      poolCapacity(
        { maxInterfaces: 3, ipv4PerInterface: 10, prefixDelegation: true, maxPods: 110 },
        'prefix',
      ),
    ).toBe(112);
    expect(poolCapacity({ maxInterfaces: 3, ipv4PerInterface: 10, maxPods: 110 }, 'ip')).toBe(27);
    expect(poolCapacity({ maxInterfaces: 3, ipv4PerInterface: 10, maxPods: 20 }, 'ip')).toBe(20);
  });
});

describe('claimCandidates', () => {
  it('offers only free addresses past their cooldown, and reservations only to their pod', () => {
    fc.assert(
      fc.property(poolArb, fc.constantFrom('g/a', 'g/b', 'g/new'), (pool, pod) => {
        for (const ip of claimCandidates(pool.ips, pod, NOW, pool.policy.cooldownMs)) {
          expect(ip.state).toBe('free');
          const reserved = ip.pod !== undefined && (ip.reservedUntil ?? 0) > NOW;
          if (reserved) expect(ip.pod).toBe(pod);
          else
            expect(ip.releasedAt === 0 || NOW - ip.releasedAt >= pool.policy.cooldownMs).toBe(true);
        }
      }),
    );
  });

  it('offers a pod its own reservation first', () => {
    fc.assert(
      fc.property(poolArb, (pool) => {
        const own = pool.ips.find(
          (ip) => ip.state === 'free' && ip.pod === 'g/a' && (ip.reservedUntil ?? 0) > NOW,
        );
        const [first] = claimCandidates(pool.ips, 'g/a', NOW, pool.policy.cooldownMs);
        if (own) expect(first?.pod).toBe('g/a');
      }),
    );
  });

  it('hands out the most recently idle address first, so the longest idle are the surplus', () => {
    const idleSince = (ip: IpRecord | undefined) =>
      Math.max(ip?.releasedAt ?? 0, ip?.createdAt ?? 0);
    fc.assert(
      fc.property(poolArb, (pool) => {
        const list = claimCandidates(pool.ips, 'g/new', NOW, pool.policy.cooldownMs);
        for (let i = 1; i < list.length; i++) {
          expect(idleSince(list[i - 1])).toBeGreaterThanOrEqual(idleSince(list[i]));
        }
      }),
    );
  });
});

describe('isStickyPod', () => {
  it('is true for StatefulSet members and annotated pods only', () => {
    expect(
      isStickyPod({
        metadata: {
          ownerReferences: [{ kind: 'StatefulSet', apiVersion: 'apps/v1', name: 's', uid: 'u' }],
        },
      }),
    ).toBe(true);
    expect(isStickyPod({ metadata: { annotations: { 'berth.dev/sticky-ip': 'true' } } })).toBe(
      true,
    );
    expect(isStickyPod({ metadata: { annotations: { 'berth.dev/sticky-ip': 'false' } } })).toBe(
      false,
    );
    expect(
      isStickyPod({
        metadata: {
          ownerReferences: [{ kind: 'ReplicaSet', apiVersion: 'apps/v1', name: 's', uid: 'u' }],
        },
      }),
    ).toBe(false);
  });
});

type Op =
  | { readonly kind: 'assign'; readonly pod: number }
  | { readonly kind: 'release'; readonly pod: number }
  | { readonly kind: 'wait'; readonly seconds: number }
  | { readonly kind: 'pass' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('assign' as const), pod: fc.nat(14) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), pod: fc.nat(14) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      seconds: fc.integer({ min: 1, max: 900 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pass' as const) }) },
);

describe('ENI pool (model-based)', () => {
  it('never exceeds capacity, never gives one IP to two pods, respects cooldown and returns sticky IPs', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(opArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 25 }),
        fc.constantFrom('t3.medium', 'c5.large', 'm5.xlarge'),
        async (batches, instanceType) => {
          const cooldownSeconds = 60;
          const stickySeconds = 300;
          const world = eniWorld({
            eni: { minIdle: 1, maxIdle: 4, cooldownSeconds, stickySeconds },
          });
          world.addNode('node-a', instanceType);
          const capacity = poolCapacity(
            instanceType === 't3.medium'
              ? { maxInterfaces: 3, ipv4PerInterface: 6 }
              : instanceType === 'c5.large'
                ? { maxInterfaces: 3, ipv4PerInterface: 10 }
                : { maxInterfaces: 4, ipv4PerInterface: 15 },
            'ip',
          );
          const holding = new Map<number, string>();
          const lastRelease = new Map<string, { pod: number; at: number; sticky: boolean }>();
          // A pod's kind does not change between its requests: even pods are StatefulSet members.
          const isSticky = (pod: number) => pod % 2 === 0;
          for (const batch of batches) {
            // Time moves between batches; the rest of a batch runs concurrently, which is where
            // a double assignment would show.
            for (const op of batch) if (op.kind === 'wait') world.clock.now += op.seconds * 1000;
            const at = world.clock.now;
            // Requests for one pod are not raced against each other here (a release racing its
            // own pod's assign has no single right answer); the service test covers repeats.
            const seen = new Set<number>();
            const concurrent = batch.filter((op) => {
              if (!('pod' in op)) return true;
              if (seen.has(op.pod)) return false;
              seen.add(op.pod);
              return true;
            });
            await Promise.all(
              concurrent.map(async (op) => {
                if (op.kind === 'pass') {
                  await runEniPass(world.deps);
                } else if (op.kind === 'assign') {
                  world.cluster.withPods(boundPod('g', `p${op.pod}`, 'node-a'));
                  const outcome = await assignIp(world.deps, 'node-a', {
                    namespace: 'g',
                    pod: `p${op.pod}`,
                    sticky: isSticky(op.pod),
                  }).catch((error: unknown) => error as { statusCode?: number });
                  if (!('ip' in outcome)) {
                    expect(outcome.statusCode).toBeOneOf([409, 503]);
                    return;
                  }
                  const { ip } = outcome;
                  const previous = holding.get(op.pod);
                  if (previous !== undefined) expect(ip).toBe(previous);
                  const rested = lastRelease.get(ip);
                  if (rested && rested.pod !== op.pod) {
                    expect(at - rested.at).toBeGreaterThanOrEqual(cooldownSeconds * 1000);
                  }
                  const mine = [...lastRelease].find(([, r]) => r.pod === op.pod && r.sticky);
                  if (previous === undefined && mine && at - mine[1].at < stickySeconds * 1000) {
                    // Still reserved, so nobody else can have it: the sticky pod gets it back.
                    expect(ip).toBe(mine[0]);
                  }
                  holding.set(op.pod, ip);
                } else if (op.kind === 'release') {
                  const ip = holding.get(op.pod);
                  if (ip === undefined) return;
                  holding.delete(op.pod);
                  world.cluster.pods.delete(`g/p${op.pod}`);
                  await releaseIp(world.deps, 'node-a', ip, { namespace: 'g', pod: `p${op.pod}` });
                  for (const [other, r] of lastRelease) {
                    if (r.pod === op.pod) lastRelease.delete(other);
                  }
                  lastRelease.set(ip, { pod: op.pod, at, sticky: isSticky(op.pod) });
                }
              }),
            );
            const state = await world.store.loadNode('node-a');
            expect(state.ips.length).toBeLessThanOrEqual(capacity);
            const holders = state.ips.filter((ip) => ip.state === 'assigned').map((ip) => ip.pod);
            expect(new Set(holders).size).toBe(holders.length);
            const ips = [...holding.values()];
            expect(new Set(ips).size).toBe(ips.length);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

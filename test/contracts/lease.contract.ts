/**
 * What every `Lease` answers, registered against a factory so the in-memory lease of the pass
 * tests and benches and the DynamoDB adapter cannot drift apart: one holder at a time until its
 * lease runs out, renewal and release by the holder only, and withLease around any of them.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../shared/lease/errors.js';
import { type Lease, withLease } from '../../shared/lease/lease.js';

// A fixed clock far from the wall clock, which the lease's TTL is written from.
export const T0 = Date.UTC(2099, 0, 1);
export const TTL = 120_000;

/**
 * One lease table on the clock `now`: `contender()` is a client of it (its own instance where the
 * implementation has instances per process, the one table otherwise).
 */
export interface LeasePlace {
  contender(): Lease;
}

/** Registers the contract's cases for the lease tables `make` builds, a fresh one per case. */
export function leaseContract(
  name: string,
  make: (now: () => number) => Promise<LeasePlace>,
): void {
  describe(`${name} keeps the Lease contract`, () => {
    let now = T0;
    let place: LeasePlace;
    const contenders = (...holders: string[]) => holders.map(() => place.contender());
    beforeEach(async () => {
      now = T0;
      place = await make(() => now);
    });

    it('grants a free lease and refuses it to a second holder until it expires', async () => {
      now = T0;
      const [a, b] = contenders('a', 'b');
      expect(await a?.acquireLease('scale', 'a', TTL)).toEqual({
        acquired: true,
        lease: { name: 'scale', holder: 'a', expiresAtMs: T0 + TTL },
      });
      expect(await b?.acquireLease('scale', 'b', TTL)).toEqual({
        acquired: false,
        holder: 'a',
        expiresAtMs: T0 + TTL,
      });
    });

    it('lets another holder take over once the lease expired, and the old holder lose it', async () => {
      now = T0;
      const [a, b] = contenders('a', 'b');
      await a?.acquireLease('scale', 'a', TTL);
      now = T0 + TTL - 1;
      expect((await b?.acquireLease('scale', 'b', TTL))?.acquired).toBe(false);
      now = T0 + TTL;
      expect((await b?.acquireLease('scale', 'b', TTL))?.acquired).toBe(true);
      await expect(a?.renewLease('scale', 'a', TTL)).rejects.toThrow(LeaseLostError);
      expect(await a?.releaseLease('scale', 'a')).toBe(false);
      expect((await a?.acquireLease('scale', 'a', TTL))?.acquired).toBe(false);
    });

    it('lets exactly one of two simultaneous contenders win', async () => {
      for (let round = 0; round < 10; round++) {
        place = await make(() => now);
        const [a, b] = contenders('a', 'b');
        const results = await Promise.all([
          a?.acquireLease('scale', 'a', TTL),
          b?.acquireLease('scale', 'b', TTL),
        ]);
        expect(results.filter((r) => r?.acquired)).toHaveLength(1);
      }
    });

    it('re-acquires a lease its holder already has (a retry after a crash)', async () => {
      now = T0;
      const [a] = contenders('a');
      await a?.acquireLease('scale', 'a', TTL);
      now = T0 + 1000;
      expect(await a?.acquireLease('scale', 'a', TTL)).toMatchObject({
        acquired: true,
        lease: { expiresAtMs: T0 + 1000 + TTL },
      });
    });

    it('renews, extending the expiry', async () => {
      now = T0;
      const [a, b] = contenders('a', 'b');
      await a?.acquireLease('scale', 'a', TTL);
      now = T0 + TTL - 1000;
      expect(await a?.renewLease('scale', 'a', TTL)).toEqual({
        name: 'scale',
        holder: 'a',
        expiresAtMs: T0 + 2 * TTL - 1000,
      });
      now = T0 + TTL + 1000;
      expect((await b?.acquireLease('scale', 'b', TTL))?.acquired).toBe(false);
    });

    it('refuses to renew a lease nobody holds', async () => {
      const [a] = contenders('a');
      await expect(a?.renewLease('scale', 'a', TTL)).rejects.toThrow(LeaseLostError);
    });

    it('releases only the holder’s lease, freeing it at once', async () => {
      now = T0;
      const [a, b] = contenders('a', 'b');
      await a?.acquireLease('scale', 'a', TTL);
      expect(await b?.releaseLease('scale', 'b')).toBe(false);
      expect(await a?.releaseLease('scale', 'a')).toBe(true);
      expect((await b?.acquireLease('scale', 'b', TTL))?.acquired).toBe(true);
    });

    it('keeps leases of different names apart', async () => {
      now = T0;
      const [a, b] = contenders('a', 'b');
      await a?.acquireLease('scale', 'a', TTL);
      expect((await b?.acquireLease('repair', 'b', TTL))?.acquired).toBe(true);
    });

    describe('withLease', () => {
      it('runs the work under the lease and releases it, also when the work throws', async () => {
        const [a, b] = contenders('a', 'b') as [Lease, Lease];
        const seen: string[] = [];
        const run = await withLease(
          a,
          { name: 'scale', holder: 'a', ttlMs: TTL },
          async (renew) => {
            const other = await b.acquireLease('scale', 'b', TTL);
            seen.push(other.acquired ? 'b got it' : `held by ${other.holder}`);
            await renew();
            return 42;
          },
        );
        expect(run).toEqual({ ran: true, value: 42 });
        expect(seen).toEqual(['held by a']);
        await expect(
          withLease(a, { name: 'scale', holder: 'a', ttlMs: TTL }, async () => {
            throw new Error('pass failed');
          }),
        ).rejects.toThrow('pass failed');
        expect((await b.acquireLease('scale', 'b', TTL)).acquired).toBe(true);
        const skipped = await withLease(
          a,
          { name: 'scale', holder: 'a', ttlMs: TTL },
          async () => 1,
        );
        expect(skipped).toEqual({ ran: false, holder: 'b', expiresAtMs: T0 + TTL });
      });

      it('keeps the work’s result or error when the release fails', async () => {
        const inner = place.contender();
        const failingRelease: Lease = {
          acquireLease: (n, h, t) => inner.acquireLease(n, h, t),
          renewLease: (n, h, t) => inner.renewLease(n, h, t),
          releaseLease: () => Promise.reject(new Error('throttled')),
        };
        const request = { name: 'repair', holder: 'a', ttlMs: TTL };
        expect(await withLease(failingRelease, request, async () => 7)).toEqual({
          ran: true,
          value: 7,
        });
        await expect(
          withLease(failingRelease, request, async () => {
            throw new Error('pass failed');
          }),
        ).rejects.toThrow('pass failed');
      });
    });
  });
}

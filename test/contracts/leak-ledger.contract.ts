/**
 * What every `LeakLedger` answers, registered against a factory so the in-memory ledger of the
 * pass tests and the DynamoDB adapter cannot drift apart: counters put whole, removed by key,
 * and listed back as written.
 */
import { describe, expect, it } from 'vitest';
import type { LeakCounter, LeakLedger } from '../../shared/repair/ledger.js';

const counter = (key: string, passes = 1): LeakCounter => ({
  key,
  holder: `h-${key}`,
  passes,
  firstSeenAt: 1_000,
});

/** Registers the contract's cases for the ledgers `make` builds, empty, for each case. */
export function leakLedgerContract(name: string, make: () => Promise<LeakLedger>): void {
  describe(`${name} keeps the LeakLedger contract`, () => {
    it('lists the counters put, rewritten whole, without those removed', async () => {
      const ledger = await make();
      expect(await ledger.list()).toEqual(new Map());
      await ledger.apply({ put: [counter('value#a'), counter('pod#b')], remove: [] });
      await ledger.apply({ put: [counter('value#a', 2)], remove: ['pod#b', 'owner#never'] });
      expect(await ledger.list()).toEqual(new Map([['value#a', counter('value#a', 2)]]));
    });
  });
}

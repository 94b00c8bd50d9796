/**
 * What every `CapacityLedger` answers, registered against a factory so the in-process ledger and
 * the DynamoDB adapter cannot drift apart: each pass's part replaced alone, clusters kept apart,
 * and a cluster nothing recorded read as an empty record.
 */
import { describe, expect, it } from 'vitest';
import type { EniFigures, HostPortFigures, ScaleFigures } from '../../shared/capacity/figures.js';
import type { CapacityLedger } from '../../shared/capacity/store.js';

const scale = (atMs: number, freeSlots: number): ScaleFigures => ({
  source: 'scale',
  atMs,
  freeSlots,
  readyByFleet: { arena: 3, '': 1 },
  pendingGameServers: 0,
  slotsComing: 8,
  buffer: 10,
  nodes: 4,
});
const eni: EniFigures = { source: 'eni', atMs: 2_000, freeAddresses: 40, pools: 4 };
const hostPorts: HostPortFigures = {
  source: 'hostPorts',
  atMs: 3_000,
  ranges: [{ range: 'game', size: 1000, used: 12, largestFreeBlock: 988 }],
};

/** Registers the contract's cases for the ledgers `make` builds, empty, for each case. */
export function capacityLedgerContract(name: string, make: () => Promise<CapacityLedger>): void {
  describe(`${name} keeps the CapacityLedger contract`, () => {
    it('replaces one pass’s part and keeps the others', async () => {
      const ledger = await make();
      await ledger.record('a', scale(1_000, 5));
      await ledger.record('a', eni);
      await ledger.record('a', hostPorts);
      await ledger.record('a', scale(4_000, 7));
      expect((await ledger.read(['a'])).get('a')).toEqual({
        scale: scale(4_000, 7),
        eni,
        hostPorts,
      });
    });

    it('keeps clusters apart and reads an unrecorded one as empty', async () => {
      const ledger = await make();
      await ledger.record('a', eni);
      await ledger.record('b', scale(1_000, 2));
      const read = await ledger.read(['b', 'never']);
      expect([...read.keys()]).toEqual(['b', 'never']);
      expect(read.get('b')).toEqual({ scale: scale(1_000, 2) });
      expect(read.get('never')).toEqual({});
    });

    it('reads more clusters than one request takes', async () => {
      const ledger = await make();
      const names = Array.from({ length: 130 }, (_, i) => `c${i}`);
      for (const name of names.filter((_, i) => i % 13 === 0)) await ledger.record(name, eni);
      const read = await ledger.read(names);
      expect(read.size).toBe(130);
      expect([...read].filter(([, record]) => record.eni !== undefined).map(([n]) => n)).toEqual(
        names.filter((_, i) => i % 13 === 0),
      );
    });
  });
}

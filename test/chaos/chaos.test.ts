import { describe, expect, it } from 'vitest';
import { runChaos } from '../../bench/support/chaos.js';
import { freshTable } from '../support/dynamo.js';

describe('allocation under chaos', () => {
  it('never lets two live objects hold one value, frees every leak within the grace, and ends with counts equal to records', async () => {
    const { client, tableName } = await freshTable();
    const report = await runChaos(client, tableName, {
      seed: 7,
      actors: 16,
      operations: 300,
      throttle: 0.03,
      ambiguous: 0.03,
      retried: 0.03,
      crash: 0.02,
      refuse: 0.1,
      delay: 0.2,
      finalizer: 0.3,
    });
    expect(report.violations).toEqual([]);
    expect(report.unexpected).toEqual([]);
    expect(report.mismatches).toEqual([]);
    expect(report.countsEqualRecords).toBe(true);
    expect(report.overdueLeaks).toEqual([]);
    expect(report.maxPassesToFree).toBeLessThanOrEqual(report.leakGracePasses);
    // The run really shook: faults of every kind, writes refused and stored late, leaks to free.
    for (const kind of ['throttle', 'ambiguous', 'retried', 'crash'])
      expect(report.faults[kind], kind).toBeGreaterThan(0);
    expect(report.operations['refused by the apiserver']).toBeGreaterThan(0);
    expect(report.operations['stored late by the apiserver']).toBeGreaterThan(0);
    expect(report.operations['ENI late DEL']).toBeGreaterThan(0);
    expect(report.operations['pod copied outside berth, then deleted']).toBeGreaterThan(0);
    // Objects created with generateName: copied under another request, and seen again.
    for (const kind of ['Service', 'Pod']) {
      expect(report.operations[`${kind} CREATE (a copy of a generateName one)`]).toBeGreaterThan(0);
      expect(report.operations[`${kind} CREATE seen again (same request uid)`]).toBeGreaterThan(0);
      expect(report.operations[`${kind} CREATE re-invoked after another webhook`]).toBeGreaterThan(
        0,
      );
    }
    expect(report.leaks).toBeGreaterThan(0);
    expect(report.invariantChecks).toBeGreaterThan(5);
    // Real time on DynamoDB Local: minutes on a slow 2-core machine.
  }, 900_000);
});

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FuzzOutcome,
  type FuzzTarget,
  fuzzCase,
  generateNameRound,
  heldAllocationIds,
  sendCase,
  startFuzzTarget,
} from '../../bench/support/fuzz-reviews.js';
import { freshTable } from '../support/dynamo.js';

/** A fixed slice of the fuzz benchmark's 10,000 cases: same generators, fewer runs. */
const RUNS = 300;
const SEED = 20261124;

describe('admission under fuzzed input', () => {
  let target: FuzzTarget;

  beforeAll(async () => {
    const { client, tableName } = await freshTable();
    target = await startFuzzTarget(client, tableName);
  });
  afterAll(async () => {
    await target.server.close();
  });

  it('answers every input with a review or a 4xx, stays healthy, and holds nothing for a denied request', async () => {
    const outcomes: FuzzOutcome[] = [];
    await fc.assert(
      fc.asyncProperty(fuzzCase, async (fuzz) => {
        const outcome = await sendCase(target.server.url, fuzz);
        outcomes.push(outcome);
        expect(outcome.violation).toBeUndefined();
      }),
      { numRuns: RUNS, seed: SEED },
    );
    expect(target.internalFaults).toEqual([]);
    expect((await fetch(`${target.server.url}/healthz`)).status).toBe(200);

    const allowedIds = new Set(outcomes.flatMap((o) => o.ids));
    const held = await heldAllocationIds(target.runtime);
    expect(held.filter((id) => !allowedIds.has(id))).toEqual([]);
    // The slice exercises both answers, so the checks above are not vacuous.
    expect(outcomes.some((o) => o.verdict === 'allowed')).toBe(true);
    expect(outcomes.some((o) => o.verdict.startsWith('denied'))).toBe(true);
    expect(held.length).toBeGreaterThan(0);
  });

  it('admits a copy of a stored generateName object as a new object, and the same request seen again as itself', async () => {
    for (let round = 0; round < 5; round++) {
      const { twoOwners, failures } = await generateNameRound(target.server.url, round);
      expect(failures).toEqual([]);
      expect(twoOwners).toEqual([]);
    }
    expect(target.internalFaults).toEqual([]);
  });
});

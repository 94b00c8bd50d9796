import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { createHttpApi } from '../../shared/http/api.js';
import { type RunningServer, startServer } from '../../shared/local/server.js';
import { freshTable } from '../support/dynamo.js';
import { type FuzzOutcome, fuzzCase, sendCase } from '../support/fuzz-reviews.js';

/** A fixed slice of the fuzz benchmark's 10,000 cases: same generators, fewer runs. */
const RUNS = 300;
const SEED = 20261124;

describe('admission under fuzzed input', () => {
  let server: RunningServer;
  let runtime: ReturnType<typeof createRuntime>;
  const internalFaults: unknown[] = [];

  beforeAll(async () => {
    const { client, tableName } = await freshTable();
    runtime = createRuntime({
      config: parseConfig({
        cluster: 'fuzz',
        hostPortRanges: { default: '7000-7100', other: '8100-8110' },
      }),
      dynamo: client,
      tableName,
    });
    server = await startServer({
      host: '127.0.0.1',
      port: 0,
      handle: createHttpApi({
        admission: runtime.admission,
        healthy: () => runtime.healthy(),
        status: () => runtime.status(),
      }),
      onError: (error) => internalFaults.push(error),
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers every input with a review or a 4xx, stays healthy, and holds nothing for a denied request', async () => {
    const outcomes: FuzzOutcome[] = [];
    await fc.assert(
      fc.asyncProperty(fuzzCase, async (fuzz) => {
        const outcome = await sendCase(server.url, fuzz);
        outcomes.push(outcome);
        expect(outcome.violation).toBeUndefined();
      }),
      { numRuns: RUNS, seed: SEED },
    );
    expect(internalFaults).toEqual([]);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    const allowedIds = new Set(outcomes.flatMap((o) => o.ids));
    const held: string[] = [];
    for await (const owner of runtime.allocationStore.listOwners()) held.push(owner.id);
    for await (const record of runtime.hostPortStore.listRecords()) held.push(record.id);
    expect(held.filter((id) => !allowedIds.has(id))).toEqual([]);
    // The slice exercises both answers, so the checks above are not vacuous.
    expect(outcomes.some((o) => o.verdict === 'allowed')).toBe(true);
    expect(outcomes.some((o) => o.verdict.startsWith('denied'))).toBe(true);
    expect(held.length).toBeGreaterThan(0);
  });
});

import { describe, expect, it } from 'vitest';
import { capacityReader } from '../../shared/app/capacity.js';
import { parseConfig } from '../../shared/config/schema.js';
import { withCapacity } from '../../shared/http/capacity-route.js';
import { InProcessCapacityLedger } from '../../sim/fakes/capacity-ledger.js';

const NOW = Date.parse('2026-12-04T12:00:00Z');

async function api() {
  const ledger = new InProcessCapacityLedger();
  await ledger.record('games-a', { source: 'eni', atMs: NOW - 5_000, freeAddresses: 9, pools: 2 });
  const read = capacityReader(
    [parseConfig({ cluster: 'games-a' }), parseConfig({ cluster: 'games-b' })],
    ledger,
    () => NOW,
  );
  const handle = withCapacity(read, async () => ({ statusCode: 418, headers: {}, body: 'next' }));
  return { handle, ledger };
}

const get = (query?: Record<string, string>, headers: Record<string, string> = {}) => ({
  method: 'GET',
  path: '/v1/capacity',
  body: undefined,
  headers,
  ...(query ? { query } : {}),
});

describe('GET /v1/capacity', () => {
  it('answers every cluster served in one table read, and one cluster when asked', async () => {
    const { handle, ledger } = await api();
    const all = await handle(get());
    expect(all.statusCode).toBe(200);
    const body = JSON.parse(all.body);
    expect(body.clusters.map((c: { cluster: string }) => c.cluster)).toEqual([
      'games-a',
      'games-b',
    ]);
    expect(body.clusters[0].eni).toEqual({ freeAddresses: 9, pools: 2, ageSeconds: 5 });
    // Nothing recorded for games-b: every pass it runs is missing, so it is stale.
    expect(body.clusters[1]).toMatchObject({ stale: true });
    expect(body.clusters[1].staleBecause).toContain('scale: never recorded');
    expect(ledger.reads).toBe(1);
    const one = JSON.parse((await handle(get({ cluster: 'games-b' }))).body);
    expect(one.clusters.map((c: { cluster: string }) => c.cluster)).toEqual(['games-b']);
  });

  it('answers 404 naming the clusters for one it does not serve, 405 for a write, 403 for a page', async () => {
    const { handle } = await api();
    const unknown = await handle(get({ cluster: 'games-z' }));
    expect(unknown.statusCode).toBe(404);
    expect(JSON.parse(unknown.body).error).toMatch(
      /"games-z" is not served here.*games-a, games-b/,
    );
    expect(
      (await handle({ ...get(), method: 'POST', headers: { 'content-type': 'application/json' } }))
        .statusCode,
    ).toBe(405);
    expect((await handle(get({}, { origin: 'https://example.com' }))).statusCode).toBe(403);
    expect((await handle({ ...get(), path: '/v1/status' })).statusCode).toBe(418);
  });
});

import { describe, expect, it } from 'vitest';
import { capacityReader } from '../../shared/app/capacity.js';
import { capacityApi } from '../../shared/app/lambda-capacity.js';
import { parseConfig } from '../../shared/config/schema.js';
import type { HttpRequest } from '../../shared/http/exchange.js';
import { InProcessCapacityLedger } from '../../sim/fakes/capacity-ledger.js';

const NOW = Date.parse('2026-12-04T12:00:00Z');
const GRANTED = 'arn:aws:iam::111122223333:role/Matchmaker';

/** The API for the one configured cluster `games`, over a ledger that also holds `elsewhere`. */
async function api() {
  const ledger = new InProcessCapacityLedger();
  await ledger.record('games', { source: 'eni', atMs: NOW - 5_000, freeAddresses: 9, pools: 2 });
  // Another deployment's cluster in the same table: never this stack's to answer.
  await ledger.record('elsewhere', { source: 'eni', atMs: NOW, freeAddresses: 40, pools: 4 });
  const read = capacityReader([parseConfig({ cluster: 'games' })], ledger, () => NOW);
  return { handle: capacityApi(read, [GRANTED]), ledger };
}

const get = (caller?: string, query?: Record<string, string>): HttpRequest => ({
  method: 'GET',
  path: '/v1/capacity',
  body: undefined,
  headers: {},
  ...(caller ? { caller } : {}),
  ...(query ? { query } : {}),
});

describe('capacityApi', () => {
  it('answers a caller of a granted role with the view', async () => {
    const { handle } = await api();
    const answer = await handle(get('arn:aws:sts::111122223333:assumed-role/Matchmaker/s1'));
    expect(answer.statusCode).toBe(200);
    const body = JSON.parse(answer.body);
    expect(body.at).toBe('2026-12-04T12:00:00.000Z');
    expect(body.clusters).toEqual([
      expect.objectContaining({
        cluster: 'games',
        eni: { freeAddresses: 9, pools: 2, ageSeconds: 5 },
      }),
    ]);
  });

  it.each([
    ['another role', 'arn:aws:sts::111122223333:assumed-role/Other/s1'],
    [
      'the granted role name in another account',
      'arn:aws:sts::999999999999:assumed-role/Matchmaker/s1',
    ],
    ['no caller', undefined],
  ])('refuses %s with 403, reading nothing', async (_, caller) => {
    const { handle, ledger } = await api();
    const answer = await handle(get(caller));
    expect(answer.statusCode).toBe(403);
    expect(JSON.parse(answer.body).error).toBe(
      `${caller ?? 'an unsigned caller'} is not a role this stack grants the capacity API`,
    );
    expect(ledger.reads).toBe(0);
  });

  it("lists only the configured clusters, though the ledger holds another's record", async () => {
    const { handle } = await api();
    const caller = 'arn:aws:sts::111122223333:assumed-role/Matchmaker/s1';
    const all = JSON.parse((await handle(get(caller))).body);
    expect(all.clusters.map((c: { cluster: string }) => c.cluster)).toEqual(['games']);
    const other = await handle(get(caller, { cluster: 'elsewhere' }));
    expect(other.statusCode).toBe(404);
    expect(other.body).not.toContain('"freeAddresses":40');
  });

  it('answers 404 for any other path of a granted caller', async () => {
    const { handle } = await api();
    const answer = await handle({
      ...get('arn:aws:sts::111122223333:assumed-role/Matchmaker/s1'),
      path: '/v1/nodes/n1/ips',
    });
    expect(answer.statusCode).toBe(404);
  });
});

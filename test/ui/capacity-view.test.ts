/**
 * The web view's capacity table in Debian's Chromium, on a local server of two clusters over
 * DynamoDB Local: every cluster the server serves, with the figures their passes recorded.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type LocalServer, startLocalServer } from '../../shared/app/local-server.js';
import { parseConfig } from '../../shared/config/schema.js';
import { dynamoClient } from '../../shared/store/client.js';
import { DynamoCapacityLedger } from '../../shared/store/dynamo-capacity-ledger.js';
import { launchChromium, pageProblems } from './chromium.js';

let server: LocalServer;
let browser: Browser;

beforeAll(async () => {
  const table = `ui-capacity-${randomUUID()}`;
  const configs = ['games-a', 'games-b'].map((cluster) => parseConfig({ cluster }));
  server = await startLocalServer(
    {
      config: configs[0] as (typeof configs)[number],
      clusters: configs,
      configuredClusters: ['games-a', 'games-b'],
      http: true,
      host: '127.0.0.1',
      port: 0,
      passes: false,
      dataDir: await mkdtemp(join(tmpdir(), 'berth-ui-capacity-')),
      dynamodbEndpoint: inject('dynamodbEndpoint'),
      table,
    },
    { info() {}, warn() {}, error() {} },
  );
  const ledger = new DynamoCapacityLedger({
    client: dynamoClient({ endpoint: inject('dynamodbEndpoint') }),
    tableName: table,
  });
  await ledger.record('games-b', {
    source: 'scale',
    atMs: Date.now(),
    freeSlots: 13,
    readyByFleet: { arena: 7 },
    pendingGameServers: 0,
    slotsComing: 4,
    buffer: 10,
    nodes: 5,
  });
  await ledger.record('games-b', { source: 'eni', atMs: Date.now(), freeAddresses: 21, pools: 5 });
  browser = await launchChromium();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the web view’s capacity across clusters', { timeout: 60_000 }, () => {
  it('lists every served cluster, its recorded figures, and which are stale', async () => {
    const page = await browser.newPage();
    const problems = pageProblems(page);
    await page.goto(`${server.url}/clusters/games-a/ui`);
    const table = page.getByRole('table', { name: /^Capacity across clusters/ });
    await expect.poll(() => table.locator('tbody tr').count(), { timeout: 10_000 }).toBe(2);
    const a = table.locator('tr[data-cluster="games-a"]');
    const b = table.locator('tr[data-cluster="games-b"]');
    expect(await a.getAttribute('data-stale')).toBe('true');
    expect(await a.textContent()).toMatch(/stale: .*scale: never recorded/);
    const cells = await b.locator('td').allTextContents();
    expect(cells[0]).toBe('games-b');
    expect(cells[1]).toMatch(/^7 \(arena 7\) \(\d+ s\)$/);
    expect(cells[2]).toBe('13');
    expect(cells[3]).toBe('10, nodes coming');
    expect(cells[6]).toMatch(/^21 \(\d+ s\)$/);
    // Every pass of games-b but the two recorded is missing: it is stale too, and says why.
    expect(cells[7]).toMatch(/^stale: .*never recorded/);
    expect(problems).toEqual([]);
    await page.close();
  });
});

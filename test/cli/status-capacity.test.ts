/** `berth status --clusters`: every cluster's capacity as its passes recorded it, read from the table. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { dynamoClient } from '../../shared/store/client.js';
import { DynamoCapacityLedger } from '../../shared/store/dynamo-capacity-ledger.js';
import { ensureTable } from '../../shared/store/ensure-table.js';
import { captureOutput } from '../support/capture.js';

const table = `status-capacity-${Date.now()}`;
let configFile: string;

beforeAll(async () => {
  const client = dynamoClient({ endpoint: inject('dynamodbEndpoint') });
  await ensureTable(client, table);
  const ledger = new DynamoCapacityLedger({ client, tableName: table });
  const now = Date.now();
  await ledger.record('games-a', {
    source: 'scale',
    atMs: now,
    freeSlots: 12,
    readyByFleet: { arena: 5, '': 2 },
    pendingGameServers: 1,
    slotsComing: 0,
    buffer: 10,
    nodes: 4,
  });
  await ledger.record('games-a', {
    source: 'hostPorts',
    atMs: now,
    ranges: [{ range: 'default', size: 1001, used: 30, largestFreeBlock: 900 }],
  });
  // A cluster of another config in the same table is nobody's business here.
  await ledger.record('elsewhere', { source: 'eni', atMs: now, freeAddresses: 1, pools: 1 });
  configFile = join(await mkdtemp(join(tmpdir(), 'berth-capacity-')), 'berth.json');
  await writeFile(
    configFile,
    JSON.stringify({ clusters: { 'games-a': {}, 'games-b': { eni: { intervalSeconds: 0 } } } }),
  );
});

afterEach(() => {
  vi.restoreAllMocks();
});

const args = () => [
  'status',
  '--clusters',
  '--config',
  configFile,
  '--dynamodb-endpoint',
  inject('dynamodbEndpoint'),
  '--table',
  table,
];

describe('berth status --clusters', () => {
  it('prints a row a cluster, the fleets and host port ranges, and why a cluster is stale', async () => {
    const io = captureOutput();
    expect(await main(args())).toBe(0);
    const lines = io.out().split('\n');
    expect(lines[0]).toMatch(/^capacity at \d{4}-\d\d-\d\dT/);
    expect(lines[1]).toMatch(/^CLUSTER +READY +FREE SLOTS +PENDING +BUFFER +NODES COMING/);
    expect(lines[2]).toMatch(/^games-a +7 \(\d+ s\) +12 +1 +10 +no +- +- +yes$/);
    expect(lines[3]).toMatch(/^games-b +- +- +- +- +- +- +- +yes$/);
    expect(io.out()).toMatch(/games-a +arena +5\n/);
    expect(io.out()).toMatch(/games-a +\(no fleet\) +2\n/);
    expect(io.out()).toMatch(/games-a +default +1001 +3974 +900 +\d+ s\n/);
    expect(io.out()).toContain('games-a is stale: eni: never recorded');
    expect(io.out()).not.toContain('elsewhere');
    // games-b runs no ENI pass: nothing of it is awaited.
    expect(io.out()).not.toContain('games-b is stale: eni');
    expect(io.out()).toContain('games-b is stale: scale: never recorded');
  });

  it('prints the GET /v1/capacity document with --json, and one cluster with --cluster', async () => {
    let io = captureOutput();
    expect(await main([...args(), '--json'])).toBe(0);
    const view = JSON.parse(io.out());
    expect(view.clusters.map((c: { cluster: string }) => c.cluster)).toEqual([
      'games-a',
      'games-b',
    ]);
    expect(view.clusters[0].hostPorts.ranges[0]).toEqual({
      range: 'default',
      size: 1001,
      used: 30,
      largestFreeBlock: 900,
      free: 3974,
    });
    vi.restoreAllMocks();
    io = captureOutput();
    expect(await main([...args(), '--json', '--cluster', 'games-b'])).toBe(0);
    expect(JSON.parse(io.out()).clusters.map((c: { cluster: string }) => c.cluster)).toEqual([
      'games-b',
    ]);
  });
});

/** `berth status` of a config serving several clusters whose Service CIDRs overlap. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { captureOutput } from '../support/capture.js';
import { freshTable } from '../support/dynamo.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('berth status across clusters', () => {
  it('reports clusters whose Service CIDRs overlap, and none when they do not', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-overlap-'));
    const overlapping = join(dir, 'overlapping.json');
    const apart = join(dir, 'apart.json');
    await writeFile(overlapping, JSON.stringify({ clusters: { 'games-a': {}, 'games-b': {} } }));
    await writeFile(
      apart,
      JSON.stringify({
        clusters: { 'games-a': {}, 'games-b': { serviceCIDRs: ['10.101.0.0/16'] } },
      }),
    );
    const { tableName } = await freshTable();
    const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', tableName];
    let io = captureOutput();
    expect(await main(['status', '--config', overlapping, ...store])).toBe(0);
    expect(io.out()).toContain(
      'finding ServiceCIDROverlap: clusters games-a and games-b have overlapping Service CIDRs (10.100.0.0/16 and 10.100.0.0/16)',
    );
    vi.restoreAllMocks();
    io = captureOutput();
    expect(await main(['status', '--config', apart, ...store])).toBe(0);
    expect(io.out()).not.toContain('ServiceCIDROverlap');
  });
});

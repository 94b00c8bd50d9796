import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { captureOutput } from '../support/capture.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('berth CLI', () => {
  it('prints every config problem on its own line and exits 2', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-cli-'));
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({ clustr: 'x', nodePortRange: '1-99999', eni: { minIdle: 5, maxIdle: 1 } }),
    );
    const io = captureOutput();
    expect(await main(['status', '--config', file])).toBe(2);
    expect(io.err().trim().split('\n')).toEqual([
      'nodePortRange: the port range cannot be greater than 65535: 1-99999 (write it as "30000-32767")',
      'eni.maxIdle: maxIdle must be at least minIdle',
      'clustr: unknown key; remove it or check its spelling',
    ]);
  });

  it('names a config file that is not JSON', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-cli-'));
    const file = join(dir, 'config.json');
    await writeFile(file, '{ cluster: ');
    const io = captureOutput();
    expect(await main(['status', '--config', file])).toBe(2);
    expect(io.err()).toMatch(new RegExp(`^${file}: not valid JSON`));
  });

  it('rejects unknown commands and flags with the usage, exit 2', async () => {
    const io = captureOutput();
    expect(await main(['frobnicate'])).toBe(2);
    expect(io.err()).toMatch(/^berth: unknown command: frobnicate/);
    expect(await main(['status', '--bogus'])).toBe(2);
    expect(io.err()).toMatch(/Unknown option '--bogus'/);
  });

  it('prints range usage as JSON from the given DynamoDB', async () => {
    const io = captureOutput();
    const table = `cli-${Date.now()}`;
    expect(
      await main([
        'status',
        '--json',
        '--dynamodb-endpoint',
        inject('dynamodbEndpoint'),
        '--table',
        table,
      ]),
    ).toBe(0);
    const report = JSON.parse(io.out());
    expect(report.ranges.map((r: { kind: string }) => r.kind)).toEqual([
      'clusterIP',
      'nodePort',
      'hostPort',
    ]);
  });
});

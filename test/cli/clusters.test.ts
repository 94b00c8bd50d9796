/** The CLI with a config that has a section per cluster. */
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

async function twoClusters(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-clusters-'));
  const file = join(dir, 'berth.json');
  await writeFile(
    file,
    JSON.stringify({
      hostPortRanges: { default: '7000-7999' },
      clusters: { 'games-a': {}, 'games-b': { serviceCIDRs: ['10.101.0.0/16'] } },
    }),
  );
  return file;
}

describe('berth with a section per cluster', () => {
  it('shows every cluster in status, and one with --cluster', async () => {
    const config = await twoClusters();
    const { tableName } = await freshTable();
    const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', tableName];
    let io = captureOutput();
    expect(await main(['status', '--json', '--config', config, ...store])).toBe(0);
    const reports = JSON.parse(io.out()) as { cluster: string; ranges: { name: string }[] }[];
    expect(reports.map((r) => r.cluster)).toEqual(['games-a', 'games-b']);
    expect(reports[1]?.ranges.map((r) => r.name)).toContain('10.101.0.0/16');
    vi.restoreAllMocks();
    io = captureOutput();
    expect(
      await main(['status', '--json', '--cluster', 'games-b', '--config', config, ...store]),
    ).toBe(0);
    expect(JSON.parse(io.out()).cluster).toBe('games-b');
  });

  it('asks which cluster a one-cluster command is for, and refuses a name not in the config', async () => {
    const config = await twoClusters();
    let io = captureOutput();
    expect(await main(['manifests', '--local', '--config', config])).toBe(2);
    expect(io.err()).toMatch(
      /manifests: the config has clusters games-a, games-b; pick one with --cluster NAME/,
    );
    vi.restoreAllMocks();
    io = captureOutput();
    expect(await main(['manifests', '--local', '--cluster', 'games-c', '--config', config])).toBe(
      2,
    );
    expect(io.err()).toMatch(
      /--cluster: "games-c" is not in the config \(its clusters: games-a, games-b\)/,
    );
  });

  it("prints one cluster's manifests with --cluster", async () => {
    const config = await twoClusters();
    const dataDir = await mkdtemp(join(tmpdir(), 'berth-data-'));
    const io = captureOutput();
    expect(
      await main([
        'manifests',
        '--local',
        '--json',
        '--cluster',
        'games-b',
        '--config',
        config,
        '--data-dir',
        dataDir,
      ]),
    ).toBe(0);
    expect(io.out()).toContain('games-b');
    expect(io.out()).not.toContain('games-a');
  });
});

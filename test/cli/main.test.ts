import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
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

describe('berth manifests', () => {
  it('prints the webhook configuration for the local server, trusting its CA', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-cli-'));
    const io = captureOutput();
    expect(await main(['manifests', '--json', '--data-dir', dir, '--port', '9443'])).toBe(0);
    interface Manifest {
      kind: string;
      webhooks?: Array<{ clientConfig: { url: string; caBundle: string } }>;
    }
    const objects = (JSON.parse(io.out()) as { items: Manifest[] }).items;
    const webhook = objects.find((o) => o.kind === 'MutatingWebhookConfiguration');
    expect(webhook?.webhooks?.[0]?.clientConfig.url).toBe('https://127.0.0.1:9443/admission');
    const ca = Buffer.from(
      webhook?.webhooks?.[0]?.clientConfig.caBundle ?? '',
      'base64',
    ).toString();
    expect(ca).toBe(await readFile(join(dir, 'tls', 'ca.crt'), 'utf8'));
    expect(objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining(['ClusterRole', 'ClusterRoleBinding']),
    );
  });
});

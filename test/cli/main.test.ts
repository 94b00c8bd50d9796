import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { dynamoClient } from '../../shared/store/client.js';
import { ensureTable } from '../../shared/store/ensure-table.js';
import { review } from '../../sim/reviews.js';
import { captureOutput } from '../support/capture.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
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
      'eni.maxIdle: maxIdle must be at least minIdle (maxIdle 1, minIdle 5)',
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
    expect(io.err()).toMatch(/unknown command 'frobnicate'/);
    expect(await main(['statsu'])).toBe(2);
    expect(io.err()).toMatch(/Did you mean status\?/);
    expect(await main(['status', '--bogus'])).toBe(2);
    expect(io.err()).toMatch(/unknown option '--bogus'/);
    expect(await main(['status', '--dynamodb-endpoint', 'notaurl'])).toBe(2);
    expect(io.err()).toMatch(/--dynamodb-endpoint: "notaurl" is not an http\(s\) URL/);
  });

  it('answers --help for every command with its own flags, exit 0', async () => {
    const flags: Record<string, string[]> = {
      serve: ['--passes', '--advertise-address', '--http', '--port'],
      status: ['--json'],
      repair: ['--once', '--verbose'],
      scale: ['--once', '--dry-run'],
      eni: ['--once'],
      manifests: ['--stack', '--url', '--local', '--ca-file', '--http'],
      sim: ['--hours', '--speed', '--seed', '--nodes', '--sessions-per-minute', '--scenario'],
    };
    for (const [command, own] of Object.entries(flags)) {
      const io = captureOutput();
      expect(await main([command, '--help'])).toBe(0);
      for (const flag of own) expect(io.out()).toContain(flag);
      expect(io.out()).toContain('--kubeconfig');
    }
    const io = captureOutput();
    expect(await main(['--help'])).toBe(0);
    for (const command of Object.keys(flags)) expect(io.out()).toContain(command);
    expect(await main(['help', 'repair'])).toBe(0);
    // Help shown for a mistake is no answer: a usage error.
    expect(await main(['help', 'nosuch'])).toBe(2);
  });

  it('names what the environment lacks and how to fix it, exit 3', async () => {
    vi.stubEnv('AWS_REGION', undefined);
    vi.stubEnv('AWS_DEFAULT_REGION', undefined);
    vi.stubEnv('AWS_PROFILE', 'berth-no-such-profile');
    const io = captureOutput();
    expect(await main(['manifests', '--stack', 'berth-games'])).toBe(3);
    expect(io.err()).toMatch(/Region is missing: set AWS_REGION, pass --region/);
    expect(await main(['status', '--holder', '10.0.0.1', '--kubeconfig', '/nope'])).toBe(3);
    expect(io.err()).toMatch(
      /kubeconfig \/nope does not exist: pass --kubeconfig PATH, or set KUBECONFIG/,
    );
  });

  it('refuses sim flags that are wrong, naming the flag, and never a table in an AWS account', async () => {
    for (const [args, message] of [
      [['sim', '--speed', 'fast'], /--speed: "fast" is not a number above 0/],
      [['sim', '--nodes', '2.5'], /--nodes: "2.5" is not a whole number above 0/],
      [['sim', '--scenario', 'chaos'], /--scenario.*choices/],
      [['sim', '--table', 'prod'], /--table: berth sim makes a table of its own/],
    ] as const) {
      const io = captureOutput();
      expect(await main([...args])).toBe(2);
      expect(io.err()).toMatch(message);
    }
  });

  it('prints no manifests without a target and exits 2', async () => {
    const io = captureOutput();
    expect(await main(['manifests'])).toBe(2);
    expect(io.out()).toBe('');
    expect(io.err()).toMatch(/--stack NAME .* --url URL .* --local/);
  });

  it('answers who holds a cluster IP, a node port, or what a Service holds', async () => {
    const table = `holder-${Date.now()}`;
    const client = dynamoClient({ endpoint: inject('dynamodbEndpoint') });
    await ensureTable(client, table);
    const runtime = createRuntime({ config: parseConfig({}), dynamo: client, tableName: table });
    const object = {
      metadata: { name: 'lobby', namespace: 'games' },
      spec: { type: 'NodePort', clusterIP: '10.100.0.50', ports: [{ port: 80, nodePort: 30050 }] },
    };
    const body = review({
      resource: 'services',
      operation: 'CREATE',
      namespace: 'games',
      name: 'lobby',
      object,
    });
    expect((await admit(parseAdmissionReview(body), runtime.admission)).response.allowed).toBe(
      true,
    );
    const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', table];
    // The Service's CREATE wrote no owner record: with no cluster to ask, a value's holder is
    // given by its allocation id, and the Service's name finds its values.
    for (const query of ['10.100.0.50', '30050']) {
      const io = captureOutput();
      expect(await main(['status', '--holder', query, ...store])).toBe(0);
      expect(io.out()).toMatch(new RegExp(`^${query.replaceAll('.', '\\.')} .* Service \\? `, 'm'));
      expect(io.out()).toMatch(
        new RegExp(
          `\n\n${query.replaceAll('.', '\\.')}: not named: no owner record, and no cluster here to read it from; it is the Service annotated berth.dev/allocation-id=[a-z2-7]{20}; `,
        ),
      );
    }
    const io = captureOutput();
    expect(await main(['status', '--holder', 'games/lobby', '--json', ...store])).toBe(0);
    expect(
      JSON.parse(io.out())
        .map((h: { value: string }) => h.value)
        .sort(),
    ).toEqual(['10.100.0.50', '30050']);
    const none = captureOutput();
    expect(await main(['status', '--holder', '10.100.0.51', ...store])).toBe(0);
    expect(none.out()).toBe('nobody holds 10.100.0.51\n');
  });

  it('refuses (2) a value outside every configured range, naming the ranges, instead of "nobody holds"', async () => {
    const store = [
      '--dynamodb-endpoint',
      inject('dynamodbEndpoint'),
      '--table',
      `holder-out-${Date.now()}`,
    ];
    for (const [value, said] of [
      [
        '10.200.0.1',
        'berth: 10.200.0.1 is outside every configured cluster IP range (serviceCIDRs: 10.100.0.0/16; ',
      ],
      [
        '40000',
        'berth: 40000 is outside every configured port range (nodePortRange 30000-32767, hostPortRanges.default 7000-8000): ',
      ],
      ['99999', 'berth: 99999 is outside every configured port range ('],
      ['lobby', 'berth: "lobby" is not a cluster IP, a port number or NAMESPACE/NAME'],
    ] as const) {
      const io = captureOutput();
      expect(await main(['status', '--holder', value, ...store]), value).toBe(2);
      expect(io.out()).toBe('');
      expect(io.err().trim().split('\n')).toEqual([expect.stringContaining(said)]);
      vi.restoreAllMocks();
    }
    // Inside a range and held by nobody: said so, exit 0.
    const io = captureOutput();
    expect(await main(['status', '--holder', '7001', ...store])).toBe(0);
    expect(io.out()).toBe('nobody holds 7001\n');
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

  it('names a DynamoDB endpoint that does not answer, with the fix, and exits 3', async () => {
    const io = captureOutput();
    expect(await main(['status', '--dynamodb-endpoint', 'http://127.0.0.1:1'])).toBe(3);
    expect(io.err()).toMatch(
      /^berth: DynamoDB at http:\/\/127\.0\.0\.1:1 did not answer \(ECONNREFUSED\): start it, or fix --dynamodb-endpoint/,
    );
  });
});

describe('berth manifests', () => {
  it('prints the webhook configuration for the local server, trusting its CA', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-cli-'));
    const io = captureOutput();
    expect(
      await main(['manifests', '--local', '--json', '--data-dir', dir, '--port', '9443']),
    ).toBe(0);
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

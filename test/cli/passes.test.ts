import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { dynamoClient } from '../../shared/store/client.js';
import { ensureTable } from '../../shared/store/ensure-table.js';
import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { node } from '../scale/builders.js';
import { captureOutput } from '../support/capture.js';

let api: KubeApiServer;
let kubeconfig: string;
const table = `passes-${Date.now()}`;

beforeAll(async () => {
  api = await startKubeApiServer();
  for (const name of ['gs-a', 'gs-b', 'gs-c']) api.addNode(node(name));
  kubeconfig = join(await mkdtemp(join(tmpdir(), 'berth-kube-')), 'config');
  await writeFile(kubeconfig, api.kubeConfig().exportConfig());
});

afterAll(async () => {
  await api.stop();
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

const fail = (): never => {
  throw new Error('no cluster IP range configured');
};
const store = () => ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', table];

describe('berth repair --once', () => {
  it('prints the summary and frees a leaked cluster IP on the third pass', async () => {
    const config = parseConfig({});
    const { client } = { client: dynamoClient({ endpoint: inject('dynamodbEndpoint') }) };
    await ensureTable(client, table);
    // Admitted past the commit window: its Service was refused long enough ago to be a leak.
    const runtime = createRuntime({
      config,
      dynamo: client,
      tableName: table,
      now: () => Date.now() - COMMIT_WINDOW_MS - 1_000,
    });
    const owner = { kind: 'Service' as const, namespace: 'default', name: 'gone' };
    await runtime.allocator.assign('leakedleakedleaked01', owner, [
      {
        slot: 'clusterIP/IPv4',
        range: runtime.ranges.clusterIps[0] ?? fail(),
        value: '10.100.3.3',
      },
    ]);
    const released: number[] = [];
    for (let pass = 1; pass <= 3; pass++) {
      const io = captureOutput();
      const verbose = pass === 2 ? ['--verbose'] : [];
      expect(
        await main(['repair', '--once', '--kubeconfig', kubeconfig, ...verbose, ...store()]),
      ).toBe(0);
      // --verbose shows each suspected leak's countdown.
      if (pass === 2)
        expect(io.err()).toMatch(
          /value#clusterIP#10\.100\.0\.0\/16#\d+ +leakedleakedleaked01 +2 of 3/,
        );
      const summary = JSON.parse(io.out());
      expect(Object.keys(summary).sort()).toEqual([
        'durationMs',
        'findings',
        'recorded',
        'released',
      ]);
      released.push(summary.released);
      vi.restoreAllMocks();
    }
    expect(released).toEqual([0, 0, 1]);
  });

  it('exits non-zero when the cluster cannot be listed', async () => {
    api.failNext({ path: /\/api\/v1\/services/, status: 500, times: 5 });
    const io = captureOutput();
    expect(await main(['repair', '--once', '--kubeconfig', kubeconfig, ...store()])).toBe(1);
    expect(io.err()).toMatch(/could not complete/);
  });

  it('exits 3 when the API server does not answer, as scale does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-kube-'));
    const silent = join(dir, 'kubeconfig');
    // A port nothing listens on: the environment refused.
    await writeFile(
      silent,
      (await readFile(kubeconfig, 'utf8')).replace(/(127\.0\.0\.1):\d+/, '$1:1'),
    );
    const io = captureOutput();
    expect(await main(['repair', '--once', '--kubeconfig', silent, ...store()])).toBe(3);
    expect(io.err()).toMatch(/could not complete/);
    expect(await main(['scale', '--once', '--dry-run', '--kubeconfig', silent, ...store()])).toBe(
      3,
    );
  });
});

describe('berth scale --once', () => {
  it('prints the plan as JSON and changes nothing on a dry run', async () => {
    const io = captureOutput();
    expect(
      await main(['scale', '--once', '--dry-run', '--kubeconfig', kubeconfig, ...store()]),
    ).toBe(0);
    const plan = JSON.parse(io.out());
    expect(plan.dryRun).toBe(true);
    // Three empty 40-slot nodes against a buffer of 10: two are cordoned, one stays (minNodes 1).
    expect(plan.actions.map((a: { type: string }) => a.type)).toEqual(['cordon', 'cordon']);
    expect(plan.actions.every((a: { reason: string }) => a.reason.length > 0)).toBe(true);
    expect([...api.nodes.values()].some((n) => n.spec?.unschedulable)).toBe(false);
  });

  it('cordons for real without --dry-run, recording when', async () => {
    const io = captureOutput();
    expect(await main(['scale', '--once', '--kubeconfig', kubeconfig, ...store()])).toBe(0);
    expect(JSON.parse(io.out()).dryRun).toBe(false);
    const cordoned = [...api.nodes.values()].filter((n) => n.spec?.unschedulable);
    expect(cordoned).toHaveLength(2);
    for (const n of cordoned)
      expect(n.metadata?.annotations?.['berth.dev/cordoned-at']).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('asks for a cluster (exit 3) and for --once (exit 2)', async () => {
    vi.stubEnv('KUBECONFIG', '');
    vi.stubEnv('HOME', await mkdtemp(join(tmpdir(), 'berth-home-')));
    const io = captureOutput();
    // No kubeconfig anywhere kubectl looks: the environment refused, exit 3.
    expect(await main(['scale', '--once', ...store()])).toBe(3);
    expect(io.err()).toMatch(/no kubeconfig found: pass --kubeconfig PATH, set KUBECONFIG/);
    expect(await main(['scale', '--kubeconfig', kubeconfig, ...store()])).toBe(2);
    expect(io.err()).toMatch(/add --once/);
  });
});

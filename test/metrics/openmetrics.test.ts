import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { createHttpApi } from '../../shared/http/api.js';
import {
  OPENMETRICS_CONTENT_TYPE,
  openMetricsText,
  PassRecorder,
} from '../../shared/metrics/openmetrics.js';
import { metricsReading } from '../../shared/metrics/reading.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

/**
 * The text checked against the OpenMetrics grammar as far as berth uses it: each family's TYPE
 * before its samples and declared once, sample names of a declared family (counters end in
 * `_total`), label values quoted, `# EOF` last. Answers each sample's value by its line's name
 * and labels.
 */
function parsed(text: string): Map<string, number> {
  const lines = text.split('\n');
  expect(lines.at(-1)).toBe('');
  expect(lines.at(-2)).toBe('# EOF');
  const types = new Map<string, string>();
  const samples = new Map<string, number>();
  for (const line of lines.slice(0, -2)) {
    const meta = /^# (TYPE|HELP|UNIT) ([a-z_]+) (.+)$/.exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') {
        expect(types.has(meta[2] ?? ''), `${meta[2]} declared twice`).toBe(false);
        types.set(meta[2] ?? '', meta[3] ?? '');
      } else expect(types.has(meta[2] ?? ''), `${line} before its TYPE`).toBe(true);
      continue;
    }
    const sample = /^([a-z_]+)\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)*)\} (-?[0-9.e+]+)$/.exec(line);
    expect(sample, line).not.toBeNull();
    const name = sample?.[1] ?? '';
    const family = types.has(name) ? name : name.replace(/_total$/, '');
    expect(types.get(family), `${name} has no TYPE`).toBeDefined();
    if (types.get(family) === 'counter') expect(name).toMatch(/_total$/);
    samples.set(`${name}{${sample?.[2]}}`, Number(sample?.[3]));
  }
  return samples;
}

describe('openMetricsText', () => {
  it('writes every range, host port spread, pool, the settle backlog and the passes in the OpenMetrics format', () => {
    const passes = new PassRecorder(() => 1_000_000);
    passes.ended('repair', true);
    passes.ended('repair', false);
    const text = openMetricsText(
      [
        {
          status: {
            cluster: 'games',
            ranges: [
              { name: '10.100.0.0/16', kind: 'clusterIP', size: 65534, used: 3 },
              {
                name: 'default',
                kind: 'hostPort',
                size: 1001,
                used: 7,
                minUse: 0,
                maxUse: 1,
                largestFreeBlock: 12,
                heldOutside: 2,
              },
            ],
            pools: [
              {
                node: 'node-"a"',
                instanceId: 'i-1',
                instanceType: 'c5.4xlarge',
                subnetCidr: '10.0.0.0/20',
                draining: false,
                enis: 1,
                capacity: 112,
                assigned: 16,
                idle: 4,
                ready: 3,
                cooling: 1,
                reserved: 0,
              },
            ],
          },
          settle: { releasing: 2, oldestSince: 1_000_000 - 45_000 },
          passes: passes.records(),
        },
      ],
      1_000_000,
    );
    const samples = parsed(text);
    expect(
      samples.get('berth_range_used{cluster="games",kind="clusterIP",range="10.100.0.0/16"}'),
    ).toBe(3);
    expect(samples.get('berth_host_port_use_max{cluster="games",range="default"}')).toBe(1);
    expect(samples.get('berth_host_port_largest_free_block{cluster="games",range="default"}')).toBe(
      12,
    );
    expect(samples.get('berth_host_port_held_outside{cluster="games",range="default"}')).toBe(2);
    expect(samples.get('berth_eni_pool_ready{cluster="games",node="node-\\"a\\""}')).toBe(3);
    expect(samples.get('berth_settle_releasing{cluster="games"}')).toBe(2);
    expect(samples.get('berth_settle_oldest_releasing_age{cluster="games"}')).toBe(45);
    expect(
      samples.get('berth_pass_runs_total{cluster="games",pass="repair",outcome="failed"}'),
    ).toBe(1);
    expect(samples.get('berth_pass_last_run_succeeded{cluster="games",pass="repair"}')).toBe(0);
  });
});

describe('GET /metrics', () => {
  it('counts what admission allocated, behind the path secret when there is one', async () => {
    const { client, tableName } = await freshTable();
    const runtime = createRuntime({ config: parseConfig({}), dynamo: client, tableName });
    const secret = 'a'.repeat(40);
    const api = createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      metrics: async () => openMetricsText([await metricsReading(runtime)], Date.now()),
      pathSecret: secret,
    });
    const body = JSON.stringify(
      review({
        resource: 'services',
        operation: 'CREATE',
        namespace: 'games',
        name: 'lobby',
        object: {
          kind: 'Service',
          metadata: { name: 'lobby', namespace: 'games' },
          spec: { type: 'NodePort', ports: [{ port: 80, protocol: 'TCP' }] },
        },
      }),
    );
    const admitted = await api({ method: 'POST', path: `/admission/${secret}`, body });
    expect(admitted.statusCode).toBe(200);

    expect((await api({ method: 'GET', path: '/metrics', body: undefined })).statusCode).toBe(404);
    const answer = await api({ method: 'GET', path: `/metrics/${secret}`, body: undefined });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe(OPENMETRICS_CONTENT_TYPE);
    const samples = parsed(answer.body);
    expect(
      samples.get('berth_range_used{cluster="local",kind="clusterIP",range="10.100.0.0/16"}'),
    ).toBe(1);
    expect(
      samples.get('berth_range_used{cluster="local",kind="nodePort",range="30000-32767"}'),
    ).toBe(1);
    expect(samples.get('berth_settle_releasing{cluster="local"}')).toBe(0);
  });
});

import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { createHttpApi } from '../../shared/http/api.js';
import {
  EXPOSITION_CONTENT_TYPES,
  expositionFormat,
  type MetricsReading,
  metricFamily,
  metricsText,
  PassRecorder,
} from '../../shared/metrics/openmetrics.js';
import { metricsReading } from '../../shared/metrics/reading.js';
import { freshTable } from '../support/dynamo.js';
import { LOBBY_REVIEW } from './lobby-review.js';

/**
 * The text checked against the OpenMetrics grammar as far as berth uses it: each family's TYPE
 * before its samples and declared once, a UNIT the suffix of its family's name (Prometheus'
 * parser fails the scrape otherwise), sample names of a declared family (counters end in
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
      if (meta[1] === 'UNIT') expect(meta[2]).toMatch(new RegExp(`_${meta[3]}$`));
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

/**
 * The Prometheus text format (0.0.4) as far as berth uses it: HELP then TYPE under the samples'
 * own name, declared once, before them; no UNIT and no `# EOF`. Answers the same map as `parsed`.
 */
function parsedText(text: string): Map<string, number> {
  const lines = text.split('\n');
  expect(lines.at(-1)).toBe('');
  const types = new Map<string, string>();
  const samples = new Map<string, number>();
  for (const line of lines.slice(0, -1)) {
    const meta = /^# (TYPE|HELP) ([a-z_]+) (.+)$/.exec(line);
    expect(line.startsWith('#') && !meta, `${line} is no HELP or TYPE`).toBe(false);
    if (meta) {
      if (meta[1] === 'TYPE') {
        expect(types.has(meta[2] ?? ''), `${meta[2]} declared twice`).toBe(false);
        types.set(meta[2] ?? '', meta[3] ?? '');
      }
      continue;
    }
    const sample = /^([a-z_]+)\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)*)\} (-?[0-9.e+]+)$/.exec(line);
    expect(sample, line).not.toBeNull();
    const name = sample?.[1] ?? '';
    expect(types.get(name), `${name} has no TYPE of its own name`).toBeDefined();
    if (types.get(name) === 'counter') expect(name).toMatch(/_total$/);
    samples.set(`${name}{${sample?.[2]}}`, Number(sample?.[3]));
  }
  return samples;
}

/** A reading with every family: ranges of both kinds, a pool, a settle backlog, passes. */
function fullReading(now: number): MetricsReading {
  const passes = new PassRecorder(() => now);
  passes.ended('repair', true);
  passes.ended('repair', false);
  return {
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
          handout: 'berth',
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
    settle: { releasing: 2, oldestSince: now - 45_000 },
    passes: passes.records(),
    capacity: {
      cluster: 'games',
      stale: true,
      staleBecause: ['eni: never recorded'],
      gameServers: {
        ready: 5,
        readyByFleet: { arena: 4, '': 1 },
        freeSlots: 9,
        pending: 1,
        ageSeconds: 12,
      },
      buffer: { buffer: 10, nodesComing: true, slotsComing: 16, nodes: 3, ageSeconds: 12 },
      hostPorts: {
        ranges: [{ range: 'default', size: 1001, used: 7, free: 2996, largestFreeBlock: 12 }],
        ageSeconds: 90,
      },
      fronts: { kind: 'listeners', total: 50000, free: 49993, ageSeconds: 30 },
      eni: { freeAddresses: 4, pools: 1, ageSeconds: 200 },
    },
  };
}

/** Every sample name in `samples` (keys `name{labels}`). */
const namesOf = (samples: Map<string, number>) =>
  new Set([...samples.keys()].map((key) => key.slice(0, key.indexOf('{'))));

describe('metricsText', () => {
  it('writes every range, host port spread, pool, the settle backlog and the passes in the OpenMetrics format', () => {
    const text = metricsText('openmetrics', [fullReading(1_000_000)], 1_000_000);
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
    expect(samples.get('berth_settle_oldest_releasing_age_seconds{cluster="games"}')).toBe(45);
    expect(text).toContain(
      '# UNIT berth_settle_oldest_releasing_age_seconds seconds\n# HELP berth_settle_oldest_releasing_age_seconds ',
    );
    expect(
      samples.get('berth_pass_runs_total{cluster="games",pass="repair",outcome="failed"}'),
    ).toBe(1);
    expect(samples.get('berth_pass_last_run_age_seconds{cluster="games",pass="repair"}')).toBe(0);
    expect(samples.get('berth_pass_last_run_succeeded{cluster="games",pass="repair"}')).toBe(0);
    expect(samples.get('berth_capacity_ready_game_servers{cluster="games",fleet="arena"}')).toBe(4);
    expect(samples.get('berth_capacity_ready_game_servers{cluster="games",fleet=""}')).toBe(1);
    expect(samples.get('berth_capacity_coming_slots{cluster="games"}')).toBe(16);
    expect(samples.get('berth_capacity_free_host_ports{cluster="games",range="default"}')).toBe(
      2996,
    );
    expect(samples.get('berth_capacity_free_front_slots{cluster="games",kind="listeners"}')).toBe(
      49993,
    );
    expect(samples.get('berth_capacity_stale{cluster="games"}')).toBe(1);
    expect(samples.get('berth_capacity_figures_age_seconds{cluster="games",source="eni"}')).toBe(
      200,
    );
  });

  it('writes the same samples in the Prometheus text format, a counter typed under its _total name', () => {
    const now = 1_000_000;
    const text = metricsText('text', [fullReading(now)], now);
    expect(parsedText(text)).toEqual(parsed(metricsText('openmetrics', [fullReading(now)], now)));
    expect(text).toContain('# TYPE berth_pass_runs_total counter\n');
    expect(text).not.toContain('# TYPE berth_pass_runs counter');
  });

  it('names every family it writes in the runbook, and the runbook no other', async () => {
    const now = 1_000_000;
    const written = namesOf(parsed(metricsText('openmetrics', [fullReading(now)], now)));
    const runbook = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const section = /^## Metrics\n[\s\S]*?(?=\n## )/m.exec(runbook)?.[0] ?? '';
    const named = new Set(section.match(/\bberth_[a-z_]+[a-z]\b/g));
    expect([...named].sort()).toEqual([...written].sort());
  });
});

describe('metricFamily', () => {
  const family = { type: 'gauge', help: 'How long.', samples: [] } as const;

  it('refuses a unit that is not the suffix of the name', () => {
    expect(() => metricFamily({ ...family, name: 'berth_wait_age', unit: 'seconds' })).toThrow(
      'metric family berth_wait_age has the unit seconds, so its name must end in _seconds',
    );
    expect(metricFamily({ ...family, name: 'berth_wait_age_seconds', unit: 'seconds' }).name).toBe(
      'berth_wait_age_seconds',
    );
  });

  it('refuses a name ending in a sample suffix: a counter adds _total itself', () => {
    expect(() => metricFamily({ ...family, type: 'counter', name: 'berth_runs_total' })).toThrow(
      /berth_runs_total ends in a suffix of sample names/,
    );
    expect(() => metricFamily({ ...family, name: 'berth_runs_count' })).toThrow(/_count/);
  });

  it('refuses a name that is not snake_case under berth_, and an empty help', () => {
    for (const name of ['range_used', 'berth:range_used', 'berth_Range', 'berth_range_'])
      expect(() => metricFamily({ ...family, name })).toThrow(`metric family ${name} is not`);
    expect(() => metricFamily({ ...family, name: 'berth_used', help: ' ' })).toThrow(/no help/);
  });
});

describe('expositionFormat', () => {
  it('answers OpenMetrics to the Accept header Prometheus sends, and to any that weighs it first', () => {
    // Prometheus 2.42's header (scrape/scrape.go acceptHeader), as it sent it to a test server.
    expect(
      expositionFormat(
        'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
      ),
    ).toBe('openmetrics');
    expect(expositionFormat('text/plain;q=0.5, Application/OpenMetrics-Text')).toBe('openmetrics');
  });

  it('answers the text format without a header, to text/plain, */*, and OpenMetrics it cannot write', () => {
    for (const accept of [
      undefined,
      '',
      'text/plain',
      'text/plain;version=0.0.4;q=1,*/*;q=0.1',
      '*/*',
      'application/openmetrics-text;version=2.0.0',
      'application/openmetrics-text;q=0',
      'application/openmetrics-text;q=0.2,text/plain;q=0.9',
    ])
      expect(expositionFormat(accept), String(accept)).toBe('text');
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
      metrics: async (format) => metricsText(format, [await metricsReading(runtime)], Date.now()),
      pathSecret: secret,
    });
    const admitted = await api({
      method: 'POST',
      path: `/admission/${secret}`,
      body: LOBBY_REVIEW,
    });
    expect(admitted.statusCode).toBe(200);

    expect((await api({ method: 'GET', path: '/metrics', body: undefined })).statusCode).toBe(404);
    const answer = await api({
      method: 'GET',
      path: `/metrics/${secret}`,
      body: undefined,
      headers: { accept: 'application/openmetrics-text;version=1.0.0,*/*;q=0.1' },
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe(EXPOSITION_CONTENT_TYPES.openmetrics);
    expect(answer.headers.vary).toBe('accept');
    const samples = parsed(answer.body);
    expect(
      samples.get('berth_range_used{cluster="local",kind="clusterIP",range="10.100.0.0/16"}'),
    ).toBe(1);
    expect(
      samples.get('berth_range_used{cluster="local",kind="nodePort",range="30000-32767"}'),
    ).toBe(1);
    expect(samples.get('berth_settle_releasing{cluster="local"}')).toBe(0);

    const plain = await api({ method: 'GET', path: `/metrics/${secret}`, body: undefined });
    expect(plain.headers['content-type']).toBe(EXPOSITION_CONTENT_TYPES.text);
    expect(parsedText(plain.body)).toEqual(samples);
  });
});

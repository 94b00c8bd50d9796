/**
 * Debian's Prometheus (`/usr/bin/prometheus`, `.ci/run` installs it) scrapes a running `berth
 * serve`'s `/metrics` every second and evaluates examples/prometheus/rules.yml against it: the
 * scrape must parse (Prometheus' OpenMetrics parser fails the whole scrape on one bad line), every
 * rule must evaluate, and every family the rules and the runbook name must be there. promtool
 * checks the rules file, and the Prometheus text format berth answers a client that asks for it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadYaml } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type LocalServer, startLocalServer } from '../../shared/app/local-server.js';
import { parseConfig } from '../../shared/config/schema.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { LOBBY_REVIEW } from './lobby-review.js';

const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const RULES = fileURLToPath(new URL('../../examples/prometheus/rules.yml', import.meta.url));
const RUNBOOK = fileURLToPath(new URL('../../docs/operations.md', import.meta.url));
const TOKEN = 'prometheus-scrape-token';
/** A loaded 2-core machine: Prometheus starts in a few seconds, its first scrape follows. */
const WAIT_MS = 60_000;

let home: string;
let fake: KubeApiServer;
let berth: LocalServer;
let prometheus: ChildProcess;
let prometheusUrl: string;
let prometheusOutput = '';

/** A port nothing listens on now (Prometheus takes no port 0). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `look` every half second until it answers something or `WAIT_MS` pass. */
async function until<T>(what: string, look: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const found = await look().catch(() => undefined);
    if (found !== undefined) return found;
    if (Date.now() > deadline) {
      throw new Error(`${what} not within ${WAIT_MS} ms; Prometheus said:\n${prometheusOutput}`);
    }
    await sleep(500);
  }
}

/** One answer of Prometheus' HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/). */
async function api<T>(path: string): Promise<T> {
  const answer = await fetch(`${prometheusUrl}${path}`, { signal: AbortSignal.timeout(10_000) });
  const body = (await answer.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.error}`);
  return body.data;
}

interface Target {
  readonly health: 'up' | 'down' | 'unknown';
  readonly lastError: string;
  readonly labels: Readonly<Record<string, string>>;
}
interface VectorSample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: readonly [number, string];
}
interface RuleGroup {
  readonly rules: readonly {
    readonly name: string;
    readonly health: string;
    readonly lastError?: string;
    readonly lastEvaluation: string;
  }[];
}

const query = (promql: string) =>
  api<{ result: VectorSample[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`);

/** Runs promtool with `input` on its stdin; its exit code and everything it wrote. */
function promtool(args: readonly string[], input?: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      out += String(chunk);
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, out }));
    child.stdin.end(input ?? '');
  });
}

/** Every `berth_…` metric name in `text`. */
const berthNames = (text: string) => new Set(text.match(/\bberth_[a-z_]+[a-z]\b/g) ?? []);

/** The rules file's expressions. */
async function ruleExpressions(): Promise<string[]> {
  const file = loadYaml(await readFile(RULES, 'utf8')) as {
    groups: { rules: { expr: string }[] }[];
  };
  return file.groups.flatMap((group) => group.rules.map((rule) => rule.expr));
}

/** The metric names the runbook's alerting paragraph ("Alert on …") gives. */
async function runbookNames(): Promise<Set<string>> {
  const text = await readFile(RUNBOOK, 'utf8');
  const paragraph = /^Alert on [\s\S]*?(?=\n\n)/m.exec(text)?.[0];
  expect(paragraph, 'docs/operations.md has its "Alert on" paragraph').toBeDefined();
  return berthNames(paragraph ?? '');
}

beforeAll(async () => {
  if (!existsSync(PROMETHEUS) || !existsSync(PROMTOOL)) {
    throw new Error(
      `${PROMETHEUS} and ${PROMTOOL} are missing: apt-get install prometheus (.ci/run does)`,
    );
  }
  home = await mkdtemp(join(tmpdir(), 'berth-prometheus-'));
  // The real `berth serve` (plain HTTP, the run's DynamoDB Local), reading a fake cluster, so
  // no kubeconfig of the machine's is read.
  fake = await startKubeApiServer({ token: TOKEN });
  const kubeconfig = join(home, 'kubeconfig');
  await writeFile(kubeconfig, fake.kubeConfig(TOKEN).exportConfig());
  const config = parseConfig({});
  const quiet = { info() {}, warn() {}, error() {} };
  berth = await startLocalServer(
    {
      config,
      clusters: [config],
      configuredClusters: [config.cluster],
      kubeconfig,
      http: true,
      host: '127.0.0.1',
      port: 0,
      passes: false,
      dataDir: join(home, 'data'),
      dynamodbEndpoint: inject('dynamodbEndpoint'),
      table: `t-${randomUUID()}`,
    },
    quiet,
  );
  // One Service admitted, so the ranges read something.
  const admitted = await fetch(`${berth.url}/admission`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: LOBBY_REVIEW,
  });
  expect(admitted.status).toBe(200);

  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  const configFile = join(home, 'prometheus.yml');
  // Prometheus 2.42 has no `scrape_protocols` (2.49 added it): it always asks for OpenMetrics
  // first and parses by the answer's Content-Type.
  await writeFile(
    configFile,
    JSON.stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [RULES],
      scrape_configs: [
        {
          job_name: 'berth',
          metrics_path: '/metrics',
          static_configs: [{ targets: [new URL(berth.url).host] }],
        },
      ],
    }),
  );
  prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(home, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const heard = (chunk: unknown) => {
    prometheusOutput = `${prometheusOutput}${String(chunk)}`.slice(-20_000);
  };
  prometheus.stdout?.on('data', heard);
  prometheus.stderr?.on('data', heard);
  await until('Prometheus ready', async () => {
    if (prometheus.exitCode !== null) throw new Error(`prometheus exited: ${prometheusOutput}`);
    const ready = await fetch(`${prometheusUrl}/-/ready`, { signal: AbortSignal.timeout(2_000) });
    return ready.ok ? true : undefined;
  });
});

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus.once('exit', resolve));
    prometheus.kill('SIGTERM');
    const killer = setTimeout(() => prometheus.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  }
  await berth?.close();
  await fake?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe('Prometheus scraping berth serve', () => {
  it('scrapes /metrics without an error: up is 1', async () => {
    // The first scrape that ended other than by a slow machine's timeout.
    const target = await until('a scrape of berth', async () => {
      const { activeTargets } = await api<{ activeTargets: Target[] }>('/api/v1/targets');
      const found = activeTargets.find((one) => one.labels.job === 'berth');
      if (!found || found.health === 'unknown') return undefined;
      return found.health === 'up' || !/deadline exceeded/.test(found.lastError)
        ? found
        : undefined;
    });
    expect(target.lastError).toBe('');
    expect(target.health).toBe('up');
    const { result } = await query('up{job="berth"}');
    expect(result.map((sample) => sample.value[1])).toEqual(['1']);
  });

  it('has every family the rules file and the runbook name, and evaluates every rule', async () => {
    const named = new Set([
      ...berthNames((await ruleExpressions()).join('\n')),
      ...(await runbookNames()),
    ]);
    expect(named.size).toBeGreaterThan(0);
    for (const name of named) {
      const { result } = await until(`samples of ${name}`, async () => {
        const answer = await query(name);
        return answer.result.length > 0 ? answer : undefined;
      });
      expect(result[0]?.metric.__name__).toBe(name);
    }
    const groups = await until('every rule evaluated', async () => {
      const { groups } = await api<{ groups: RuleGroup[] }>('/api/v1/rules');
      const rules = groups.flatMap((group) => group.rules);
      return rules.length > 0 && rules.every((rule) => rule.health !== 'unknown')
        ? groups
        : undefined;
    });
    const rules = groups.flatMap((group) => group.rules);
    expect(rules.length).toBe((await ruleExpressions()).length);
    for (const rule of rules) expect([rule.name, rule.lastError ?? '']).toEqual([rule.name, '']);
    expect(rules.map((rule) => rule.health)).toEqual(rules.map(() => 'ok'));
  });

  it('promtool checks the rules file', async () => {
    const { code, out } = await promtool(['check', 'rules', RULES]);
    expect(out).toMatch(/SUCCESS/);
    expect(code).toBe(0);
  });

  it('answers the Prometheus text format to a client that asks for it, which promtool passes', async () => {
    const answer = await fetch(`${berth.url}/metrics`, {
      headers: { accept: 'text/plain;version=0.0.4;q=1,*/*;q=0.1' },
    });
    expect(answer.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await answer.text();
    expect(text).not.toMatch(/# EOF|# UNIT/);
    expect(await promtool(['check', 'metrics'], text)).toEqual({ code: 0, out: '' });
  });
});

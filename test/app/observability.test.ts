import { execFileSync } from 'node:child_process';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import { observability, unavailableRecorder } from '../../shared/app/observability.js';

/** Runs `record` with the process streams captured; what it wrote, line by line. */
function captured(record: () => void): string[] {
  const written: string[] = [];
  // Powertools writes through its own Console on the process streams, not the global console.
  const capture = (chunk: string | Uint8Array) => {
    written.push(...String(chunk).trim().split('\n'));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    record();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return written;
}

describe('observability forCluster', () => {
  it("stamps each invocation's metrics with its cluster and the service, with no warning on a switch", () => {
    const { metrics, forCluster } = observability('test');
    const lines = captured(() => {
      for (const cluster of ['games-a', 'games-b', 'games-b', 'games-a']) {
        forCluster(cluster);
        metrics.addMetric('Done', MetricUnit.Count, 1);
        metrics.publishStoredMetrics();
      }
    });
    // Nothing but the four EMF lines: Powertools warns on an overwritten default dimension.
    expect(lines).toHaveLength(4);
    const stamps = lines.map((line) => {
      const emf = JSON.parse(line) as { service: string; cluster: string; _aws: unknown };
      return `${emf.service} ${emf.cluster}`;
    });
    expect(stamps).toEqual([
      'berth-test games-a',
      'berth-test games-b',
      'berth-test games-b',
      'berth-test games-a',
    ]);
  });
});

describe('observability forCluster, several clusters in one invocation', () => {
  it("flushes one cluster's metrics under its own dimension before the next cluster's", () => {
    const { metrics, forCluster } = observability('test');
    const lines = captured(() => {
      forCluster('games-a');
      metrics.addMetric('Done', MetricUnit.Count, 1);
      forCluster('games-b');
      metrics.addMetric('Done', MetricUnit.Count, 2);
      metrics.publishStoredMetrics();
    });
    const stamps = lines.map((line) => {
      const emf = JSON.parse(line) as { cluster: string; Done: number };
      return `${emf.cluster} ${emf.Done}`;
    });
    expect(stamps).toEqual(['games-a 1', 'games-b 2']);
  });
});

describe('handlerTracing', () => {
  /** Runs `code` in a fresh Node process (the suite's own may have loaded anything). */
  const inFreshProcess = (code: string) =>
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      encoding: 'utf8',
    }).trim();
  const probe = (active: boolean) => `
    import { createRequire } from 'node:module';
    const { handlerTracing } = await import('${process.cwd()}/shared/app/observability.ts');
    const tracing = await handlerTracing('probe', ${active});
    const loaded = Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('cls-hooked'));
    console.log(JSON.stringify({ middlewares: tracing.length, xraySdkLoaded: loaded }));
  `;

  it('loads no tracer for a pass-through function, so no async hook weighs on its promises', () => {
    expect(JSON.parse(inFreshProcess(probe(false)))).toEqual({
      middlewares: 0,
      xraySdkLoaded: false,
    });
  });

  it('traces an active function with Powertools Tracer', () => {
    expect(JSON.parse(inFreshProcess(probe(true)))).toEqual({
      middlewares: 1,
      xraySdkLoaded: true,
    });
  });
});

describe('unavailableRecorder', () => {
  it('logs a 503 for an unreachable table as an error and counts it with InternalErrors, which the alarms watch', () => {
    const { logger, metrics, forCluster } = observability('test');
    const lines = captured(() => {
      forCluster('games');
      unavailableRecorder(
        logger,
        metrics,
      )({ statusCode: 503, message: 'table berth did not answer' });
      metrics.publishStoredMetrics();
    });
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const log = records.find((record) => record.message === 'dependency unavailable');
    expect(log?.level).toBe('ERROR');
    expect(log?.answer).toBe('table berth did not answer');
    const emf = records.find((record) => '_aws' in record);
    expect(emf?.InternalErrors).toBe(1);
  });
});

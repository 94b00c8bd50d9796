import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import { observability } from '../../shared/app/observability.js';

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

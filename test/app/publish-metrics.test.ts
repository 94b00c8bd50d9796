import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { publishMetrics } from '../../shared/app/observability.js';

const context = { functionName: 'berth-test', awsRequestId: 'r-1' } as Context;

/** Runs one invocation of a handler that records `count` metrics; answers what it wrote. */
async function invoke(count: number, fail = false): Promise<string[]> {
  const metrics = new Metrics({ namespace: 'berth', serviceName: 'berth-test' });
  const written: string[] = [];
  // Powertools writes through its own Console on the process streams, not the global console.
  const capture = (chunk: string | Uint8Array) => {
    written.push(String(chunk).trim());
    return true;
  };
  const log = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const warn = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    const handler = middy(async () => {
      for (let i = 0; i < count; i++) metrics.addMetric(`M${i}`, MetricUnit.Count, 1);
      if (fail) throw new Error('boom');
    }).use(publishMetrics(metrics));
    await handler({}, context).catch(() => undefined);
  } finally {
    log.mockRestore();
    warn.mockRestore();
  }
  return written;
}

describe('publishMetrics', () => {
  it('writes nothing for an invocation that recorded no metric', async () => {
    expect(await invoke(0)).toEqual([]);
  });

  it('writes one EMF line with every metric the invocation recorded, also when it failed', async () => {
    for (const fail of [false, true]) {
      const [line, ...rest] = await invoke(2, fail);
      expect(rest).toEqual([]);
      const emf = JSON.parse(line ?? '{}') as { M0?: number; M1?: number; _aws?: unknown };
      expect({ M0: emf.M0, M1: emf.M1, emf: emf._aws !== undefined }).toEqual({
        M0: 1,
        M1: 1,
        emf: true,
      });
    }
  });
});

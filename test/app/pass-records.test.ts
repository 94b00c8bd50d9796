import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import {
  recordCapacity,
  recordRepairPass,
  recordScalePass,
  recordSettle,
} from '../../shared/app/pass-records.js';
import type { ClusterCapacity } from '../../shared/capacity/view.js';
import type { RepairSummary } from '../../shared/repair/pass.js';
import type { ScaleReport } from '../../shared/scale/pass.js';

/** A logger and metrics whose lines and metrics are collected instead of written. */
function observed() {
  const logger = new Logger({ serviceName: 'test' });
  const metrics = new Metrics({ namespace: 'test' });
  const lines: string[] = [];
  const added: [string, number][] = [];
  for (const level of ['info', 'warn', 'error'] as const) {
    vi.spyOn(logger, level).mockImplementation((...args: unknown[]) => {
      lines.push(String(args[0]));
    });
  }
  vi.spyOn(metrics, 'addMetric').mockImplementation((name: string, _unit, value: number) => {
    added.push([name, value]);
    return metrics;
  });
  return { observe: { logger, metrics }, lines, added };
}

describe('what the passes and the settle step record', () => {
  it('records a settle look: freed, held again and its lag in seconds', () => {
    const { observe, lines, added } = observed();
    recordSettle(
      observe,
      { id: 'abcdefghijklmnopqrst', reason: 'release', admittedAt: 0, attempt: 0 },
      { freed: 2, kept: 1 },
      6_000,
    );
    expect(added).toEqual([
      ['SettleFreed', 2],
      ['SettleRefusedKept', 1],
      ['SettleLag', 6],
    ]);
    expect(lines).toEqual(['settled']);
  });

  it('records a repair pass: each finding by reason, the values leaks held, frees and records', () => {
    const { observe, added } = observed();
    const summary = {
      findings: { PortLeaked: 3 },
      released: 3,
      recorded: 1,
      notes: [],
    } as unknown as RepairSummary;
    recordRepairPass(observe, summary, []);
    expect(added).toEqual([
      ['PortLeaked', 3],
      ['LeaksFreed', 3],
      ['Released', 3],
      ['Recorded', 1],
    ]);
  });

  it('records a scale pass: its actions and failures, and a skipped pass as a warning', () => {
    const { observe, lines, added } = observed();
    const report = {
      dryRun: false,
      actions: [{ type: 'cordon' }],
      failures: [],
      notes: [],
      leaseHeldBy: { holder: 'other', expiresAtMs: 1 },
    } as unknown as ScaleReport;
    recordScalePass(observe, report);
    // No failures: no metric for them (CloudWatch bills each hour a metric is published in).
    expect(added).toEqual([['ScaleActions', 1]]);
    expect(lines).toEqual(['scale action', 'skipped: another scale pass holds the lease']);
  });

  it('publishes no count that is zero, and a range’s use only from 80%, logging every range', () => {
    const { observe, lines, added } = observed();
    const singles: [string, number][] = [];
    vi.spyOn(observe.metrics, 'singleMetric').mockImplementation(() => {
      const single = new Metrics({ namespace: 'test' });
      vi.spyOn(single, 'addMetric').mockImplementation((name: string, _unit, value: number) => {
        singles.push([name, value]);
        return single;
      });
      return single;
    });
    const summary = {
      findings: { PortLeaked: 0, ClusterIPLeaked: 0 },
      released: 0,
      recorded: 0,
      notes: [],
    } as unknown as RepairSummary;
    recordRepairPass(observe, summary, [
      { name: '10.100.0.0/16', kind: 'clusterIP', used: 100, size: 1000 },
      { name: '30000-32767', kind: 'nodePort', used: 2400, size: 2768 },
    ]);
    expect(added).toEqual([]);
    expect(singles).toEqual([['RangeUsedPercent', (100 * 2400) / 2768]]);
    expect(lines).toEqual(['range usage', 'range usage']);
    // Two ranges past 80%: one metric, the fullest's use, for the cluster's one range alarm.
    singles.length = 0;
    recordRepairPass(observe, summary, [
      { name: '10.100.0.0/16', kind: 'clusterIP', used: 950, size: 1000 },
      { name: '30000-32767', kind: 'nodePort', used: 2400, size: 2768 },
    ]);
    expect(singles).toEqual([['RangeUsedPercent', 95]]);
    recordScalePass(observe, { dryRun: false, actions: [], failures: [], notes: [] } as never);
    expect(added).toEqual([]);
  });

  it('records a capacity view as a log line, and as metrics when asked: a zero too, each range apart', () => {
    const { observe, lines, added } = observed();
    const ranges: unknown[] = [];
    vi.spyOn(observe.metrics, 'singleMetric').mockImplementation(() => {
      const one = {
        addDimension: (name: string, value: string) => ranges.push([name, value]),
        addMetric: (name: string, _unit: unknown, value: number) => ranges.push([name, value]),
      };
      return one as unknown as Metrics;
    });
    const view: ClusterCapacity = {
      cluster: 'games',
      stale: false,
      staleBecause: [],
      gameServers: { ready: 0, readyByFleet: {}, freeSlots: 3, pending: 0, ageSeconds: 1 },
      buffer: { buffer: 10, nodesComing: false, slotsComing: 0, nodes: 2, ageSeconds: 1 },
      hostPorts: {
        ranges: [{ range: 'game', size: 10, used: 4, free: 16, largestFreeBlock: 6 }],
        ageSeconds: 1,
      },
      eni: { freeAddresses: 7, pools: 2, ageSeconds: 3 },
    };
    recordCapacity(observe, view, false);
    expect(added).toEqual([]);
    expect(lines).toEqual(['capacity']);
    recordCapacity(observe, view, true);
    expect(added).toEqual([
      ['CapacityReadyGameServers', 0],
      ['CapacityFreeSlots', 3],
      ['CapacityBufferSlots', 10],
      ['CapacityComingSlots', 0],
      ['CapacityFreeEniAddresses', 7],
      ['CapacityStale', 0],
    ]);
    expect(ranges).toEqual([
      ['range', 'game'],
      ['CapacityFreeHostPorts', 16],
    ]);
    expect(lines).toEqual(['capacity', 'capacity']);
  });
});

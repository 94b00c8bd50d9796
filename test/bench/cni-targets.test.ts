import { describe, expect, it } from 'vitest';
import {
  AT_ONCE,
  type CniMeasurements,
  judgeCni,
  ONE_AT_A_TIME,
  perKind,
  summarize,
  type TimedRun,
} from '../../bench/cni/targets.js';

/** `n` runs taking 1..n ms times `scale`, all successful. */
const runs = (n: number, scale = 1): TimedRun[] =>
  Array.from({ length: n }, (_, i) => ({ ms: (i + 1) * scale, ok: true }));

/** A run in which every kind takes `scale[kind]` times the floor's time, nothing failing. */
function measured(
  scale: Partial<Record<keyof typeof ONE_AT_A_TIME, number>> = {},
  changes: Partial<CniMeasurements> = {},
): CniMeasurements {
  const one = perKind(ONE_AT_A_TIME, (kind) => runs(100, scale[kind] ?? 1));
  const many = perKind(AT_ONCE, () => runs(10));
  return {
    rounds: 100,
    held: 10,
    concurrency: 8,
    oneAtATime: one,
    atOnce: many,
    concurrentAddresses: { added: 20, distinct: 20, leases: 20, leasesOfTheirContainer: 20 },
    berthRequests: 0,
    leasesLeft: 0,
    ...changes,
  };
}

const verdicts = (m: CniMeasurements) => judgeCni(m).map((t) => t.pass);

describe('the CNI benchmark’s targets', () => {
  it('summarizes p50, p99 and max over every run, failed ones counted', () => {
    const summary = summarize([...runs(99), { ms: 500, ok: false }]);
    expect(summary).toEqual({ runs: 100, failed: 1, p50Ms: 50, p99Ms: 99, maxMs: 500 });
  });

  it('holds berth-cni’s ADD p99 to twice the bare node start’s, measured in the same run', () => {
    expect(verdicts(measured({ add: 2 }))[0]).toBe(true);
    const slow = judgeCni(measured({ add: 2.1 }))[0];
    expect(slow?.pass).toBe(false);
    expect(slow?.line).toContain('berth-cni ADD p99 207.9 ms');
    expect(slow?.line).toContain('2.1× node -e 0 p99 99 ms');
  });

  it('says how many of the ADDs routed the pod through a secondary ENI', () => {
    const m = measured();
    const add = m.oneAtATime.add.map((r, i) => ({ ...r, routed: i % 4 === 0 }));
    const [ratio] = judgeCni({ ...m, oneAtATime: { ...m.oneAtATime, add } });
    expect(ratio?.line).toContain('over 100 runs (25 routed through a secondary ENI)');
  });

  it('fails on any failed berth-cni ADD or DEL, or on a berth call while the set had room', () => {
    expect(verdicts(measured())).toEqual([true, true, true]);
    const failedDel = measured();
    const atOnce = { ...failedDel.atOnce, chainDel: [{ ms: 1, ok: false }] };
    expect(verdicts({ ...failedDel, atOnce })[1]).toBe(false);
    expect(verdicts(measured({}, { berthRequests: 1 }))[1]).toBe(false);
    expect(verdicts(measured({}, { leasesLeft: 1 }))[1]).toBe(false);
  });

  it('fails when two concurrent ADDs got one address or a lease names another container', () => {
    const shared = { added: 20, distinct: 19, leases: 19, leasesOfTheirContainer: 18 };
    expect(verdicts(measured({}, { concurrentAddresses: shared }))[2]).toBe(false);
    const stranger = { added: 20, distinct: 20, leases: 20, leasesOfTheirContainer: 19 };
    expect(verdicts(measured({}, { concurrentAddresses: stranger }))[2]).toBe(false);
  });
});

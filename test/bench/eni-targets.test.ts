import { describe, expect, it } from 'vitest';
import type { EniRunResult } from '../../bench/eni/ledger.js';
import { type DayRuns, IDLE_REFERENCE, judgeEni } from '../../bench/eni/targets.js';

function run(name: string, over: Partial<EniRunResult> = {}): EniRunResult {
  return {
    name,
    settings: {},
    mutatingCalls: 1000,
    callsByAction: {},
    peakCallsPerSecond: 1,
    peakMutatingCallsPerSecond: 1,
    throttledCalls: 0,
    idleIps: { average: 100, peak: 200 },
    waitingPods: 0,
    waitSeconds: 0,
    longestWaitSeconds: 0,
    budgetViolations: 0,
    fragmentationWaits: { pods: 0, longestSeconds: 0 },
    podsPerNode: {},
    ...over,
  };
}

const peers = [
  run('vpc-cni WARM_ENI_TARGET=1', { mutatingCalls: 5000, waitingPods: 3 }),
  run(IDLE_REFERENCE, {
    mutatingCalls: 4000,
    waitingPods: 2,
    idleIps: { average: 700, peak: 900 },
  }),
  run('cilium', { mutatingCalls: 6000, waitingPods: 5 }),
];

function verdicts(berth: Partial<EniRunResult>, fragmentedBerth: Partial<EniRunResult> = {}) {
  const clean: DayRuns = { berth: run('berth', berth), peers };
  const fragmented: DayRuns = { berth: run('berth', fragmentedBerth), peers };
  return Object.fromEntries(
    judgeEni(clean, fragmented).map((v) => [v.target.split(' ').slice(0, 3).join(' '), v.pass]),
  );
}

describe('ENI benchmark targets', () => {
  it('passes berth at half the best peer’s calls, its waits, the reference’s idle and no violation', () => {
    const all = verdicts({
      mutatingCalls: 2000,
      waitingPods: 2,
      idleIps: { average: 700, peak: 1 },
    });
    expect(Object.values(all)).toEqual([true, true, true, true, true]);
  });

  it('judges calls against the peer with the fewest, not the first or the default', () => {
    expect(verdicts({ mutatingCalls: 2001 })['mutating EC2 calls']).toBe(false);
    expect(verdicts({ mutatingCalls: 2000 })['mutating EC2 calls']).toBe(true);
  });

  it('judges waits against the peer with the fewest waiting pods', () => {
    expect(verdicts({ waitingPods: 3 })['no more pods']).toBe(false);
  });

  it('judges idle addresses against the VPC CNI prefix run', () => {
    expect(verdicts({ idleIps: { average: 701, peak: 1 } })['no more idle']).toBe(false);
  });

  it('fails a budget violation on either day', () => {
    expect(verdicts({}, { budgetViolations: 1 })["within berth's EC2"]).toBe(false);
    expect(verdicts({ budgetViolations: 1 })["within berth's EC2"]).toBe(false);
  });

  it('fails a wait over 5 s on the fragmented day only when fragmentation caused it', () => {
    expect(
      verdicts({}, { fragmentationWaits: { pods: 1, longestSeconds: 5.1 } })['on the fragmented'],
    ).toBe(false);
    expect(
      verdicts({}, { longestWaitSeconds: 60, fragmentationWaits: { pods: 1, longestSeconds: 1 } })[
        'on the fragmented'
      ],
    ).toBe(true);
  });

  it('refuses to judge without the reference run', () => {
    const clean: DayRuns = { berth: run('berth'), peers: [run('cilium')] };
    expect(() => judgeEni(clean, clean)).toThrow(IDLE_REFERENCE);
  });
});

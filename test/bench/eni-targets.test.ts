import { describe, expect, it } from 'vitest';
import type { EniRunResult } from '../../bench/eni/ledger.js';
import { IDLE_REFERENCE, type JudgedDay, judgeEni } from '../../bench/eni/targets.js';

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
    steadyState: { waitingPods: 0, longestWaitSeconds: 0, mutatingCalls: 0 },
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

/** Fragmented-day peers: one keeps none waiting at 9000 calls, one waits at 3000. */
const fragmentedPeers = [
  run('vpc-cni WARM_ENI_TARGET=1', { mutatingCalls: 9000, waitingPods: 0 }),
  run(IDLE_REFERENCE, { mutatingCalls: 3000, waitingPods: 400 }),
];

function verdicts(
  berth: Partial<EniRunResult>,
  fragmentedBerth: Partial<EniRunResult> = {},
  reservedBerth?: Partial<EniRunResult>,
): Record<string, boolean> {
  const days: JudgedDay[] = [
    { day: 'clean', fragmented: false, berth: run('berth', berth), peers },
    {
      day: 'fragmented-80',
      fragmented: true,
      berth: run('berth', fragmentedBerth),
      peers: fragmentedPeers,
      ...(reservedBerth
        ? {
            reserved: {
              berth: run('berth reserved', reservedBerth),
              peers: [run('vpc-cni reserved', { mutatingCalls: 2500, waitingPods: 0 })],
            },
          }
        : {}),
    },
  ];
  return Object.fromEntries(judgeEni(days).map((v) => [v.target, v.pass]));
}

const key = (all: Record<string, boolean>, start: string) =>
  all[Object.keys(all).find((k) => k.startsWith(start)) ?? ''];

describe('ENI benchmark targets', () => {
  it('passes berth at half the best peer’s calls, its waits, the reference’s idle and no violation', () => {
    const all = verdicts(
      { mutatingCalls: 2000, waitingPods: 2, idleIps: { average: 700, peak: 1 } },
      { mutatingCalls: 9000 },
    );
    expect(Object.values(all).every(Boolean)).toBe(true);
    expect(Object.keys(all)).toHaveLength(7);
  });

  it('judges clean-day calls against the peer with the fewest, not the first or the default', () => {
    expect(key(verdicts({ mutatingCalls: 2001 }), 'clean day: mutating')).toBe(false);
    expect(key(verdicts({ mutatingCalls: 2000 }), 'clean day: mutating')).toBe(true);
  });

  it('judges clean-day waits against the peer with the fewest waiting pods', () => {
    expect(key(verdicts({ waitingPods: 3 }), 'clean day: no more pods')).toBe(false);
  });

  it('judges idle addresses against the VPC CNI prefix run', () => {
    expect(key(verdicts({ idleIps: { average: 701, peak: 1 } }), 'clean day: no more idle')).toBe(
      false,
    );
  });

  it('fails a fragmented day with more pods waiting than any peer', () => {
    const all = verdicts({}, { waitingPods: 1 });
    expect(key(all, 'fragmented-80 day: no more pods')).toBe(false);
  });

  it('judges fragmented-day calls against the cheapest peer that keeps as few waiting', () => {
    // The 3000-call peer kept 400 waiting: only the 9000-call peer is a rival at 0 waits.
    expect(key(verdicts({}, { mutatingCalls: 9000 }), 'fragmented-80 day: no more mutating')).toBe(
      true,
    );
    expect(key(verdicts({}, { mutatingCalls: 9001 }), 'fragmented-80 day: no more mutating')).toBe(
      false,
    );
    // With 400 waiting, the 3000-call peer is a rival too.
    expect(
      key(
        verdicts({}, { mutatingCalls: 3001, waitingPods: 400 }),
        'fragmented-80 day: no more mutating',
      ),
    ).toBe(false);
  });

  it('judges the reserved subnets against the peers that ran on them', () => {
    const pass = verdicts({}, { mutatingCalls: 100 }, { mutatingCalls: 2500 });
    const fail = verdicts({}, { mutatingCalls: 100 }, { mutatingCalls: 2501 });
    expect(key(pass, 'fragmented-80 day, prefix reservation: no more mutating')).toBe(true);
    expect(key(fail, 'fragmented-80 day, prefix reservation: no more mutating')).toBe(false);
  });

  it('fails a budget violation on any day', () => {
    expect(key(verdicts({}, { budgetViolations: 1 }), "within berth's EC2")).toBe(false);
    expect(key(verdicts({ budgetViolations: 1 }), "within berth's EC2")).toBe(false);
    expect(key(verdicts({}, {}, { budgetViolations: 1 }), "within berth's EC2")).toBe(false);
  });

  it('fails a wait over 5 s on a fragmented day only when fragmentation caused it', () => {
    expect(
      key(
        verdicts({}, { fragmentationWaits: { pods: 1, longestSeconds: 5.1 } }),
        'fragmented-80 day: no pod waits',
      ),
    ).toBe(false);
    expect(
      key(
        verdicts(
          {},
          { longestWaitSeconds: 60, fragmentationWaits: { pods: 1, longestSeconds: 1 } },
        ),
        'fragmented-80 day: no pod waits',
      ),
    ).toBe(true);
  });

  it('refuses to judge without the reference run or a clean day', () => {
    const clean: JudgedDay = {
      day: 'clean',
      fragmented: false,
      berth: run('berth'),
      peers: [run('cilium')],
    };
    expect(() => judgeEni([clean])).toThrow(IDLE_REFERENCE);
    expect(() => judgeEni([{ ...clean, fragmented: true }])).toThrow('clean');
  });
});

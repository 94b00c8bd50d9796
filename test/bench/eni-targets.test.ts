import { describe, expect, it } from 'vitest';
import type { EniRunResult } from '../../bench/eni/ledger.js';
import { CLEAN_DAY, type JudgedDay, judgeEni } from '../../bench/eni/targets.js';

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

/** Two swept VPC CNI runs and a peer outside the sweep. */
const sweep = [
  run('vpc-cni prefix WARM_IP_TARGET=2', {
    mutatingCalls: 1000,
    waitingPods: 3,
    idleIps: { average: 5000, peak: 9000 },
  }),
  run('vpc-cni prefix WARM_IP_TARGET=16', {
    mutatingCalls: 1200,
    waitingPods: 0,
    idleIps: { average: 6000, peak: 9000 },
  }),
];
const peers = [...sweep, run('cilium', { mutatingCalls: 600, waitingPods: 5 })];

/** berth on the clean day meeting every clean-day target: 600 calls, 0 waiting, 5000 idle. */
const cleanBerth: Partial<EniRunResult> = {
  mutatingCalls: 600,
  waitingPods: 0,
  idleIps: { average: 5000, peak: 1 },
};

/** Fragmented-day peers: one keeps none waiting at 9000 calls, one waits at 3000. */
const fragmentedPeers = [
  run('vpc-cni WARM_ENI_TARGET=1', { mutatingCalls: 9000, waitingPods: 0 }),
  run('vpc-cni prefix WARM_PREFIX_TARGET=1', { mutatingCalls: 3000, waitingPods: 400 }),
];

function verdicts(
  berth: Partial<EniRunResult>,
  fragmentedBerth: Partial<EniRunResult> = {},
  reservedBerth?: Partial<EniRunResult>,
): Record<string, boolean> {
  const days: JudgedDay[] = [
    {
      day: 'clean',
      fragmented: false,
      berth: run('berth', { ...cleanBerth, ...berth }),
      peers,
      swept: sweep.map((r) => r.name),
    },
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
  it('passes berth within the clean-day bounds, under every swept run and no violation', () => {
    const all = verdicts({}, { mutatingCalls: 9000 });
    expect(Object.values(all).every(Boolean)).toBe(true);
    expect(Object.keys(all)).toHaveLength(6);
  });

  it('bounds the clean day: calls, waits, budget and idle addresses each', () => {
    const clean = (over: Partial<EniRunResult>) => key(verdicts(over), 'Clean day:');
    expect(clean({ mutatingCalls: CLEAN_DAY.mutatingCalls })).toBe(true);
    expect(clean({ mutatingCalls: CLEAN_DAY.mutatingCalls + 1 })).toBe(false);
    expect(clean({ waitingPods: 1 })).toBe(false);
    expect(clean({ budgetViolations: 1 })).toBe(false);
    expect(clean({ idleIps: { average: CLEAN_DAY.idleAverage, peak: 1 } })).toBe(true);
    expect(clean({ idleIps: { average: CLEAN_DAY.idleAverage + 1, peak: 1 } })).toBe(false);
  });

  it('judges every swept run: 0.6 x its calls, no more idle, no more waiting', () => {
    const every = (over: Partial<EniRunResult>) => key(verdicts(over), 'Every VPC CNI run');
    // 0.6 x the cheapest swept run's 1000; cilium's 600 is outside the sweep.
    expect(every({ mutatingCalls: 600 })).toBe(true);
    expect(every({ mutatingCalls: 601 })).toBe(false);
    // The WARM_IP_TARGET=2 run holds 5000 idle and keeps 3 waiting, the other 0.
    expect(every({ idleIps: { average: 5001, peak: 1 } })).toBe(false);
    expect(every({ waitingPods: 1 })).toBe(false);
  });

  it('names the worst swept run: the most checks failed, then the highest share of its calls', () => {
    const line = (over: Partial<EniRunResult>) =>
      judgeEni([
        {
          day: 'clean',
          fragmented: false,
          berth: run('berth', { ...cleanBerth, ...over }),
          peers,
          swept: sweep.map((r) => r.name),
        },
      ]).find((v) => v.target.startsWith('Every VPC CNI run'))?.line;
    expect(line({})).toContain('2 of 2 swept runs met');
    expect(line({})).toContain('worst vpc-cni prefix WARM_IP_TARGET=2:');
    // One pod waiting fails only the run that kept none waiting.
    expect(line({ waitingPods: 1 })).toContain('worst vpc-cni prefix WARM_IP_TARGET=16:');
    expect(line({ waitingPods: 1 })).toContain('1 of 2 swept runs met');
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

  it('refuses to judge without swept runs or a clean day', () => {
    const clean: JudgedDay = {
      day: 'clean',
      fragmented: false,
      berth: run('berth'),
      peers: [run('cilium')],
    };
    expect(() => judgeEni([clean])).toThrow('swept');
    expect(() => judgeEni([{ ...clean, fragmented: true }])).toThrow('clean');
  });
});

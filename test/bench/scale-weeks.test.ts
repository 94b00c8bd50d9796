import { describe, expect, it } from 'vitest';
import { type DayOutcome, HOUR, MINUTE } from '../../bench/scale/day.js';
import { nodeHourFloors } from '../../bench/scale/floor.js';
import { beatsOverWeeks, judgeTunedDay, judgeWeeks } from '../../bench/scale/targets.js';
import { smallestPlacing, tuningWindow, weeksRuns } from '../../bench/scale/tuned-weeks.js';
import {
  DAY,
  parseTrace,
  TraceError,
  traceDurationMs,
  WEEK,
  WEEKS_WORKLOAD,
  weeksArrivals,
  weeksRate,
  weeksScenario,
} from '../../bench/scale/weeks.js';

describe('the weeks workload', () => {
  const sc = weeksScenario('weeks', 7, 2 * WEEK);
  const arrivals = weeksArrivals(sc);

  it('follows the day, the weekday, growth, the tournament and the patch day', () => {
    const monday5 = 5 * HOUR;
    const monday17 = 17 * HOUR;
    expect(weeksRate(monday17)).toBeGreaterThan(5 * weeksRate(monday5));
    // Saturday above Monday, week 2 above week 1, at the same hour.
    expect(weeksRate(5 * DAY + monday17)).toBeGreaterThan(weeksRate(monday17));
    expect(weeksRate(WEEK + monday17)).toBeCloseTo(weeksRate(monday17) * 1.05, 6);
    // The tournament's ten minutes at 20:00.
    expect(weeksRate(20 * HOUR + MINUTE)).toBeGreaterThan(weeksRate(20 * HOUR - MINUTE) + 5);
    // Wednesday's patch: a lull from 09:00, then the rush back.
    const wednesday = 2 * DAY;
    expect(weeksRate(wednesday + 10 * HOUR)).toBeLessThan(weeksRate(10 * HOUR) / 5);
    expect(weeksRate(wednesday + 11.5 * HOUR)).toBeGreaterThan(2 * weeksRate(11.5 * HOUR));
  });

  it('draws the same sessions for a seed, sorted, with heavy-tailed lengths in bounds', () => {
    expect(weeksArrivals(sc)).toEqual(arrivals);
    expect(weeksArrivals(weeksScenario('weeks', 8, 2 * WEEK))).not.toEqual(arrivals);
    const times = arrivals.map((a) => a.atMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const lengths = arrivals.map((a) => a.sessionMs).sort((a, b) => a - b);
    const { minMs, maxMs, medianMs } = WEEKS_WORKLOAD.sessions;
    expect(lengths[0]).toBeGreaterThanOrEqual(minMs);
    expect(lengths.at(-1)).toBeLessThanOrEqual(maxMs);
    const median = lengths[Math.floor(lengths.length / 2)] ?? 0;
    expect(Math.abs(median - medianMs)).toBeLessThan(MINUTE);
    // A heavy tail: the p99 session is more than twice the median.
    expect(lengths[Math.floor(lengths.length * 0.99)]).toBeGreaterThan(2 * median);
  });

  it('tunes on the first week, or the first day of a shorter run', () => {
    const week = tuningWindow(sc, arrivals);
    expect(week.sc.durationMs).toBe(WEEK);
    expect(week.arrivals.every((a) => a.atMs < WEEK)).toBe(true);
    const short = weeksScenario('trace', 0, 3 * DAY);
    expect(tuningWindow(short, arrivals).sc.durationMs).toBe(DAY);
  });
});

describe('parseTrace', () => {
  it('reads the rows into sessions in arrival order, with CRLF and blank lines', () => {
    const trace = parseTrace(
      'arrival_seconds,session_seconds\r\n60,900\r\n0.5,300\r\n\r\n',
      'day.csv',
    );
    expect(trace).toEqual([
      { atMs: 500, sessionMs: 300_000 },
      { atMs: 60_000, sessionMs: 900_000 },
    ]);
    expect(traceDurationMs(trace)).toBe(DAY);
    expect(traceDurationMs([{ atMs: DAY, sessionMs: 1 }])).toBe(2 * DAY);
  });

  it.each([
    [
      'arrival,session\n0,1',
      /line 1: the header is "arrival,session"; .*arrival_seconds,session_seconds/,
    ],
    ['arrival_seconds,session_seconds\n0,60,1', /line 2: "0,60,1" has 3 fields/],
    [
      'arrival_seconds,session_seconds\n-1,60',
      /line 2: arrival_seconds "-1" is not a number of seconds/,
    ],
    ['arrival_seconds,session_seconds\n2419200,60', /four weeks/],
    [
      'arrival_seconds,session_seconds\n0,0',
      /line 2: session_seconds "0" is not a positive number/,
    ],
    ['arrival_seconds,session_seconds\n0,x', /session_seconds "x"/],
    ['arrival_seconds,session_seconds\n', /no sessions after the header/],
  ])('refuses %j naming the row, the field and the fix', (text, message) => {
    expect(() => parseTrace(text, 'bad.csv')).toThrow(TraceError);
    expect(() => parseTrace(text, 'bad.csv')).toThrow(message);
  });
});

describe('smallestPlacing', () => {
  it('finds the fewest placeholders that place every game, by bisection', async () => {
    const tried: number[] = [];
    const found = await smallestPlacing(async (count) => {
      tried.push(count);
      return count >= 37;
    }, 200);
    expect(found).toEqual({ count: 37, met: true });
    expect(tried.length).toBeLessThanOrEqual(10);
    expect(await smallestPlacing(async () => true, 200)).toEqual({ count: 0, met: true });
    expect(await smallestPlacing(async () => false, 200)).toEqual({ count: 200, met: false });
  });
});

describe('the weeks targets', () => {
  const run = (nodeHours: number, waitingPods = 0, interruptedGames = 0) =>
    ({ nodeHours, waitingPods, interruptedGames }) as DayOutcome;
  const sc = weeksScenario('weeks', 7, DAY);
  const floors = nodeHourFloors(sc, weeksArrivals(sc));

  it('beats a peer at 0.9 x its node-hours, or with at most half its waits at no more', () => {
    expect(beatsOverWeeks(run(90), run(100), 0.9)).toBe(true);
    expect(beatsOverWeeks(run(91), run(100), 0.9)).toBe(false);
    expect(beatsOverWeeks(run(100, 5), run(100, 10), 0.9)).toBe(true);
    expect(beatsOverWeeks(run(100, 6), run(100, 10), 0.9)).toBe(false);
    expect(beatsOverWeeks(run(101, 0), run(100, 10), 0.9)).toBe(false);
    // Both at no waits: only the node-hours count.
    expect(beatsOverWeeks(run(95), run(100), 0.9)).toBe(false);
  });

  it('judges every peer, the clairvoyant schedule and interruptions', () => {
    const at = (times: number) => Math.round(floors.clairvoyant * times * 100) / 100;
    const good = judgeWeeks({
      name: 'w',
      berth: run(at(1.1)),
      peers: { ca: run(at(1.3)), karpenter: run(at(1.25)) },
      floors,
    });
    expect(good.map((t) => t.pass)).toEqual([true, true, true]);
    const bad = judgeWeeks({
      name: 'w',
      berth: run(at(1.2), 0, 1),
      peers: { ca: run(at(1.3)), karpenter: run(at(1.25)) },
      floors,
    });
    expect(bad.map((t) => t.pass)).toEqual([false, false, false]);
    expect(bad[0]?.line).toContain('not beaten: ca, karpenter');
  });
});

describe('a recorded trace', () => {
  it('runs end to end as the weeks run: cold, tuned on its first day, judged', async () => {
    const rows = Array.from({ length: 400 }, (_, i) => `${i * 200},${600 + (i % 7) * 300}`);
    const text = ['arrival_seconds,session_seconds', ...rows].join('\n');
    const [run, ...more] = await weeksRuns({
      path: '/tmp/studio-day.csv',
      arrivals: parseTrace(text, 'studio-day.csv'),
    });
    expect(more).toHaveLength(0);
    expect(run?.name).toBe('trace studio-day.csv');
    expect(run?.days).toBe(1);
    expect(run?.sessions).toBe(400);
    expect(run?.tuned.length).toBeGreaterThan(1);
    expect(Object.keys(run?.peers ?? {})).toContain('paddle-soccer');
    if (!run) throw new Error('no run');
    expect(judgeWeeks(run).map((t) => t.target)).toEqual([
      expect.stringContaining('trace studio-day.csv: against every peer tuned'),
      expect.stringContaining('clairvoyant'),
      expect.stringContaining('no game interrupted'),
    ]);
  }, 60_000);
});

describe('the single day against peers tuned for it', () => {
  const run = (nodeHours: number, waitingPods = 0) => ({ nodeHours, waitingPods }) as DayOutcome;
  const tuned = (name: string, tuning: DayOutcome) => ({ name, placeholders: 15, tuning });

  it('passes at no more node-hours and waits than every tuned setting, naming the cheapest', () => {
    const good = judgeTunedDay(run(100), [tuned('ca', run(104)), tuned('karpenter', run(101))]);
    expect(good.pass).toBe(true);
    expect(good.line).toContain('the cheapest karpenter+ph-15 101 node-hours');
    const bad = judgeTunedDay(run(102), [tuned('ca', run(104)), tuned('karpenter', run(101))]);
    expect(bad.pass).toBe(false);
    expect(bad.line).toContain('berth worse than karpenter+ph-15');
    expect(judgeTunedDay(run(90, 1), [tuned('ca', run(104))]).pass).toBe(false);
  });
});

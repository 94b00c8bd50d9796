import { describe, expect, it } from 'vitest';
import { type BerthOnDay, runDay } from '../../bench/eni/berth.js';
import type { DaySubnets } from '../../bench/eni/day.js';
import { type NodeSpec, type PodEvent, START } from '../../bench/eni/workload.js';
import { CLUSTERS, splitDay } from '../../bench/multicluster.js';
import { VirtualClock } from '../../bench/support/virtual-time.js';

describe('the multi-cluster day', () => {
  it('deals the nodes round-robin to three clusters, each pod event following its node', () => {
    const nodes = Array.from({ length: 7 }, (_, i) => ({ name: `n${i}` }) as NodeSpec);
    const events: PodEvent[] = [
      { at: 1, kind: 'arrive', node: 4, pod: 'p1' },
      { at: 2, kind: 'arrive', node: 0, pod: 'p2' },
      { at: 3, kind: 'depart', node: 4, pod: 'p1' },
    ];
    const split = splitDay(nodes, events);
    expect(split.map((d) => d.cluster)).toEqual([...CLUSTERS]);
    expect(split.map((d) => d.nodes.map((n) => n.name))).toEqual([
      ['n0', 'n3', 'n6'],
      ['n1', 'n4'],
      ['n2', 'n5'],
    ]);
    // n4 is games-b's second node.
    expect(split[1]?.events).toEqual([
      { at: 1, kind: 'arrive', node: 1, pod: 'p1' },
      { at: 3, kind: 'depart', node: 1, pod: 'p1' },
    ]);
    expect(split[0]?.events).toEqual([{ at: 2, kind: 'arrive', node: 0, pod: 'p2' }]);
  });
});

describe('the day of an account with several clusters', () => {
  it("runs every cluster's work at its own time, none held back by another's sleeping", async () => {
    const clock = new VirtualClock(START);
    const log: string[] = [];
    /** A cluster whose work of second 0 starts at `atMs` and sleeps `sleepMs`. */
    const cluster = (name: string, atMs: number, sleepMs: number): BerthOnDay => ({
      start: (second) => {
        if (second !== 0) return;
        void clock.at(START + atMs, async () => {
          log.push(`${name} starts at ${clock.now() - START}`);
          await clock.sleep(sleepMs);
          log.push(`${name} done at ${clock.now() - START}`);
        });
      },
      result: () => {
        throw new Error('not needed');
      },
    });
    const subnets = { advance: () => {} } as unknown as DaySubnets;
    // games-a waits 5 s for budget tokens: games-b and games-c run meanwhile, at their times.
    await runDay(
      { clock, subnets },
      [cluster('a', 100, 5_000), cluster('b', 200, 0), cluster('c', 900, 50)],
      10,
    );
    expect(log).toEqual([
      'a starts at 100',
      'b starts at 200',
      'b done at 200',
      'c starts at 900',
      'c done at 950',
      'a done at 5100',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import type { NodeSpec, PodEvent } from '../../bench/eni/workload.js';
import { CLUSTERS, splitDay } from '../../bench/multicluster.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import { DEFAULT_EC2_BUDGET } from '../../shared/ec2/rate-budget.js';

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

describe('InProcessSharedBudget', () => {
  it('is one bucket for every cluster, shared fairly once contended', async () => {
    const clock = { now: 0 };
    const specs = { ...DEFAULT_EC2_BUDGET, interfaces: { capacity: 10, refillPerSecond: 1 } };
    const budget = new InProcessSharedBudget(() => clock.now, specs);
    const [a, b] = [budget.for('a'), budget.for('b')];
    let drained = 0;
    while ((await a.take('interfaces')).granted) drained++;
    expect(drained).toBe(10);
    expect((await b.take('interfaces')).granted).toBe(false);
    const got = { a: 0, b: 0 };
    for (let tick = 0; tick < 600; tick++) {
      clock.now += 100;
      if ((await a.take('interfaces')).granted) got.a++;
      if ((await b.take('interfaces')).granted) got.b++;
    }
    expect(got.a + got.b).toBeLessThanOrEqual(61);
    expect(got.b).toBeGreaterThanOrEqual(25);
  });
});

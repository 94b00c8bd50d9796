import { describe, expect, it } from 'vitest';
import { type BerthOnDay, runSecond } from '../../bench/eni/berth.js';
import { type NodeSpec, type PodEvent, START } from '../../bench/eni/workload.js';
import { CLUSTERS, splitDay } from '../../bench/multicluster.js';

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

describe('one second of an account with several clusters', () => {
  /** A cluster whose work is due at `dueMs` (ms into the second), recording what ran in `log`. */
  function cluster(name: string, dueMs: number[], log: string[]): BerthOnDay {
    const due = dueMs.map((ms) => START + ms);
    return {
      open: async () => {
        log.push(`${name} open`);
      },
      nextAt: () => due[0] ?? Number.POSITIVE_INFINITY,
      runNext: async () => {
        log.push(`${name} ${(due.shift() ?? 0) - START}`);
      },
      close: async () => {
        log.push(`${name} close`);
      },
      result: () => {
        throw new Error('not needed');
      },
    };
  }

  it("runs every cluster's work in time order, not one cluster's second after another's", async () => {
    const log: string[] = [];
    // games-c's work is due at the second's very end: the next second runs it.
    await runSecond(
      [cluster('a', [100, 900], log), cluster('b', [50, 500], log), cluster('c', [1000], log)],
      0,
    );
    expect(log).toEqual([
      'a open',
      'b open',
      'c open',
      'b 50',
      'a 100',
      'b 500',
      'a 900',
      'a close',
      'b close',
      'c close',
    ]);
  });
});
